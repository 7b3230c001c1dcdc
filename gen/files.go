package gen

import (
	"slices"

	"github.com/dave/jennifer/jen"

	"github.com/loadergen/loadergen/runtime"
)

func (g *emitter) filesBacked() bool {
	for _, k := range g.fileKeys() {
		if k.file == "" {
			return false
		}
	}
	return true
}

// fileKeys are the keys the file source reads: the schema's, without the
// lengths of ragged keys, which come from their offsets files.
func (g *emitter) fileKeys() []emitKey {
	var out []emitKey
	for _, k := range g.keys {
		if k.LengthsOf == "" {
			out = append(out, k)
		}
	}
	return out
}

// fileSpecs renders
//
//	var cellMapFileSpecs = []npy.Spec{{
//		Key:    "raw",
//		File:   "raw.npy",
//		DType:  runtime.Uint8,
//		Sample: []int{64, 64, 64},
//	}, {
//		Key:    "labels",
//		...
//	}}
func (g *emitter) fileSpecs(f *jen.File) {
	keys := g.fileKeys()
	specs := make([]jen.Code, len(keys))
	for i, k := range keys {
		fields := []field{
			{"Key", jen.Lit(k.Name)},
			{"File", jen.Lit(k.file)},
		}
		if k.offsets != "" {
			fields = append(fields, field{"Offsets", jen.Lit(k.offsets)})
		}
		fields = append(fields,
			field{"DType", g.rtConst(k.DType)},
			field{"Sample", ints(k.Shape)},
		)
		if k.Overflow != runtime.OverflowError {
			fields = append(fields, field{"Overflow", g.rt(constName("Overflow", k.Overflow))})
		}
		specs[i] = literal(fields...)
	}
	f.Commentf("%s are the .npy files of %s, relative to the data root.", g.n.unexported("FileSpecs"), g.ds.Name)
	f.Var().Id(g.n.unexported("FileSpecs")).Op("=").Index().Qual(npyPath, "Spec").Values(specs...)
}

// filesType renders
//
//	type CellMapFiles struct {
//		raw    *npy.File
//		labels *npy.File
//	}
func (g *emitter) filesType(f *jen.File) {
	keys := g.fileKeys()
	fields := make([]jen.Code, len(keys))
	for i, k := range keys {
		fields[i] = jen.Id(k.view).Op("*").Qual(npyPath, "File")
	}
	name := g.n.exported("Files")
	f.Commentf("%s reads samples from memory-mapped .npy files; it implements", name)
	f.Commentf("%s.", g.n.exported("Source"))
	f.Type().Id(name).Struct(fields...)
}

// openFiles renders
//
//	func OpenCellMapFiles(root string) (*CellMapFiles, error) {
//		files, err := npy.OpenAll(root, cellMapFileSpecs)
//		if err != nil {
//			return nil, err
//		}
//		return &CellMapFiles{
//			raw:    files[0],
//			labels: files[1],
//		}, nil
//	}
func (g *emitter) openFiles(f *jen.File) {
	name := g.n.exported("Files")
	keys := g.fileKeys()
	opened := make([]field, len(keys))
	for i, k := range keys {
		opened[i] = field{k.view, jen.Id("files").Index(jen.Lit(i))}
	}
	f.Commentf("Open%s opens and checks the .npy file of every key under root:", name)
	if len(g.raggedKeys()) > 0 {
		f.Comment("dtype, C order, shape [N, sample...] and size, and the same N for all;")
		f.Comment("a ragged key's rows [R, row...] and its offsets, N+1 of them, rising")
		if slices.ContainsFunc(g.raggedKeys(), truncates) {
			f.Comment("from 0 to R, no sample over the key's most rows unless the key has")
			f.Comment("overflow: truncate.")
		} else {
			f.Comment("from 0 to R, no sample over the key's most rows.")
		}
	} else {
		f.Comment("dtype, C order, shape [N, sample...] and size, and the same N for all.")
	}
	f.Func().Id("Open"+name).Params(jen.Id("root").String()).Params(jen.Op("*").Id(name), jen.Error()).Block(
		jen.List(jen.Id("files"), jen.Err()).Op(":=").Qual(npyPath, "OpenAll").Call(jen.Id("root"), jen.Id(g.n.unexported("FileSpecs"))),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Return(jen.Op("&").Id(name).Add(literal(opened...)), jen.Nil()),
	)
}

