package gen

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/volume/volumespec"
	"github.com/loadergen/loadergen/schema"
)

const (
	volumePath = "github.com/loadergen/loadergen/runtime/volume"
	zarrPath   = "github.com/loadergen/loadergen/runtime/zarr"
)

// volumes renders the volume source of a schema whose keys read zarr
// arrays (docs/VOLUMES.md): its spec, the Volume row, the manifest reader,
// and Open<Name>Volumes with its methods.
func (g *emitter) volumes(f *jen.File) {
	g.volumeSpec(f)
	g.volumeType(f)
	g.loadVolumes(f)
	w := g.volumesWrapper()
	w.typeDecl(f)
	g.openVolumes(f, w)
	w.methodDecls(f)
}

// volumeSpec renders
//
//	var cellMapVolumeSpec = volume.Spec{
//		Keys: []volume.Key{{
//			Name:  "raw",
//			Path:  "em/fibsem-uint8",
//			DType: runtime.Uint8,
//			Shape: []int{128, 128, 128},
//			Scale: []float64{8, 8, 8},
//		}, {
//			Name:       "labels",
//			...
//			Fill:       math.NaN(),
//			ClassAxis:  true,
//			Missing:    volume.MissingError, // missing: error
//			ArrayDType: runtime.Uint8,
//		}},
//		Classes:    []string{"mito", "er"},
//		PerEpoch:   1000,
//		Pad:        true,
//		Align:      volume.AlignNearest,
//		Foreground: &volume.Foreground{Key: 1, Fraction: 0.33},
//		Mirror:     []float64{0.1, 0.5, 0.5},
//		Transpose:  []int{1, 2},
//		Rot90:      []int{1, 2},
//		Seed:       cellMapPlan.Loader.Seed,
//	}
//
// leaving out the fields that are zero, and ArrayDType when it is DType. A
// key with normalize has Normalize: &zarr.Affine{Div: 255, Mul: 2, Add: -1}.
// Turned crops, value augmentations and class balance add the fields
// keyAugment and cropsAugment render.
func (g *emitter) volumeSpec(f *jen.File) {
	keys := make([]jen.Code, len(g.keys))
	for i, k := range g.keys {
		fields := []field{
			{"Name", jen.Lit(k.Name)},
			{"Path", jen.Lit(k.zarr)},
			{"DType", g.rtConst(k.DType)},
			{"Shape", ints(k.spatial)},
		}
		if k.scale != nil {
			fields = append(fields, field{"Scale", floats(k.scale)})
		}
		if fill := floatValue(k.fill); fill != nil {
			fields = append(fields, field{"Fill", fill})
		}
		if k.classAxis {
			fields = append(fields, field{"ClassAxis", jen.True()})
		}
		if k.missing == volumespec.MissingError {
			fields = append(fields, field{"Missing", jen.Qual(volumePath, "MissingError")})
		}
		if k.arrayDType != k.DType {
			fields = append(fields, field{"ArrayDType", g.rtConst(k.arrayDType)})
		}
		if m := k.normalize; m != nil {
			var terms []field
			for _, t := range []field{{"Sub", floatValue(m.Sub)}, {"Div", floatValue(m.Div)}, {"Mul", floatValue(m.Mul)}, {"Add", floatValue(m.Add)}} {
				if t.value != nil {
					terms = append(terms, t)
				}
			}
			fields = append(fields, field{"Normalize", jen.Op("&").Qual(zarrPath, "Affine").Add(literal(terms...))})
		}
		keys[i] = literal(append(fields, g.keyAugment(k)...)...)
	}
	c := g.ds.Crops
	fields := []field{{"Keys", jen.Index().Qual(volumePath, "Key").Values(keys...)}}
	if g.hasClassAxis() {
		classes := make([]jen.Code, len(g.ds.Classes))
		for i, name := range g.ds.Classes {
			classes[i] = jen.Lit(name)
		}
		fields = append(fields, field{"Classes", jen.Index().String().Values(classes...)})
	}
	if c == nil { // tiles only: no crops
		c = &schema.Crops{}
	} else {
		fields = append(fields, field{"PerEpoch", jen.Lit(c.PerEpoch)})
	}
	if c.Pad {
		fields = append(fields, field{"Pad", jen.True()})
	}
	if c.Align != volumespec.AlignExact {
		fields = append(fields, field{"Align", jen.Qual(volumePath, constName("Align", c.Align))})
	}
	if fg := c.Foreground; fg != nil {
		key := slices.IndexFunc(g.keys, func(k emitKey) bool { return k.Name == fg.Key }) // the schema checked it is there
		fields = append(fields, field{"Foreground", jen.Op("&").Qual(volumePath, "Foreground").Values(
			jen.Id("Key").Op(":").Lit(key), jen.Id("Fraction").Op(":").Lit(fg.Fraction))})
	}
	if c.Mirror != nil {
		fields = append(fields, field{"Mirror", floats(c.Mirror)})
	}
	if c.Transpose != nil {
		fields = append(fields, field{"Transpose", ints(c.Transpose)})
	}
	if c.Rot90 != nil {
		fields = append(fields, field{"Rot90", ints(c.Rot90)})
	}
	fields = append(fields, g.cropsAugment(c)...)
	fields = append(fields, field{"Seed", jen.Id(g.n.unexported("Plan")).Dot("Loader").Dot("Seed")})
	name := g.n.unexported("VolumeSpec")
	f.Commentf("%s is what the schema says of %s's volumes.", name, g.ds.Name)
	f.Var().Id(name).Op("=").Qual(volumePath, "Spec").Add(literal(fields...))
}

