package gen

import (
	"github.com/dave/jennifer/jen"

	"github.com/loadergen/loadergen/schema"
)

// keyAugment renders the fields of a volume key's spec literal that turned
// crops and value augmentations add, leaving out those that are zero:
//
//	Linear: true, // only when crops are turned
//	Values: []volume.ValueOp{{
//		Kind:  volume.Contrast,
//		Range: [2]float64{0.8, 1.2},
//	}, {
//		Kind: volume.Noise,
//		Std:  0.05,
//	}},
func (g *emitter) keyAugment(k emitKey) []field {
	sk := g.schemaKey(k.Name)
	var fields []field
	if g.ds.Crops != nil && g.ds.Crops.Rotate != nil && sk.Linear {
		fields = append(fields, field{"Linear", jen.True()})
	}
	if len(sk.Values) == 0 {
		return fields
	}
	ops := make([]jen.Code, len(sk.Values))
	for i, op := range sk.Values {
		of := []field{{"Kind", jen.Qual(volumePath, constName("", op.Kind))}} // volume.Noise, ...
		if op.Range != [2]float64{} {
			of = append(of, field{"Range", jen.Index(jen.Lit(2)).Float64().Values(jen.Lit(op.Range[0]), jen.Lit(op.Range[1]))})
		}
		for _, t := range []field{{"Mean", floatValue(op.Mean)}, {"Std", floatValue(op.Std)}, {"Threshold", floatValue(op.Threshold)}} {
			if t.value != nil {
				of = append(of, t)
			}
		}
		ops[i] = literal(of...)
	}
	return append(fields, field{"Values", jen.Index().Qual(volumePath, "ValueOp").Values(ops...)})
}

// cropsAugment renders the fields of the volume spec literal that turned
// crops and class balance add, leaving out those that are zero:
//
//	Rotate: []volume.Rotation{{
//		Plane: [2]int{1, 2},
//		Min:   -180,
//		Max:   180,
//	}},
//	Balance: true,
func (g *emitter) cropsAugment(c *schema.Crops) []field {
	var fields []field
	if c.Rotate != nil {
		turns := make([]jen.Code, len(c.Rotate))
		for i, r := range c.Rotate {
			tf := []field{{"Plane", jen.Index(jen.Lit(2)).Int().Values(jen.Lit(r.Plane[0]), jen.Lit(r.Plane[1]))}}
			for _, t := range []field{{"Min", floatValue(r.Min)}, {"Max", floatValue(r.Max)}} {
				if t.value != nil {
					tf = append(tf, t)
				}
			}
			turns[i] = literal(tf...)
		}
		fields = append(fields, field{"Rotate", jen.Index().Qual(volumePath, "Rotation").Values(turns...)})
	}
	if c.Balance {
		fields = append(fields, field{"Balance", jen.True()})
	}
	return fields
}
