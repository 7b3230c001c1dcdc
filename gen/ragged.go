package gen

import (
	"slices"
	"strconv"

	"github.com/dave/jennifer/jen"

	"github.com/loadergen/loadergen/runtime"
)

// raggedKeys are the ragged keys among g.keys.
func (g *emitter) raggedKeys() []emitKey {
	var out []emitKey
	for _, k := range g.keys {
		if k.Ragged {
			out = append(out, k)
		}
	}
	return out
}

// rowsConst names the constant holding a ragged key's maximum rows, and
// padVar the variable holding its padding (whose value is k.pad):
// cellMapTokensRows, cellMapTokensPad.
func (g *emitter) rowsConst(k emitKey) string { return g.n.unexported(k.Go + "Rows") }
func (g *emitter) padVar(k emitKey) string    { return g.n.unexported(k.Go + "Pad") }

// truncates reports whether ragged key k has overflow: truncate.
func truncates(k emitKey) bool { return k.Overflow == runtime.OverflowTruncate }

// ragged renders, when the schema has ragged keys,
//
//	const (
//		cellMapTokensRows = 512 // the most rows a sample of key "tokens" has
//	)
//
//	var (
//		cellMapTokensPad = int32(-1)
//	)
func (g *emitter) ragged(f *jen.File) {
	keys := g.raggedKeys()
	if len(keys) == 0 {
		return
	}
	rows := make([]jen.Code, len(keys))
	pads := make([]jen.Code, len(keys))
	for i, k := range keys {
		rows[i] = jen.Id(g.rowsConst(k)).Op("=").Lit(k.Shape[0]).Commentf("the most rows a sample of key %q has", k.Name)
		value, note := padValue(k.DType, k.pad)
		pads[i] = jen.Id(g.padVar(k)).Op("=").Add(value)
		if note != "" {
			pads[i] = jen.Add(pads[i]).Comment(note)
		}
	}
	f.Comment("The ragged keys: the loader pads each sample's rows to the maximum, and")
	f.Comment("records the count in the key's lengths.")
	f.Const().Defs(rows...)
	f.Comment("Padding of the ragged keys: every element past a sample's rows holds it.")
	f.Var().Defs(pads...)
}

// padValue renders pad as a value of d's Go type, and a note for the
// comment beside it where the value needs one: int32(-1), and a float
// dtype's as floatLit renders it.
func padValue(d runtime.DType, pad float64) (jen.Code, string) {
	if d.IsFloat() {
		return floatLit(d, pad)
	}
	return jen.Id(d.GoType()).Call(jen.Op(strconv.FormatFloat(pad, 'f', -1, 64))), ""
}

// padRows renders, after Read, the padding of each ragged key of the
// sample at pos and the record of its rows:
//
//	rows, err := loaderimpl.PadRows("tokens", b.tokens[pos*cellMapTokensElems:][:cellMapTokensElems], s.Tokens, cellMapTokensRows, cellMapTokensPad)
//	if err != nil {
//		return err
//	}
//	b.tokensLengths[pos] = rows
//
// and for a key with overflow: truncate, which counts the samples it cuts,
//
//	rows, cut, err := loaderimpl.TruncateRows("boxes", ...)
//	if err != nil {
//		return err
//	}
//	if cut {
//		r.Truncated++
//	}
//	b.boxesLengths[pos] = rows
//
// The first key declares rows and err, the first that truncates cut.
func (g *emitter) padRows() []jen.Code {
	var out []jen.Code
	keys := g.raggedKeys()
	for i, k := range keys {
		slot := jen.Id("b").Dot(k.view).Index(jen.Id("pos").Op("*").Id(k.elems), jen.Empty()).Index(jen.Empty(), jen.Id(k.elems))
		args := []jen.Code{jen.Lit(k.Name), slot, jen.Id("s").Dot(k.Go), jen.Id(g.rowsConst(k)), jen.Id(g.padVar(k))}
		declare := i == 0
		lhs, fn := []jen.Code{jen.Id("rows"), jen.Err()}, "PadRows"
		if truncates(k) {
			declare = declare || !slices.ContainsFunc(keys[:i], truncates)
			lhs, fn = []jen.Code{jen.Id("rows"), jen.Id("cut"), jen.Err()}, "TruncateRows"
		}
		op := "="
		if declare {
			op = ":="
		}
		out = append(out,
			jen.List(lhs...).Op(op).Add(g.impl(fn)).Call(args...),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		)
		if truncates(k) {
			out = append(out, jen.If(jen.Id("cut")).Block(jen.Id("r").Dot("Truncated").Op("++")))
		}
		out = append(out, jen.Id("b").Dot(k.lengths.view).Index(jen.Id("pos")).Op("=").Id("rows"))
	}
	return out
}

// padSamples renders, after ReadSamples, the padding of ragged key k of
// the samples before the earliest failure so far (done is the batch's n
// for the first ragged key; a later key checks only the samples before
// the sample an earlier key refused, so that done ends at the first bad
// sample, as the file source's Gather does):
//
//	if k, e := loaderimpl.PadSamples("tokens", s.Tokens[:done*cellMapTokensElems], s.TokensLengths[:done], cellMapTokensRows, cellMapTokensPad); e != nil {
//		done, err = k, e
//	}
//
// or, for a key with overflow: truncate, which counts the samples it cuts,
//
//	if k, cut, e := loaderimpl.TruncateSamples("boxes", ...); e != nil {
//		done, err = k, e
//	} else {
//		r.Truncated += cut
//	}
func (g *emitter) padSamples(k emitKey) jen.Code {
	args := []jen.Code{jen.Lit(k.Name),
		jen.Id("s").Dot(k.Go).Index(jen.Empty(), jen.Id("done").Op("*").Id(k.elems)),
		jen.Id("s").Dot(k.lengths.Go).Index(jen.Empty(), jen.Id("done")),
		jen.Id(g.rowsConst(k)), jen.Id(g.padVar(k))}
	failed := jen.List(jen.Id("done"), jen.Err()).Op("=").List(jen.Id("k"), jen.Id("e"))
	if truncates(k) {
		return jen.If(
			jen.List(jen.Id("k"), jen.Id("cut"), jen.Id("e")).Op(":=").Add(g.impl("TruncateSamples")).Call(args...),
			jen.Id("e").Op("!=").Nil(),
		).Block(failed).Else().Block(jen.Id("r").Dot("Truncated").Op("+=").Id("cut"))
	}
	return jen.If(
		jen.List(jen.Id("k"), jen.Id("e")).Op(":=").Add(g.impl("PadSamples")).Call(args...),
		jen.Id("e").Op("!=").Nil(),
	).Block(failed)
}

// bucketKey is the key whose lengths bucketing groups by, or nil.
func (g *emitter) bucketKey() *emitKey {
	name := g.rp.Loader.Bucket.Key
	if name == "" {
		return nil
	}
	for i, k := range g.keys {
		if k.Name == name {
			return &g.keys[i]
		}
	}
	return nil
}

// rowsMethod is the Source method that tells the bucket key's rows of a
// sample without reading it: TokensRows.
func rowsMethod(k emitKey) string { return k.Go + "Rows" }