// floatValue renders a float64 field of the spec (a key's Fill, the terms
// of its Normalize) as floatLit renders a float64, keeping its bits (-0
// and NaN included), or returns nil for +0, the field's zero.
func floatValue(v float64) jen.Code {
	if v == 0 && !math.Signbit(v) {
		return nil
	}
	code, _ := floatLit(runtime.Float64, v)
	return code
}

// hasClassAxis reports whether some key reads one array per class.
func (g *emitter) hasClassAxis() bool {
	for _, k := range g.keys {
		if k.classAxis {
			return true
		}
	}
	return false
}

// volumeType renders
//
//	type CellMapVolume struct {
//		Raw    string  // root holding key "raw"'s array em/fibsem-uint8
//		Labels string  // root holding key "labels"'s array labels/{class}
//		Weight float64 // relative sampling weight; 0 means 1
//	}
func (g *emitter) volumeType(f *jen.File) {
	fields := make([]jen.Code, 0, len(g.keys)+1)
	for _, k := range g.keys {
		fields = append(fields, jen.Id(k.Go).String().Commentf("root holding key %q's array %s", k.Name, k.zarr))
	}
	weight := "relative sampling weight; 0 means 1"
	if g.ds.Crops.Balance {
		weight = "0 (or 1): crops.balance picks the volumes"
	}
	fields = append(fields, jen.Id(schema.VolumeWeight).Float64().Comment(weight))
	name := g.n.exported("Volume")
	f.Commentf("%s is one dataset of %s: the directory holding each key's zarr", name, g.ds.Name)
	f.Comment("hierarchy (one root for all keys is common) and its sampling weight.")
	f.Type().Id(name).Struct(fields...)
}