// filesMethods renders Len, Read, Gather and Close of the file source, and
// the adapter that makes Gather a SamplesReader for the loader:
//
//	func (f *CellMapFiles) Read(s *CellMapSample) error {
//		if err := npy.Read(f.raw, s.Index, s.Raw); err != nil {
//			return &runtime.KeyError{Key: "raw", Err: err}
//		}
//		... the same for labels ...
//		return nil
//	}
//
//	func (f *CellMapFiles) Gather(s *CellMapSamples) (int, error) {
//		n, err := len(s.Indices), error(nil)
//		if k, e := npy.Gather(f.raw, s.Indices, s.Raw); e != nil {
//			n, err = k, &runtime.KeyError{Key: "raw", Err: e}
//		}
//		if k, e := npy.Gather(f.labels, s.Indices[:n], s.Labels[:n*cellMapLabelsElems]); e != nil {
//			n, err = k, &runtime.KeyError{Key: "labels", Err: e}
//		}
//		return n, err
//	}
func (g *emitter) filesMethods(f *jen.File) {
	recv := func() *jen.Statement { return jen.Func().Params(jen.Id("f").Op("*").Id(g.n.exported("Files"))) }
	keys := g.fileKeys()
	f.Comment("Len returns the number of samples, the leading dimension of every file.")
	f.Add(recv()).Id("Len").Params().Int().Block(jen.Return(jen.Id("f").Dot(keys[0].view).Dot("Len").Call()))

	keyErr := func(k emitKey, err jen.Code) jen.Code {
		return jen.Op("&").Add(g.rt("KeyError")).Values(jen.Id("Key").Op(":").Lit(k.Name), jen.Id("Err").Op(":").Add(err))
	}
	reads := make([]jen.Code, 0, len(keys)+2)
	closes := make([]jen.Code, len(keys))
	if len(g.raggedKeys()) > 0 {
		reads = append(reads, jen.Var().Err().Error())
	}
	for i, k := range keys {
		if k.Ragged {
			reads = append(reads, jen.If(
				jen.List(jen.Id("s").Dot(k.Go), jen.Err()).Op("=").Qual(npyPath, "AppendRows").Call(jen.Id("f").Dot(k.view), jen.Id("s").Dot("Index"), jen.Id("s").Dot(k.Go)),
				jen.Err().Op("!=").Nil(),
			).Block(jen.Return(keyErr(k, jen.Err()))))
		} else {
			reads = append(reads, jen.If(
				jen.Err().Op(":=").Qual(npyPath, "Read").Call(jen.Id("f").Dot(k.view), jen.Id("s").Dot("Index"), jen.Id("s").Dot(k.Go)),
				jen.Err().Op("!=").Nil(),
			).Block(jen.Return(keyErr(k, jen.Err()))))
		}
		closes[i] = jen.Id("f").Dot(k.view)
	}
	reads = append(reads, jen.Return(jen.Nil()))
	f.Comment("Read copies sample s.Index of every key's file into s.")
	f.Add(recv()).Id("Read").Params(jen.Id("s").Op("*").Id(g.n.exported("Sample"))).Error().Block(reads...)

	// Each key gathers the samples before the earliest failure so far, so
	// that n ends as the first sample some key failed on, as Read's would.
	// The first key gathers them all: its slices need no cutting.
	gathers := []jen.Code{jen.List(jen.Id("n"), jen.Id("err")).Op(":=").List(jen.Len(jen.Id("s").Dot("Indices")), jen.Error().Call(jen.Nil()))}
	for i, k := range keys {
		indices, dst := jen.Id("s").Dot("Indices"), jen.Id("s").Dot(k.Go)
		if i > 0 {
			indices, dst = indices.Index(jen.Empty(), jen.Id("n")), dst.Index(jen.Empty(), jen.Id("n").Op("*").Id(k.elems))
		}
		call := jen.Qual(npyPath, "Gather").Call(jen.Id("f").Dot(k.view), indices, dst)
		if k.Ragged {
			lengths := jen.Id("s").Dot(k.lengths.Go)
			if i > 0 {
				lengths = lengths.Index(jen.Empty(), jen.Id("n"))
			}
			call = jen.Qual(npyPath, "GatherRows").Call(jen.Id("f").Dot(k.view), indices, dst, lengths)
		}
		gathers = append(gathers, jen.If(
			jen.List(jen.Id("k"), jen.Id("e")).Op(":=").Add(call),
			jen.Id("e").Op("!=").Nil(),
		).Block(jen.List(jen.Id("n"), jen.Id("err")).Op("=").List(jen.Id("k"), keyErr(k, jen.Id("e")))))
	}
	gathers = append(gathers, jen.Return(jen.Id("n"), jen.Id("err")))
	f.Comment("Gather copies the samples of s from every key's file, one gather loop per")
	f.Comment("key: the loader calls it instead of Read when the source is exactly this")
	f.Comment("one. On a failure, n is the first sample that some key could not read. A")
	f.Comment("type that embeds the file source to augment its samples gets its own Read")
	f.Comment("called; to keep the gather loop, it defines ReadSamples too, calling Gather")
	f.Comment("and then augmenting each sample i with s.Rand(i).")
	f.Add(recv()).Id("Gather").Params(jen.Id("s").Op("*").Id(g.n.exported("Samples"))).Params(jen.Int(), jen.Error()).Block(gathers...)

	name := g.n.unexported("SamplesFunc")
	f.Commentf("%s lets the file source's Gather serve as %s.", name, g.n.exported("SamplesReader"))
	f.Type().Id(name).Func().Params(jen.Op("*").Id(g.n.exported("Samples"))).Params(jen.Int(), jen.Error())
	f.Comment("ReadSamples calls the function.")
	f.Func().Params(jen.Id("f").Id(name)).Id("ReadSamples").Params(jen.Id("s").Op("*").Id(g.n.exported("Samples"))).Params(jen.Int(), jen.Error()).Block(
		jen.Return(jen.Id("f").Call(jen.Id("s"))))

	if k := g.bucketKey(); k != nil {
		f.Commentf("%s returns how many rows sample index has in key %q, from its offsets.", rowsMethod(*k), k.Name)
		f.Add(recv()).Id(rowsMethod(*k)).Params(jen.Id("index").Int()).Int().Block(jen.Return(jen.Id("f").Dot(k.view).Dot("Rows").Call(jen.Id("index"))))
	}

	f.Comment("Close unmaps every file.")
	f.Add(recv()).Id("Close").Params().Error().Block(jen.Return(jen.Qual(npyPath, "CloseAll").Call(closes...)))
}
