package gen

import (
	"github.com/dave/jennifer/jen"

	"github.com/loadergen/loadergen/runtime"
)

// loaderType renders
//
//	type CellMapLoader struct {
//		src     CellMapSource
//		many    CellMapSamplesReader // src, when it fills runs of samples at once; else nil
//		engine  *loaderimpl.Engine
//		batches []CellMapBatch                // one per place in the staging ring
//		samples []loaderimpl.Padded[CellMapSample]  // one per filler, for Read; nil with many
//		runs    []loaderimpl.Padded[CellMapSamples] // one per filler, for ReadSamples; nil without
//	}
func (g *emitter) loaderType(f *jen.File) {
	name := g.n.exported("Loader")
	f.Commentf("%s streams batches of %s, read through %s, into preallocated", name, g.ds.Name, g.n.exported("Source"))
	f.Comment("staging slots, filled ahead of the consumer by a pool of workers.")
	f.Type().Id(name).Struct(
		jen.Id("src").Id(g.n.exported("Source")),
		jen.Id("many").Id(g.n.exported("SamplesReader")).Comment("src, when it fills runs of samples at once; else nil"),
		jen.Id("engine").Op("*").Add(g.impl("Engine")),
		jen.Id("batches").Index().Id(g.n.exported("Batch")).Comment("one per place in the staging ring"),
		jen.Id("samples").Index().Add(g.impl("Padded")).Types(jen.Id(g.n.exported("Sample"))).Comment("one per filler, for Read; nil with many"),
		jen.Id("runs").Index().Add(g.impl("Padded")).Types(jen.Id(g.n.exported("Samples"))).Comment("one per filler, for ReadSamples; nil without"),
	)
}

// newLoader renders
//
//	func NewCellMapLoader(src CellMapSource, opts runtime.Options) (*CellMapLoader, error) {
//		... l := &CellMapLoader{src: src}; fill := l.fill, or l.fillSamples when src is a CellMapSamplesReader ...
//		e, err := loaderimpl.NewEngine(cellMapPlan, src.Len(), opts, fill)
//		... l.engine = e; each batch's typed views of its slot (slotViews); the source's ReadAhead, if it has one; each filler's Sample or Samples and its Rand ...
//		return l, nil
//	}
func (g *emitter) newLoader(f *jen.File) {
	name := g.n.exported("Loader")
	errf := func(msg string) *jen.Statement { return jen.Lit(g.errPrefix() + "New" + name + ": " + msg) }
	body := []jen.Code{
		jen.If(jen.Id("src").Op("==").Nil()).Block(
			jen.Return(jen.Nil(), jen.Qual("errors", "New").Call(errf("nil source"))),
		),
		jen.Id("l").Op(":=").Op("&").Id(name).Values(jen.Dict{jen.Id("src"): jen.Id("src")}),
		jen.Id("fill").Op(":=").Id("l").Dot("fill"),
		g.pickFill(),
		g.startEngine(),
		jen.If(jen.Err().Op("!=").Nil()).Block(
			jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(errf("%w"), jen.Err())),
		),
		jen.Id("l").Dot("engine").Op("=").Id("e"),
		g.countMissing(),
		jen.Id("l").Dot("batches").Op("=").Make(jen.Index().Id(g.n.exported("Batch")), jen.Id("e").Dot("MaxSlots").Call()),
		jen.Id("e").Dot("OnSlot").Call(jen.Func().Params(jen.Id("s").Int()).Block(g.slotViews()...)),
		jen.If(jen.List(jen.Id("ra"), jen.Id("ok")).Op(":=").Id("src").Assert(g.rt("ReadAheader")), jen.Id("ok")).Block(
			jen.Id("e").Dot("ReadAhead").Call(jen.Id("ra").Dot("ReadAhead")),
		),
		jen.If(jen.Id("l").Dot("many").Op("!=").Nil()).Block(
			jen.Id("l").Dot("runs").Op("=").Make(jen.Index().Add(g.impl("Padded")).Types(jen.Id(g.n.exported("Samples"))), jen.Id("e").Dot("Fillers").Call()),
			jen.For(jen.Id("w").Op(":=").Range().Id("l").Dot("runs")).Block(
				jen.Id("r").Op(":=").Op("&").Id("l").Dot("runs").Index(jen.Id("w")).Dot("V"),
				jen.Id("r").Dot("rand").Op("=").Qual(randPath, "New").Call(jen.Op("&").Id("r").Dot("pcg")),
			),
		).Else().Block(
			jen.Id("l").Dot("samples").Op("=").Make(jen.Index().Add(g.impl("Padded")).Types(jen.Id(g.n.exported("Sample"))), jen.Id("e").Dot("Fillers").Call()),
			jen.For(jen.Id("w").Op(":=").Range().Id("l").Dot("samples")).Block(
				jen.Id("s").Op(":=").Op("&").Id("l").Dot("samples").Index(jen.Id("w")).Dot("V"),
				jen.Id("s").Dot("Rand").Op("=").Qual(randPath, "New").Call(jen.Op("&").Id("s").Dot("pcg")),
			),
		),
		jen.Return(jen.Id("l"), jen.Nil()),
	}
	f.Commentf("New%s starts a loader over src. The zero Options mean \"as the schema says\".", name)
	f.Func().Id("New"+name).Params(jen.Id("src").Id(g.n.exported("Source")), jen.Id("opts").Add(g.rt("Options"))).
		Params(jen.Op("*").Id(name), jen.Error()).Block(body...)
}