// loadVolumes renders
//
//	func LoadCellMapVolumes(manifest string) ([]CellMapVolume, error) {
//		rows, err := volume.LoadManifest(manifest, cellMapVolumeSpec)
//		if err != nil {
//			return nil, fmt.Errorf("cellmap: %w", err)
//		}
//		vols := make([]CellMapVolume, len(rows))
//		for i, r := range rows {
//			vols[i] = CellMapVolume{
//				Raw:    r.Roots[0],
//				Labels: r.Roots[1],
//				Weight: r.Weight,
//			}
//		}
//		return vols, nil
//	}
func (g *emitter) loadVolumes(f *jen.File) {
	name := g.n.exported("Volume")
	row := make([]field, 0, len(g.keys)+1)
	for i, k := range g.keys {
		row = append(row, field{k.Go, jen.Id("r").Dot("Roots").Index(jen.Lit(i))})
	}
	row = append(row, field{schema.VolumeWeight, jen.Id("r").Dot("Weight")})
	keys := make([]string, len(g.keys))
	for i, k := range g.keys {
		keys[i] = k.Name
	}
	f.Commentf("Load%ss reads a CSV manifest: a header naming a column per key (%s)", name, strings.Join(keys, ", "))
	f.Commentf("and optionally %q, then a row per volume. Relative roots are", volumespec.WeightColumn)
	f.Comment("relative to the manifest's directory.")
	f.Func().Id("Load"+name+"s").Params(jen.Id("manifest").String()).Params(jen.Index().Id(name), jen.Error()).Block(
		jen.List(jen.Id("rows"), jen.Err()).Op(":=").Qual(volumePath, "LoadManifest").Call(jen.Id("manifest"), jen.Id(g.n.unexported("VolumeSpec"))),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit(g.errPrefix()+"%w"), jen.Err()))),
		jen.Id("vols").Op(":=").Make(jen.Index().Id(name), jen.Len(jen.Id("rows"))),
		jen.For(jen.List(jen.Id("i"), jen.Id("r")).Op(":=").Range().Id("rows")).Block(
			jen.Id("vols").Index(jen.Id("i")).Op("=").Id(name).Add(literal(row...)),
		),
		jen.Return(jen.Id("vols"), jen.Nil()),
	)
}

// volumesWrapper is the volume source type: CellMapVolumes, which holds a
// volume.Source, and its methods: Len, Read, Crop, LocalityKeys,
// MissingChunks, ReadAhead and Close, such as
//
//	func (v *CellMapVolumes) Read(s *CellMapSample) error {
//		return v.src.Read(s.Ctx, s.Rand, s.Epoch, s.Index, runtime.Bytes(s.Raw), runtime.Bytes(s.Labels))
//	}
func (g *emitter) volumesWrapper() wrapper {
	name := g.n.exported("Volumes")
	read := []string{
		"Read draws sample s's volume, centre and augmentation from s.Rand and",
		"copies every key's box into s, augmented as it is copied; remote reads",
		"stop once s.Ctx is done.",
	}
	if g.ds.Crops.Balance {
		read = append(read, "The volume is the one crops.balance picks for s.Index in s.Epoch.")
	}
	return wrapper{name: name, recv: "v", pkg: volumePath,
		doc: []string{
			fmt.Sprintf("%s cuts samples out of zarr volumes: random crops at one physical place", name),
			fmt.Sprintf("in every key, augmented alike. It implements %s.", g.n.exported("Source")),
		},
		methods: []forward{
			{name: "Len", doc: []string{"Len returns the samples in an epoch, the schema's crops.per_epoch."}, results: jen.Int()},
			{name: "Read", doc: read, params: []jen.Code{jen.Id("s").Op("*").Id(g.n.exported("Sample"))}, results: jen.Error(),
				args: g.readArgs(jen.Id("s").Dot("Ctx"), jen.Id("s").Dot("Rand"), jen.Id("s").Dot("Epoch"), jen.Id("s").Dot("Index"))},
			{name: "Crop", doc: []string{
				"Crop returns where sample index of epoch comes from: the volume, each",
				"key's box origin at its level, and the augmentation; the same draws Read",
				"makes, whatever the number of workers or ranks.",
			}, params: []jen.Code{jen.List(jen.Id("epoch"), jen.Id("index")).Int()}, results: g.rt("Crop"), args: []jen.Code{jen.Id("epoch"), jen.Id("index")}},
			{name: "LocalityKeys", doc: []string{
				"LocalityKeys writes into keys[k] where sample indices[k] of epoch reads: its",
				"volume and the chunk its box starts in. The loader sorts crops by these keys",
				"within windows of batches (crops.locality), so that crops sharing chunks run",
				"close together and find them in the cache; what each sample is stays the same.",
			}, params: []jen.Code{jen.Id("epoch").Int(), jen.Id("indices").Index().Int(), jen.Id("keys").Index().Uint64()},
				args: []jen.Code{jen.Id("epoch"), jen.Id("indices"), jen.Id("keys")}},
			{name: "MissingChunks", doc: []string{
				"MissingChunks returns how many chunks the source's reads found not stored",
				"(read as the fill value under a key's missing: fill, refused under missing:",
				"error), once per read whose box touches one. The loader reports it in",
				"Stats.MissingChunks.",
			}, results: jen.Int64()},
			{name: "ReadAhead", doc: []string{
				"ReadAhead announces the chunks the crops of samples indices of epoch will",
				"read: the chunk cache keeps them, evicting first what no announced read",
				"needs, and volumes on S3 or a web server start reading them. The loader",
				"calls it for the batches after the ones being filled.",
			}, params: []jen.Code{jen.Id("epoch").Int(), jen.Id("indices").Index().Int()}, args: []jen.Code{jen.Id("epoch"), jen.Id("indices")}},
			{name: "Close", doc: []string{"Close releases the source."}, results: jen.Error()},
		},
	}
}

