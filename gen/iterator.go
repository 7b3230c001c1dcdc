package gen

import (
	"github.com/dave/jennifer/jen"
)

func (g *emitter) recv() *jen.Statement {
	return jen.Func().Params(jen.Id("l").Op("*").Id(g.n.exported("Loader")))
}

func (g *emitter) seq() *jen.Statement {
	return jen.Qual("iter", "Seq2").Types(jen.Op("*").Id(g.n.exported("Batch")), jen.Error())
}

// epoch renders
//
//	func (l *CellMapLoader) Epoch(ctx context.Context, epoch int) iter.Seq2[*CellMapBatch, error] {
//		return l.EpochFrom(ctx, epoch, 0)
//	}
func (g *emitter) epoch(f *jen.File) {
	f.Comment("Epoch yields the batches of epoch in order. Breaking out of the loop,")
	f.Comment("cancelling ctx or a failed read ends it and stops its work.")
	f.Add(g.recv()).Id("Epoch").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("epoch").Int()).Add(g.seq()).Block(
		jen.Return(jen.Id("l").Dot("EpochFrom").Call(jen.Id("ctx"), jen.Id("epoch"), jen.Lit(0))),
	)
}

// epochFrom renders
//
//	func (l *CellMapLoader) EpochFrom(ctx context.Context, epoch, startBatch int) iter.Seq2[*CellMapBatch, error] {
//		return func(yield func(*CellMapBatch, error) bool) {
//			for staged, err := range l.engine.Epoch(ctx, epoch, startBatch) {
//				... b := &l.batches[staged.Slot]; b.staged, b.Indices = ...; b.Raw = staged.Tensors[0]; b.Labels = staged.Tensors[1] ...
//				if !yield(b, nil) {
//					return
//				}
//			}
//		}
//	}
func (g *emitter) epochFrom(f *jen.File) {
	body := []jen.Code{
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Id("yield").Call(jen.Nil(), jen.Err()), jen.Return()),
		jen.Id("b").Op(":=").Op("&").Id("l").Dot("batches").Index(jen.Id("staged").Dot("Slot")),
		jen.Id("b").Dot("staged").Op("=").Id("staged"),
		jen.Id("b").Dot("Indices").Op("=").Id("staged").Dot("Indices"),
	}
	for i, k := range g.keys {
		body = append(body, jen.Id("b").Dot(k.Go).Op("=").Id("staged").Dot("Tensors").Index(jen.Lit(i)))
	}
	body = append(body, jen.If(jen.Op("!").Id("yield").Call(jen.Id("b"), jen.Nil())).Block(jen.Return()))
	yield := jen.Id("yield").Func().Params(jen.Op("*").Id(g.n.exported("Batch")), jen.Error()).Bool()
	f.Comment("EpochFrom yields exactly the batches startBatch.. of Epoch(ctx, epoch),")
	f.Comment("to resume an interrupted epoch.")
	f.Add(g.recv()).Id("EpochFrom").Params(jen.Id("ctx").Qual("context", "Context"), jen.List(jen.Id("epoch"), jen.Id("startBatch")).Int()).Add(g.seq()).Block(
		jen.Return(jen.Func().Params(yield).Block(
			jen.For(jen.List(jen.Id("staged"), jen.Err()).Op(":=").Range().Id("l").Dot("engine").Dot("Epoch").Call(jen.Id("ctx"), jen.Id("epoch"), jen.Id("startBatch"))).Block(body...),
		)),
	)
}

// start renders
//
//	func (l *CellMapLoader) Start(ctx context.Context, epoch, startBatch int) (*runtime.Cursor, error) {
//		return l.engine.Start(ctx, epoch, startBatch)
//	}
func (g *emitter) start(f *jen.File) {
	f.Comment("Start begins epoch at batch startBatch and returns its cursor, which hands")
	f.Comment("out the runtime's batches a call at a time: for callers that cannot keep a")
	f.Comment("loop open while they wait, such as the Python bridge (loadergen python).")
	f.Comment("EpochFrom is the same walk as a typed loop.")
	f.Add(g.recv()).Id("Start").Params(jen.Id("ctx").Qual("context", "Context"), jen.List(jen.Id("epoch"), jen.Id("startBatch")).Int()).Params(jen.Op("*").Add(g.rt("Cursor")), jen.Error()).Block(
		jen.Return(jen.Id("l").Dot("engine").Dot("Start").Call(jen.Id("ctx"), jen.Id("epoch"), jen.Id("startBatch"))),
	)
}

// forwards renders the methods the engine answers, Len, Plan, Stats and
// Close:
//
//	func (l *CellMapLoader) Len() int {
//		return l.engine.Len()
//	}
func (g *emitter) forwards(f *jen.File) {
	for _, m := range []struct {
		name, doc string
		result    jen.Code
	}{
		{"Len", "Len is the number of batches per epoch for this rank.", jen.Int()},
		{"Plan", "Plan returns the plan fixed at generation time.", g.rt("Plan")},
		{"Stats", "Stats returns the loader's running totals.", g.rt("Stats")},
		{"Close", "Close stops the workers and releases the staging memory. It is idempotent.", jen.Error()},
	} {
		f.Comment(m.doc)
		f.Add(g.recv()).Id(m.name).Params().Add(m.result).Block(jen.Return(jen.Id("l").Dot("engine").Dot(m.name).Call()))
	}
}