// startEngine renders the engine's start,
//
//	e, err := loaderimpl.NewEngine(cellMapPlan, src.Len(), opts, fill)
//
// or with length bucketing
//
//	e, err := loaderimpl.NewBucketEngine(cellMapPlan, src.Len(), src.TokensRows, opts, fill)
//
// or for a volume source, whose crops the engine may group by the chunks
// they read (crops.locality), when the source gives their keys
//
//	var keys loaderimpl.LocalityFunc
//	if k, ok := src.(runtime.LocalityKeyer); ok {
//		keys = k.LocalityKeys
//	}
//	e, err := loaderimpl.NewLocalityEngine(cellMapPlan, src.Len(), keys, opts, fill)
//
// and with tiles, one of these unless the source is read in its order:
//
//	var e *loaderimpl.Engine
//	var err error
//	if _, ok := src.(runtime.Sequential); ok {
//		e, err = loaderimpl.NewSequentialEngine(cellMapPlan, src.Len(), opts, fill)
//	} else {
//		... // as above, e, err = ...
//	}
func (g *emitter) startEngine() jen.Code {
	plan, n := jen.Id(g.n.unexported("Plan")), jen.Id("src").Dot("Len").Call()
	call := g.impl("NewEngine").Call(plan, n, jen.Id("opts"), jen.Id("fill"))
	var start []jen.Code // statements, then the call that sets e and err
	switch k := g.bucketKey(); {
	case k != nil:
		call = g.impl("NewBucketEngine").Call(plan, n, jen.Id("src").Dot(rowsMethod(*k)), jen.Id("opts"), jen.Id("fill"))
	case g.ds.Crops != nil:
		start = []jen.Code{
			jen.Var().Id("keys").Add(g.impl("LocalityFunc")),
			jen.If(jen.List(jen.Id("k"), jen.Id("ok")).Op(":=").Id("src").Assert(g.rt("LocalityKeyer")), jen.Id("ok")).Block(
				jen.Id("keys").Op("=").Id("k").Dot("LocalityKeys"),
			),
		}
		call = g.impl("NewLocalityEngine").Call(plan, n, jen.Id("keys"), jen.Id("opts"), jen.Id("fill"))
	}
	if g.ds.Tiles == nil {
		return jen.Null().Add(lines(start)...).List(jen.Id("e"), jen.Err()).Op(":=").Add(call)
	}
	return jen.Null().
		Var().Id("e").Op("*").Add(g.impl("Engine")).Line().
		Var().Err().Error().Line().
		If(jen.List(jen.Id("_"), jen.Id("ok")).Op(":=").Id("src").Assert(g.rt("Sequential")), jen.Id("ok")).Block(
		jen.List(jen.Id("e"), jen.Err()).Op("=").Add(g.impl("NewSequentialEngine").Call(plan, n, jen.Id("opts"), jen.Id("fill"))),
	).Else().Block(append(start, jen.List(jen.Id("e"), jen.Err()).Op("=").Add(call))...)
}

