package gen

import (
	"fmt"
	"slices"

	"github.com/dave/jennifer/jen"

	"github.com/loadergen/loadergen/runtime"
)

// sample renders
//
//	type CellMapSample struct {
//		Index int // dataset index
//		Epoch int // epoch the sample is loaded for
//		// Rand is seeded from ...
//		Rand *rand.Rand
//		// Ctx is done once ...
//		Ctx context.Context
//
//		Raw    []uint8   // key "raw": [64 64 64] uint8, C order
//		Labels []float32 // key "labels": [3 64 64 64] float32, C order, class axis first
//
//		pcg rand.PCG // Rand's source, seeded for each sample
//	}
func (g *emitter) sample(f *jen.File) {
	fields := []jen.Code{
		jen.Id("Index").Int().Comment("dataset index"),
		jen.Id("Epoch").Int().Comment("epoch the sample is loaded for"),
		jen.Comment("Rand is seeded from the schema's seed, the epoch and the index: the"),
		jen.Comment("same draws on every run, whatever the number of workers. Use it for"),
		jen.Comment("augmentation, so that a random crop or flip applies to every key alike."),
		jen.Id("Rand").Op("*").Qual(randPath, "Rand"),
	}
	fields = append(fields, ctxField()...)
	fields = append(fields, jen.Line())
	for _, k := range g.keys {
		if k.LengthsOf == "" {
			fields = append(fields, jen.Id(k.Go).Index().Add(k.elemType()).Comment(sampleComment(k)))
		}
	}
	fields = append(fields, jen.Line(), jen.Id("pcg").Qual(randPath, "PCG").Comment("Rand's source, seeded for each sample"))
	name := g.n.exported("Sample")
	f.Commentf("%s is one sample being filled. Every key's slice points into the", name)
	f.Comment("staging buffer and must be written in full: it is not zeroed, and holds")
	f.Comment("an older batch.")
	if len(g.raggedKeys()) > 0 {
		f.Comment("")
		f.Comment("A ragged key's slice is empty, with capacity for its most rows: Read")
		f.Comment("appends the sample's rows (append(s.Tokens, row...)), and the loader")
		f.Comment("pads the rest and records the count in the batch's lengths. More rows")
		f.Comment("than the maximum are an error naming the key and the sample.")
		if slices.ContainsFunc(g.raggedKeys(), truncates) {
			f.Comment("A key with overflow: truncate keeps a longer sample's first rows")
			f.Comment("instead, and counts it in Stats.Truncated.")
		}
	}
	f.Type().Id(name).Struct(fields...)
}

// sampleComment describes a key's slice in the sample struct:
// `key "labels": [3 64 64 64] float32, C order, class axis first`.
func sampleComment(k emitKey) string {
	s := fmt.Sprintf("key %q: %s", k.Name, describe(k.Key))
	switch {
	case len(k.Shape) == 0:
		s += " (one element)"
	case truncates(k):
		s += "; append rows (past the maximum, they are cut: overflow truncate)"
	case k.Ragged:
		s += "; append rows"
	case k.classAxis:
		s += ", C order, class axis first"
	default:
		s += ", C order"
	}
	switch k.DType {
	case runtime.Bool:
		s += ", one byte per bool"
	case runtime.Float16, runtime.BFloat16:
		s += ", raw 16-bit words"
	}
	return s
}

// source renders
//
//	type CellMapSource interface {
//		Len() int
//		Read(s *CellMapSample) error
//	}
func (g *emitter) source(f *jen.File) {
	name, sample := g.n.exported("Source"), g.n.exported("Sample")
	f.Commentf("%s reads the samples of the %s dataset. Read is called", name, g.ds.Name)
	f.Comment("concurrently from the loader's workers, for different samples.")
	methods := []jen.Code{
		jen.Comment("Len returns the number of samples."),
		jen.Id("Len").Params().Int(),
		jen.Comment("Read fills every key of sample s.Index (PyTorch's __getitem__)."),
		jen.Id("Read").Params(jen.Id("s").Op("*").Id(sample)).Error(),
	}
	if k := g.bucketKey(); k != nil {
		methods = append(methods,
			jen.Commentf("%s returns how many rows sample index has in key %q, without", rowsMethod(*k), k.Name),
			jen.Comment("reading it: the loader asks once per sample, at start, to group"),
			jen.Comment("samples of similar lengths into batches (loader.bucket)."),
			jen.Id(rowsMethod(*k)).Params(jen.Id("index").Int()).Int(),
		)
	}
	f.Type().Id(name).Interface(methods...)
}

// ctxField renders the Ctx field of the sample structs, with its comment.
func ctxField() []jen.Code {
	return []jen.Code{
		jen.Comment("Ctx is done once the epoch ends early or the loader closes: hand it to"),
		jen.Comment("reads that may wait (remote data), so that they stop then. nil (a"),
		jen.Comment("sample made by hand) is never done."),
		jen.Id("Ctx").Qual("context", "Context"),
	}
}