// openVolumes renders
//
//	func OpenCellMapVolumes(vols []CellMapVolume) (*CellMapVolumes, error) {
//		rows := make([]volume.Volume, len(vols))
//		for i, v := range vols {
//			rows[i] = volume.Volume{Roots: []string{v.Raw, v.Labels}, Weight: v.Weight}
//		}
//		src, err := volume.Open(cellMapVolumeSpec, rows, slog.Default())
//		if err != nil {
//			return nil, fmt.Errorf("cellmap: OpenCellMapVolumes: %w", err)
//		}
//		return &CellMapVolumes{src: src}, nil
//	}
func (g *emitter) openVolumes(f *jen.File, w wrapper) {
	roots := make([]jen.Code, len(g.keys))
	for i, k := range g.keys {
		roots[i] = jen.Id("v").Dot(k.Go)
	}
	f.Commentf("Open%s opens every key's array in every volume and checks it: it exists", w.name)
	holds := "dtype"
	if slices.ContainsFunc(g.keys, func(k emitKey) bool { return k.arrayDType != k.DType }) {
		holds = "array_dtype"
	}
	f.Commentf("(a missing class is filled), holds the key's %s, has the level the key's", holds)
	f.Comment("scale names, and lies so that the keys' boxes share a centre on whole")
	f.Comment("voxels; a volume holds a whole crop unless crops.pad. It logs what it")
	f.Comment("opened with slog's default logger.")
	body := []jen.Code{
		jen.Id("rows").Op(":=").Make(jen.Index().Qual(volumePath, "Volume"), jen.Len(jen.Id("vols"))),
		jen.For(jen.List(jen.Id("i"), jen.Id("v")).Op(":=").Range().Id("vols")).Block(
			jen.Id("rows").Index(jen.Id("i")).Op("=").Qual(volumePath, "Volume").Values(
				jen.Id("Roots").Op(":").Index().String().Values(roots...), jen.Id("Weight").Op(":").Id("v").Dot(schema.VolumeWeight)),
		),
	}
	f.Func().Id("Open"+w.name).Params(jen.Id("vols").Index().Id(g.n.exported("Volume"))).Params(jen.Op("*").Id(w.name), jen.Error()).Block(
		append(body, w.opened(g.errPrefix(), jen.Id(g.n.unexported("VolumeSpec")), jen.Id("rows"))...)...)
}

// readArgs returns the arguments of a volume source's Read of sample s:
// first, then every key's bytes, runtime.Bytes(s.Raw).
func (g *emitter) readArgs(first ...jen.Code) []jen.Code {
	for _, k := range g.keys {
		first = append(first, g.rt("Bytes").Call(jen.Id("s").Dot(k.Go)))
	}
	return first
}

// floats renders []float64{8, 8, 8}.
func floats(v []float64) *jen.Statement {
	vals := make([]jen.Code, len(v))
	for i, x := range v {
		vals[i] = jen.Lit(x)
	}
	return jen.Index().Float64().Values(vals...)
}
