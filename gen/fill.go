package gen

import (
	"github.com/dave/jennifer/jen"
)

// fill renders
//
//	func (l *CellMapLoader) fill(r *loaderimpl.Run) error {
//		b, s := &l.batches[r.Slot], &l.samples[r.Filler].V
//		s.Epoch, s.Ctx = r.Epoch, r.Ctx
//		seed := loaderimpl.EpochSeed(cellMapPlan.Loader.Seed, r.Epoch)
//		for ; r.Done < len(r.Indices); r.Done++ {
//			pos := r.Pos + r.Done
//			s.Index = r.Indices[r.Done]
//			loaderimpl.SeedSample(&s.pcg, seed, s.Index)
//			s.Raw = b.raw[pos*cellMapRawElems:][:cellMapRawElems]
//			s.Labels = b.labels[pos*cellMapLabelsElems:][:cellMapLabelsElems]
//			if err := l.src.Read(s); err != nil {
//				return err
//			}
//		}
//		return nil
//	}
func (g *emitter) fill(f *jen.File) {
	loop := []jen.Code{
		jen.Id("pos").Op(":=").Id("r").Dot("Pos").Op("+").Id("r").Dot("Done"),
		jen.Id("s").Dot("Index").Op("=").Id("r").Dot("Indices").Index(jen.Id("r").Dot("Done")),
		g.impl("SeedSample").Call(jen.Op("&").Id("s").Dot("pcg"), jen.Id("seed"), jen.Id("s").Dot("Index")),
	}
	for _, k := range g.keys {
		slot := jen.Id("b").Dot(k.view).Index(jen.Id("pos").Op("*").Id(k.elems), jen.Empty())
		switch {
		case k.Ragged:
			loop = append(loop, jen.Id("s").Dot(k.Go).Op("=").Add(slot).Index(jen.Empty(), jen.Lit(0), jen.Id(k.elems)))
		case k.LengthsOf == "":
			loop = append(loop, jen.Id("s").Dot(k.Go).Op("=").Add(slot).Index(jen.Empty(), jen.Id(k.elems)))
		}
	}
	loop = append(loop, jen.If(jen.Err().Op(":=").Id("l").Dot("src").Dot("Read").Call(jen.Id("s")), jen.Err().Op("!=").Nil()).Block(
		jen.Return(jen.Err()),
	))
	loop = append(loop, g.padRows()...)
	f.Comment("fill reads the samples of run r through the source, each into its place")
	f.Comment("in the staging slot; r.Done tells the runtime which sample failed.")
	f.Func().Params(jen.Id("l").Op("*").Id(g.n.exported("Loader"))).Id("fill").Params(jen.Id("r").Op("*").Add(g.impl("Run"))).Error().Block(
		jen.List(jen.Id("b"), jen.Id("s")).Op(":=").List(
			jen.Op("&").Id("l").Dot("batches").Index(jen.Id("r").Dot("Slot")),
			jen.Op("&").Id("l").Dot("samples").Index(jen.Id("r").Dot("Filler")).Dot("V"),
		),
		jen.List(jen.Id("s").Dot("Epoch"), jen.Id("s").Dot("Ctx")).Op("=").List(jen.Id("r").Dot("Epoch"), jen.Id("r").Dot("Ctx")),
		jen.Id("seed").Op(":=").Add(g.epochSeed(jen.Id("r").Dot("Epoch"))),
		jen.For(jen.Empty(), jen.Id("r").Dot("Done").Op("<").Len(jen.Id("r").Dot("Indices")), jen.Id("r").Dot("Done").Op("++")).Block(loop...),
		jen.Return(jen.Nil()),
	)
}

// fillSamples renders
//
//	func (l *CellMapLoader) fillSamples(r *loaderimpl.Run) error {
//		b, s, n := &l.batches[r.Slot], &l.runs[r.Filler].V, len(r.Indices)
//		s.Epoch, s.Indices, s.Ctx = r.Epoch, r.Indices, r.Ctx
//		s.Raw = b.raw[r.Pos*cellMapRawElems:][:n*cellMapRawElems]
//		s.Labels = b.labels[r.Pos*cellMapLabelsElems:][:n*cellMapLabelsElems]
//		done, err := l.many.ReadSamples(s)
//		... an error when done != n without one ...
//		r.Done = done // on an error, the sample that failed
//		return err
//	}
func (g *emitter) fillSamples(f *jen.File) {
	body := []jen.Code{
		jen.List(jen.Id("b"), jen.Id("s"), jen.Id("n")).Op(":=").List(
			jen.Op("&").Id("l").Dot("batches").Index(jen.Id("r").Dot("Slot")),
			jen.Op("&").Id("l").Dot("runs").Index(jen.Id("r").Dot("Filler")).Dot("V"),
			jen.Len(jen.Id("r").Dot("Indices")),
		),
		jen.List(jen.Id("s").Dot("Epoch"), jen.Id("s").Dot("Indices"), jen.Id("s").Dot("Ctx")).Op("=").List(jen.Id("r").Dot("Epoch"), jen.Id("r").Dot("Indices"), jen.Id("r").Dot("Ctx")),
	}
	for _, k := range g.keys {
		body = append(body, jen.Id("s").Dot(k.Go).Op("=").Id("b").Dot(k.view).
			Index(jen.Id("r").Dot("Pos").Op("*").Id(k.elems), jen.Empty()).Index(jen.Empty(), jen.Id("n").Op("*").Id(k.elems)))
	}
	body = append(body,
		jen.List(jen.Id("done"), jen.Err()).Op(":=").Id("l").Dot("many").Dot("ReadSamples").Call(jen.Id("s")),
		jen.If(jen.Err().Op("==").Nil().Op("&&").Id("done").Op("!=").Id("n")).Block(
			jen.Err().Op("=").Qual("fmt", "Errorf").Call(jen.Lit(g.errPrefix()+"ReadSamples filled %d of %d samples and returned no error"), jen.Id("done"), jen.Id("n")),
		),
	)
	if ragged := g.raggedKeys(); len(ragged) > 0 {
		pads := make([]jen.Code, len(ragged))
		for i, k := range ragged {
			pads[i] = g.padSamples(k)
		}
		body = append(body, jen.If(jen.Err().Op("==").Nil()).Block(pads...))
	}
	body = append(body,
		jen.Id("r").Dot("Done").Op("=").Id("done").Comment("on an error, the sample that failed"),
		jen.Return(jen.Err()),
	)
	f.Comment("fillSamples fills run r with one ReadSamples call, the key slices of the")
	f.Comment("run's samples pointing at their places in the staging slot.")
	f.Func().Params(jen.Id("l").Op("*").Id(g.n.exported("Loader"))).Id("fillSamples").Params(jen.Id("r").Op("*").Add(g.impl("Run"))).Error().Block(body...)
}