// lines renders statements one per line, each followed by a newline,
// before what comes next in the same statement.
func lines(stmts []jen.Code) []jen.Code {
	var out []jen.Code
	for _, s := range stmts {
		out = append(out, s, jen.Line())
	}
	return out
}

// countMissing renders, for a volume or tile source, the engine's count of the
// chunks the source found not stored (Stats.MissingChunks):
//
//	if m, ok := src.(runtime.MissingCounter); ok {
//		e.CountMissing(m.MissingChunks)
//	}
func (g *emitter) countMissing() jen.Code {
	if g.ds.Crops == nil && g.ds.Tiles == nil {
		return jen.Null()
	}
	return jen.If(jen.List(jen.Id("m"), jen.Id("ok")).Op(":=").Id("src").Assert(g.rt("MissingCounter")), jen.Id("ok")).Block(
		jen.Id("e").Dot("CountMissing").Call(jen.Id("m").Dot("MissingChunks")),
	)
}

// pickFill renders the choice of fill: the source's ReadSamples when it is
// a SamplesReader, and, when the schema has a file source, that source's
// Gather when src is exactly it. A type embedding the file source to
// augment in its own Read is not the file source: the loader calls its
// Read, never the embedded Gather behind its back.
//
//	switch s := src.(type) {
//	case *CellMapFiles: // the file source itself, not a type embedding it
//		l.many, fill = cellMapSamplesFunc(s.Gather), l.fillSamples
//	case CellMapSamplesReader:
//		l.many, fill = s, l.fillSamples
//	}
func (g *emitter) pickFill() jen.Code {
	cases := []jen.Code{}
	if g.filesBacked() {
		cases = append(cases, jen.Case(jen.Op("*").Id(g.n.exported("Files"))).Block(
			jen.Comment("the file source itself, not a type embedding it"),
			jen.List(jen.Id("l").Dot("many"), jen.Id("fill")).Op("=").List(jen.Id(g.n.unexported("SamplesFunc")).Call(jen.Id("s").Dot("Gather")), jen.Id("l").Dot("fillSamples")),
		))
	}
	cases = append(cases, jen.Case(jen.Id(g.n.exported("SamplesReader"))).Block(
		jen.List(jen.Id("l").Dot("many"), jen.Id("fill")).Op("=").List(jen.Id("s"), jen.Id("l").Dot("fillSamples")),
	))
	return jen.Switch(jen.Id("s").Op(":=").Id("src").Assert(jen.Type())).Block(cases...)
}

// prefetch is the plan's prefetch as generated code says it: a depth, or
// runtime.PrefetchAuto.
func (g *emitter) prefetch(p int) jen.Code {
	if p == runtime.PrefetchAuto {
		return g.rt("PrefetchAuto")
	}
	return jen.Lit(p)
}

// slotViews are the statements setting batch s's typed views of its
// staging slot, b.raw = runtime.View[uint8](e.Staging(s, 0)), for each
// slot the engine allocates (Engine.OnSlot).
func (g *emitter) slotViews() []jen.Code {
	stmts := []jen.Code{jen.Id("b").Op(":=").Op("&").Id("l").Dot("batches").Index(jen.Id("s"))}
	for i, k := range g.keys {
		stmts = append(stmts, jen.Id("b").Dot(k.view).Op("=").Add(g.rt("View")).Types(k.elemType()).
			Call(jen.Id("e").Dot("Staging").Call(jen.Id("s"), jen.Lit(i))))
	}
	return stmts
}
