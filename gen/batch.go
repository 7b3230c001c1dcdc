package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// batch renders
//
//	type CellMapBatch struct {
//		Indices []int          // dataset indices of the samples, in batch order
//		Raw     runtime.Tensor // key "raw": uint8, shape [n 64 64 64]
//		Labels  runtime.Tensor // key "labels": float32, shape [n 3 64 64 64]
//
//		staged *runtime.Batch // the runtime's batch in the same slot
//		raw    []uint8        // typed view of the whole staging slot
//		labels []float32      // typed view of the whole staging slot
//	}
func (g *emitter) batch(f *jen.File) {
	fields := []jen.Code{jen.Id("Indices").Index().Int().Comment("dataset indices of the samples, in batch order")}
	for _, k := range g.keys {
		shape := append([]any{"n"}, intsAny(k.Shape)...)
		comment := fmt.Sprintf("key %q: %s, shape %v", k.Name, k.DType, shape)
		switch {
		case k.Ragged:
			comment += fmt.Sprintf(", each sample padded to %d rows", k.Shape[0])
		case k.LengthsOf != "":
			comment = fmt.Sprintf("rows of each sample of key %q: int32, shape [n]", k.LengthsOf)
		}
		fields = append(fields, jen.Id(k.Go).Add(g.rt("Tensor")).Comment(comment))
	}
	fields = append(fields, jen.Line(), jen.Id("staged").Op("*").Add(g.rt("Batch")).Comment("the runtime's batch in the same slot"))
	for _, k := range g.keys {
		fields = append(fields, jen.Id(k.view).Index().Add(k.elemType()).Comment("typed view of the whole staging slot"))
	}
	name := g.n.exported("Batch")
	f.Commentf("%s is one staged batch; n = len(Indices) is %s except for", name, g.n.exported("BatchSize"))
	f.Comment("a short last batch. It is valid until the loop advances, and then reused:")
	f.Comment("keep a Clone to hold on to one.")
	f.Type().Id(name).Struct(fields...)
}

// staged renders
//
//	func (b *CellMapBatch) Staged() *runtime.Batch {
//		return b.staged
//	}
func (g *emitter) staged(f *jen.File) {
	f.Comment("Staged returns the runtime's view of the batch. In builds with -tags cuda")
	f.Comment("its Wait, Sync and Done order the batch's device copies with your CUDA")
	f.Comment("streams, and each Tensor's Device field holds the device address.")
	f.Func().Params(jen.Id("b").Op("*").Id(g.n.exported("Batch"))).Id("Staged").Params().Op("*").Add(g.rt("Batch")).Block(
		jen.Return(jen.Id("b").Dot("staged")),
	)
}

// dataMethods renders, per key,
//
//	func (b *CellMapBatch) RawData() []uint8 {
//		return b.raw[:len(b.Indices)*cellMapRawElems]
//	}
func (g *emitter) dataMethods(f *jen.File) {
	for _, k := range g.keys {
		if k.LengthsOf != "" {
			f.Commentf("%sData returns the row count of each sample of key %q.", k.Go, k.LengthsOf)
		} else {
			f.Commentf("%sData returns the staged samples of key %q as %s values.", k.Go, k.Name, k.DType.GoType())
		}
		f.Func().Params(jen.Id("b").Op("*").Id(g.n.exported("Batch"))).Id(k.Go + "Data").Params().Index().Add(k.elemType()).Block(
			jen.Return(jen.Id("b").Dot(k.view).Index(jen.Empty(), jen.Len(jen.Id("b").Dot("Indices")).Op("*").Id(k.elems))),
		)
	}
}

// clone renders
//
//	func (b *CellMapBatch) Clone() *CellMapBatch {
//		c := &CellMapBatch{Indices: slices.Clone(b.Indices)}
//		c.Raw, c.raw = loaderimpl.CloneTensor[uint8](b.Raw)
//		c.Labels, c.labels = loaderimpl.CloneTensor[float32](b.Labels)
//		return c
//	}
func (g *emitter) clone(f *jen.File) {
	name := g.n.exported("Batch")
	body := []jen.Code{jen.Id("c").Op(":=").Op("&").Id(name).Values(jen.Id("Indices").Op(":").Qual("slices", "Clone").Call(jen.Id("b").Dot("Indices")))}
	for _, k := range g.keys {
		body = append(body, jen.List(jen.Id("c").Dot(k.Go), jen.Id("c").Dot(k.view)).Op("=").Add(g.impl("CloneTensor")).Types(k.elemType()).Call(jen.Id("b").Dot(k.Go)))
	}
	body = append(body, jen.Return(jen.Id("c")))
	f.Comment("Clone returns a copy of the batch in memory of its own. A loop reuses its")
	f.Comment("batches: the pointer it yields comes back later holding other samples, and")
	f.Comment("the data is overwritten once the loop advances. To keep a batch (in a list,")
	f.Comment("across iterations), keep its Clone. A clone lives on the host only: its")
	f.Comment("tensors' Device is 0 and its Staged is nil.")
	f.Func().Params(jen.Id("b").Op("*").Id(name)).Id("Clone").Params().Op("*").Id(name).Block(body...)
}
