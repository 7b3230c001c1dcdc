package gen

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/volume"
	"github.com/loadergen/loadergen/runtime/zarr"
	"github.com/loadergen/loadergen/schema"
)

const (
	rtPath   = "github.com/loadergen/loadergen/runtime"
	npyPath  = "github.com/loadergen/loadergen/runtime/npy"
	randPath = "math/rand/v2"
)

// Generate emits the gofmt'd Go source of the loader for p. source is the
// schema's path as the header should name it (relative to the output file,
// slash-separated); it is quoted if it holds anything unusual.
//
// The file holds, in order, the declarations of the emitters below; each
// emitter's comment shows what it renders for a dataset named CellMap.
func Generate(p *Plan, source string) ([]byte, error) {
	g := &emitter{ds: p.Dataset, rp: p.Runtime, n: newNames(p.Dataset)}
	for _, k := range g.rp.Keys {
		g.keys = append(g.keys, g.emitKey(k))
	}
	f := jen.NewFile(g.ds.Package)
	f.ImportName(rtPath, "runtime")
	f.ImportName(npyPath, "npy")
	f.ImportName(randPath, "rand")
	f.ImportName(volumePath, "volume")
	f.ImportName(recordsPath, "records")
	f.ImportName(imagesPath, "images")
	f.HeaderComment(Header)
	f.HeaderComment("source: " + commentSafe(source))
	f.HeaderComment(strings.TrimPrefix(settingsPrefix, "// ") + p.headerSettings())
	for _, emit := range []func(*jen.File){
		g.versionGuard,
		g.constants,
		g.elems,
		g.ragged,
		g.plan,
		g.sample,
		g.source,
		g.samples,
		g.samplesRand,
		g.samplesReader,
		g.batch,
		g.staged,
		g.dataMethods,
		g.clone,
		g.loaderType,
		g.newLoader,
		g.fill,
		g.fillSamples,
		g.epoch,
		g.epochFrom,
		g.forwards,
	} {
		emit(f)
	}
	if g.filesBacked() {
		g.fileSpecs(f)
		g.filesType(f)
		g.openFiles(f)
		g.filesMethods(f)
	}
	if g.ds.Crops != nil {
		g.volumes(f)
	}
	if g.ds.Records != nil {
		g.records(f)
	}
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, fmt.Errorf("render %s loader: %w", g.ds.Name, err)
	}
	out, err := groupImports(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("render %s loader: %w", g.ds.Name, err)
	}
	return out, nil
}

type emitter struct {
	ds   *schema.Dataset
	rp   runtime.Plan
	n    names
	keys []emitKey // plan order
}

// emitKey is what the emitter needs of one plan key: its plan entry, its
// generated identifiers and what the schema says of its source.
type emitKey struct {
	runtime.Key
	keyNames
	file      string // the .npy path; "" when it has none
	classAxis bool   // the sample shape starts with the class axis
	// A zarr key's path, its spatial shape (the sample's without the class
	// axis), voxel size, fill, what a chunk not stored reads as, its
	// arrays' dtype and the map of their values (nil for none).
	zarr       string
	spatial    []int
	scale      []float64
	fill       float64
	missing    volume.Missing
	arrayDType runtime.DType
	normalize  *zarr.Affine
	// A ragged key's padding, CSR offsets file, and the names of its
	// lengths key.
	pad     float64
	offsets string
	lengths keyNames
}

// emitKey pairs plan key k with its schema key by name. A lengths key
// (k.LengthsOf) gets the names schema.LengthsName gives it.
func (g *emitter) emitKey(k runtime.Key) emitKey {
	if k.LengthsOf != "" {
		return emitKey{Key: k, keyNames: g.n.lengthsKey(g.schemaKey(k.LengthsOf))}
	}
	sk := g.schemaKey(k.Name)
	ek := emitKey{Key: k, keyNames: g.n.key(sk), file: sk.File, classAxis: sk.ClassAxis,
		zarr: sk.Zarr, spatial: sk.Shape, scale: sk.Scale, fill: sk.Fill, missing: sk.Missing, arrayDType: sk.ArrayDType,
		normalize: sk.Normalize, pad: sk.Pad, offsets: sk.Offsets}
	if k.Ragged {
		ek.lengths = g.n.lengthsKey(sk)
	}
	return ek
}

// schemaKey returns the schema's key of that name; NewPlan made the plan's
// keys from them.
func (g *emitter) schemaKey(name string) schema.Key {
	i := slices.IndexFunc(g.ds.Keys, func(k schema.Key) bool { return k.Name == name })
	return g.ds.Keys[i]
}

// elemType is the Go element type of the key's typed views: []elemType.
func (k emitKey) elemType() *jen.Statement { return jen.Id(k.DType.GoType()) }

func (g *emitter) rt(name string) *jen.Statement { return jen.Qual(rtPath, name) }

// rtConst refers to runtime's constant for v, a dtype, role or priority of
// a plan: runtime.Float32, runtime.Input, runtime.High, its String()
// capitalised, but for bfloat16's runtime.BFloat16.
func (g *emitter) rtConst(v fmt.Stringer) *jen.Statement {
	if v == runtime.BFloat16 {
		return g.rt("BFloat16")
	}
	return g.rt(constName("", v))
}

// constName is the Go name of the constant v, whose String is its name in
// a schema, after prefix: constName("Overflow", runtime.OverflowTruncate)
// is "OverflowTruncate".
func constName(prefix string, v fmt.Stringer) string {
	s := v.String()
	return prefix + strings.ToUpper(s[:1]) + s[1:]
}

// errPrefix starts the generated file's error strings: the package name,
// as Go error strings are prefixed, e.g. "cellmap: ".
func (g *emitter) errPrefix() string { return g.ds.Package + ": " }

// versionGuard renders
//
//	const (
//		_ = runtime.EnforceVersion(runtime.GenVersion - 2) // ...
//		_ = runtime.EnforceVersion(2 - runtime.MinGenVersion) // ...
//	)
func (g *emitter) versionGuard(f *jen.File) {
	v := runtime.GenVersion
	f.Comment("These fail to compile when this file and the runtime disagree; the")
	f.Comment("comment on the failing line says which side to upgrade.")
	f.Const().Defs(
		jen.Id("_").Op("=").Add(g.rt("EnforceVersion")).Call(g.rt("GenVersion").Op("-").Lit(v)).
			Comment("this file is newer than the runtime: go get -u github.com/loadergen/loadergen"),
		jen.Id("_").Op("=").Add(g.rt("EnforceVersion")).Call(jen.Lit(v).Op("-").Add(g.rt("MinGenVersion"))).
			Comment("the runtime is newer than this file: re-run loadergen (go generate)"),
	)
}

// constants renders
//
//	const (
//		CellMapBatchSize  = 16       // samples per batch
//		CellMapBatchBytes = 54525952 // 52.0 MiB
//		CellMapUseStreams = false
//		CellMapNumStreams = 1
//	)
func (g *emitter) constants(f *jen.File) {
	rp := g.rp
	f.Comment(fmt.Sprintf("The plan of %s, fixed at generation time: %s.", g.ds.Name, rp.Reason))
	f.Const().Defs(
		jen.Id(g.n.exported("BatchSize")).Op("=").Lit(rp.BatchSize).Comment("samples per batch"),
		jen.Id(g.n.exported("BatchBytes")).Op("=").Lit(int(rp.BatchBytes)).Comment(humanBytes(rp.BatchBytes)),
		jen.Id(g.n.exported("UseStreams")).Op("=").Lit(rp.UseStreams),
		jen.Id(g.n.exported("NumStreams")).Op("=").Lit(rp.NumStreams),
	)
}

// elems renders
//
//	const (
//		cellMapRawElems    = 262144 // [64 64 64] uint8
//		cellMapLabelsElems = 786432 // [3 64 64 64] float32
//	)
func (g *emitter) elems(f *jen.File) {
	f.Comment("Elements in one sample of each key.")
	defs := make([]jen.Code, len(g.keys))
	for i, k := range g.keys {
		defs[i] = jen.Id(k.elems).Op("=").Lit(k.SampleElems()).Comment(describe(k.Key))
	}
	f.Const().Defs(defs...)
}

// describe is a key's sample as comments show it: "[3 64 64 64] float32",
// "scalar int64".
func describe(k runtime.Key) string {
	switch {
	case len(k.Shape) == 0:
		return "scalar " + k.DType.String()
	case k.Ragged:
		return fmt.Sprintf("up to %v %s, ragged", k.Shape, k.DType)
	}
	return fmt.Sprintf("%v %s", k.Shape, k.DType)
}

// plan renders
//
//	var cellMapPlan = runtime.Plan{Name: "CellMap", ..., Keys: []runtime.Key{...}, ...}
func (g *emitter) plan(f *jen.File) {
	rp := g.rp
	keys := make([]jen.Code, len(rp.Keys))
	for i, k := range rp.Keys {
		kf := []field{
			{"Name", jen.Lit(k.Name)},
			{"Role", g.rtConst(k.Role)},
			{"DType", g.rtConst(k.DType)},
			{"Shape", ints(k.Shape)},
			{"SampleBytes", jen.Lit(int(k.SampleBytes))},
			{"BatchBytes", jen.Lit(int(k.BatchBytes))},
			{"Offset", jen.Lit(int(k.Offset))},
			{"Stream", jen.Lit(k.Stream)},
			{"Priority", g.rtConst(k.Priority)},
		}
		if k.Ragged {
			kf = append(kf, field{"Ragged", jen.True()})
		}
		if k.Overflow != runtime.OverflowError {
			kf = append(kf, field{"Overflow", g.rt(constName("Overflow", k.Overflow))})
		}
		if k.LengthsOf != "" {
			kf = append(kf, field{"LengthsOf", jen.Lit(k.LengthsOf)})
		}
		keys[i] = literal(kf...)
	}
	l := rp.Loader
	loader := []field{
		{"Prefetch", g.prefetch(l.Prefetch)},
		{"Workers", jen.Lit(l.Workers)},
		{"Shuffle", jen.Lit(l.Shuffle)},
		{"Seed", jen.Op(strconv.FormatUint(l.Seed, 10))}, // untyped: seeds past MaxInt64 too
		{"DropLast", jen.Lit(l.DropLast)},
		{"MaxStagingMB", jen.Lit(l.MaxStagingMB)},
	}
	if l.Bucket.Key != "" {
		loader = append(loader, field{"Bucket", g.rt("Bucket").Values(jen.Dict{
			jen.Id("Key"): jen.Lit(l.Bucket.Key), jen.Id("Window"): jen.Lit(l.Bucket.Window),
		})})
	}
	if l.Locality.Window > 0 {
		loader = append(loader, field{"Locality", g.rt("Locality").Values(jen.Dict{jen.Id("Window"): jen.Lit(l.Locality.Window)})})
	}
	fields := []field{
		{"Name", jen.Lit(rp.Name)},
		{"BatchSize", jen.Id(g.n.exported("BatchSize"))},
		{"Device", jen.Lit(rp.Device)},
		{"BatchBytes", jen.Id(g.n.exported("BatchBytes"))},
		{"BatchMiB", jen.Lit(rp.BatchMiB)},
		{"UseStreams", jen.Id(g.n.exported("UseStreams"))},
		{"NumStreams", jen.Id(g.n.exported("NumStreams"))},
		{"Reason", jen.Lit(rp.Reason)},
		{"Keys", jen.Index().Add(g.rt("Key")).Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, keys...)},
		{"SlotBytes", jen.Lit(int(rp.SlotBytes))},
		{"Loader", g.rt("LoaderDefaults").Add(literal(loader...))},
	}
	if st := rp.Streams; st != (runtime.StreamSettings{}) {
		fields = append(fields, field{"Streams", g.rt("StreamSettings").Add(literal(
			field{"MinBatchSize", jen.Lit(st.MinBatchSize)},
			field{"MinBatchMemoryMB", jen.Lit(st.MinBatchMemoryMB)},
			field{"MaxStreams", jen.Lit(st.MaxStreams)},
		))})
	}
	f.Commentf("%s is the plan as a value, for the runtime and for %s.", g.n.unexported("Plan"), g.n.exported("Loader.Plan"))
	f.Var().Id(g.n.unexported("Plan")).Op("=").Add(g.rt("Plan")).Add(literal(fields...))
}

// sample renders
//
//	type CellMapSample struct {
//		Index int // dataset index
//		Epoch int // epoch the sample is loaded for
//		// Rand is seeded from ...
//		Rand *rand.Rand
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
		jen.Line(),
	}
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

// samples renders
//
//	type CellMapSamples struct {
//		Epoch   int   // epoch the samples are loaded for
//		Indices []int // dataset indices of the samples, in batch order
//
//		Raw    []uint8   // key "raw": len(Indices) x [64 64 64] uint8
//		Labels []float32 // key "labels": len(Indices) x [3 64 64 64] float32
//
//		rand *rand.Rand // what Rand returns, over pcg
//		pcg  rand.PCG
//	}
func (g *emitter) samples(f *jen.File) {
	fields := []jen.Code{
		jen.Id("Epoch").Int().Comment("epoch the samples are loaded for"),
		jen.Id("Indices").Index().Int().Comment("dataset indices of the samples, in batch order"),
		jen.Line(),
	}
	for _, k := range g.keys {
		comment := fmt.Sprintf("key %q: len(Indices) x %s", k.Name, describe(k.Key))
		switch {
		case k.Ragged:
			comment += ", each sample's rows at the start of its slot"
		case k.LengthsOf != "":
			comment = fmt.Sprintf("rows of each sample of key %q: ReadSamples sets them", k.LengthsOf)
		}
		fields = append(fields, jen.Id(k.Go).Index().Add(k.elemType()).Comment(comment))
	}
	fields = append(fields, jen.Line(),
		jen.Id("rand").Op("*").Qual(randPath, "Rand").Comment("what Rand returns, over pcg"),
		jen.Id("pcg").Qual(randPath, "PCG"),
	)
	name := g.n.exported("Samples")
	f.Commentf("%s are consecutive samples of one batch, filled in one ReadSamples", name)
	f.Comment("call. Every key's slice holds len(Indices) samples back to back in C")
	f.Comment("order and points into the staging buffer: write every element, it holds")
	f.Comment("an older batch.")
	if len(g.raggedKeys()) > 0 {
		f.Comment("")
		f.Comment("A ragged key's slice holds each sample's slot of its most rows: write")
		f.Comment("a sample's rows at the start of its slot and their count in the key's")
		f.Comment("lengths; the loader pads the rest of the slot.")
		if slices.ContainsFunc(g.raggedKeys(), truncates) {
			f.Comment("A key with overflow: truncate takes a count above the maximum for a")
			f.Comment("longer sample whose first rows fill its slot: the loader records the")
			f.Comment("maximum and counts the sample in Stats.Truncated.")
		}
	}
	f.Type().Id(name).Struct(fields...)
}

// samplesRand renders
//
//	func (s *CellMapSamples) Rand(i int) *rand.Rand {
//		runtime.SeedSample(&s.pcg, runtime.EpochSeed(cellMapPlan.Loader.Seed, s.Epoch), s.Indices[i])
//		return s.rand
//	}
func (g *emitter) samplesRand(f *jen.File) {
	f.Comment("Rand returns the Rand of the i-th sample, seeded as Read's s.Rand is for")
	f.Comment("dataset index Indices[i], so it makes the same draws. It reseeds one")
	f.Comment("generator: finish one sample's draws before asking for another's.")
	f.Func().Params(jen.Id("s").Op("*").Id(g.n.exported("Samples"))).Id("Rand").Params(jen.Id("i").Int()).Op("*").Qual(randPath, "Rand").Block(
		g.rt("SeedSample").Call(jen.Op("&").Id("s").Dot("pcg"), g.epochSeed(jen.Id("s").Dot("Epoch")), jen.Id("s").Dot("Indices").Index(jen.Id("i"))),
		jen.Return(jen.Id("s").Dot("rand")),
	)
}

// epochSeed renders the seed that the samples of epoch share:
//
//	runtime.EpochSeed(cellMapPlan.Loader.Seed, epoch)
func (g *emitter) epochSeed(epoch jen.Code) *jen.Statement {
	return g.rt("EpochSeed").Call(jen.Id(g.n.unexported("Plan")).Dot("Loader").Dot("Seed"), epoch)
}

// samplesReader renders
//
//	type CellMapSamplesReader interface {
//		ReadSamples(s *CellMapSamples) (n int, err error)
//	}
func (g *emitter) samplesReader(f *jen.File) {
	name := g.n.exported("SamplesReader")
	f.Commentf("%s is optional for sources of %s, as io.WriterTo sits beside", name, g.ds.Name)
	f.Commentf("io.Writer: when the %s implements it, the loader calls ReadSamples", g.n.exported("Source"))
	f.Comment("instead of Read, for runs of samples sized so that tiny samples cost about")
	f.Comment("a plain copy loop, and concurrently for different runs.")
	f.Type().Id(name).Interface(
		jen.Comment("ReadSamples fills every sample of s. When it fails it returns how many"),
		jen.Comment("samples, from the first, it filled in full: the loader's error then"),
		jen.Comment("names the dataset index s.Indices[n]."),
		jen.Id("ReadSamples").Params(jen.Id("s").Op("*").Id(g.n.exported("Samples"))).Params(jen.Id("n").Int(), jen.Err().Error()),
	)
}

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
//		c.Raw, c.raw = runtime.CloneTensor[uint8](b.Raw)
//		c.Labels, c.labels = runtime.CloneTensor[float32](b.Labels)
//		return c
//	}
func (g *emitter) clone(f *jen.File) {
	name := g.n.exported("Batch")
	body := []jen.Code{jen.Id("c").Op(":=").Op("&").Id(name).Values(jen.Id("Indices").Op(":").Qual("slices", "Clone").Call(jen.Id("b").Dot("Indices")))}
	for _, k := range g.keys {
		body = append(body, jen.List(jen.Id("c").Dot(k.Go), jen.Id("c").Dot(k.view)).Op("=").Add(g.rt("CloneTensor")).Types(k.elemType()).Call(jen.Id("b").Dot(k.Go)))
	}
	body = append(body, jen.Return(jen.Id("c")))
	f.Comment("Clone returns a copy of the batch in memory of its own. A loop reuses its")
	f.Comment("batches: the pointer it yields comes back later holding other samples, and")
	f.Comment("the data is overwritten once the loop advances. To keep a batch (in a list,")
	f.Comment("across iterations), keep its Clone. A clone lives on the host only: its")
	f.Comment("tensors' Device is 0 and its Staged is nil.")
	f.Func().Params(jen.Id("b").Op("*").Id(name)).Id("Clone").Params().Op("*").Id(name).Block(body...)
}

// loaderType renders
//
//	type CellMapLoader struct {
//		src     CellMapSource
//		many    CellMapSamplesReader // src, when it fills runs of samples at once; else nil
//		engine  *runtime.Engine
//		batches []CellMapBatch                // one per place in the staging ring
//		samples []runtime.Own[CellMapSample]  // one per filler, for Read; nil with many
//		runs    []runtime.Own[CellMapSamples] // one per filler, for ReadSamples; nil without
//	}
func (g *emitter) loaderType(f *jen.File) {
	name := g.n.exported("Loader")
	f.Commentf("%s streams batches of %s, read through %s, into preallocated", name, g.ds.Name, g.n.exported("Source"))
	f.Comment("staging slots, filled ahead of the consumer by a pool of workers.")
	f.Type().Id(name).Struct(
		jen.Id("src").Id(g.n.exported("Source")),
		jen.Id("many").Id(g.n.exported("SamplesReader")).Comment("src, when it fills runs of samples at once; else nil"),
		jen.Id("engine").Op("*").Add(g.rt("Engine")),
		jen.Id("batches").Index().Id(g.n.exported("Batch")).Comment("one per place in the staging ring"),
		jen.Id("samples").Index().Add(g.rt("Own")).Types(jen.Id(g.n.exported("Sample"))).Comment("one per filler, for Read; nil with many"),
		jen.Id("runs").Index().Add(g.rt("Own")).Types(jen.Id(g.n.exported("Samples"))).Comment("one per filler, for ReadSamples; nil without"),
	)
}

// newLoader renders
//
//	func NewCellMapLoader(src CellMapSource, opts runtime.Options) (*CellMapLoader, error) {
//		... l := &CellMapLoader{src: src}; fill := l.fill, or l.fillSamples when src is a CellMapSamplesReader ...
//		e, err := runtime.NewEngine(cellMapPlan, src.Len(), opts, fill)
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
			jen.Id("l").Dot("runs").Op("=").Make(jen.Index().Add(g.rt("Own")).Types(jen.Id(g.n.exported("Samples"))), jen.Id("e").Dot("Fillers").Call()),
			jen.For(jen.Id("w").Op(":=").Range().Id("l").Dot("runs")).Block(
				jen.Id("r").Op(":=").Op("&").Id("l").Dot("runs").Index(jen.Id("w")).Dot("V"),
				jen.Id("r").Dot("rand").Op("=").Qual(randPath, "New").Call(jen.Op("&").Id("r").Dot("pcg")),
			),
		).Else().Block(
			jen.Id("l").Dot("samples").Op("=").Make(jen.Index().Add(g.rt("Own")).Types(jen.Id(g.n.exported("Sample"))), jen.Id("e").Dot("Fillers").Call()),
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
//	e, err := runtime.NewEngine(cellMapPlan, src.Len(), opts, fill)
//
// or with length bucketing
//
//	e, err := runtime.NewBucketEngine(cellMapPlan, src.Len(), src.TokensRows, opts, fill)
//
// or for a volume source, whose crops the engine may group by the chunks
// they read (crops.locality), when the source gives their keys
//
//	var keys runtime.LocalityFunc
//	if k, ok := src.(runtime.LocalityKeyer); ok {
//		keys = k.LocalityKeys
//	}
//	e, err := runtime.NewLocalityEngine(cellMapPlan, src.Len(), keys, opts, fill)
func (g *emitter) startEngine() jen.Code {
	plan, n := jen.Id(g.n.unexported("Plan")), jen.Id("src").Dot("Len").Call()
	call := g.rt("NewEngine").Call(plan, n, jen.Id("opts"), jen.Id("fill"))
	switch k := g.bucketKey(); {
	case k != nil:
		call = g.rt("NewBucketEngine").Call(plan, n, jen.Id("src").Dot(rowsMethod(*k)), jen.Id("opts"), jen.Id("fill"))
	case g.ds.Crops != nil:
		return jen.Null().
			Var().Id("keys").Add(g.rt("LocalityFunc")).Line().
			If(jen.List(jen.Id("k"), jen.Id("ok")).Op(":=").Id("src").Assert(g.rt("LocalityKeyer")), jen.Id("ok")).Block(
			jen.Id("keys").Op("=").Id("k").Dot("LocalityKeys"),
		).Line().
			List(jen.Id("e"), jen.Err()).Op(":=").Add(g.rt("NewLocalityEngine").Call(plan, n, jen.Id("keys"), jen.Id("opts"), jen.Id("fill")))
	}
	return jen.List(jen.Id("e"), jen.Err()).Op(":=").Add(call)
}

// countMissing renders, for a volume source, the engine's count of the
// chunks the source found not stored (Stats.MissingChunks):
//
//	if m, ok := src.(runtime.MissingCounter); ok {
//		e.CountMissing(m.MissingChunks)
//	}
func (g *emitter) countMissing() jen.Code {
	if g.ds.Crops == nil {
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

// fill renders
//
//	func (l *CellMapLoader) fill(r *runtime.Run) error {
//		b, s := &l.batches[r.Slot], &l.samples[r.Filler].V
//		s.Epoch = r.Epoch
//		seed := runtime.EpochSeed(cellMapPlan.Loader.Seed, r.Epoch)
//		for ; r.Done < len(r.Indices); r.Done++ {
//			pos := r.Pos + r.Done
//			s.Index = r.Indices[r.Done]
//			runtime.SeedSample(&s.pcg, seed, s.Index)
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
		g.rt("SeedSample").Call(jen.Op("&").Id("s").Dot("pcg"), jen.Id("seed"), jen.Id("s").Dot("Index")),
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
	f.Func().Params(jen.Id("l").Op("*").Id(g.n.exported("Loader"))).Id("fill").Params(jen.Id("r").Op("*").Add(g.rt("Run"))).Error().Block(
		jen.List(jen.Id("b"), jen.Id("s")).Op(":=").List(
			jen.Op("&").Id("l").Dot("batches").Index(jen.Id("r").Dot("Slot")),
			jen.Op("&").Id("l").Dot("samples").Index(jen.Id("r").Dot("Filler")).Dot("V"),
		),
		jen.Id("s").Dot("Epoch").Op("=").Id("r").Dot("Epoch"),
		jen.Id("seed").Op(":=").Add(g.epochSeed(jen.Id("r").Dot("Epoch"))),
		jen.For(jen.Empty(), jen.Id("r").Dot("Done").Op("<").Len(jen.Id("r").Dot("Indices")), jen.Id("r").Dot("Done").Op("++")).Block(loop...),
		jen.Return(jen.Nil()),
	)
}

// fillSamples renders
//
//	func (l *CellMapLoader) fillSamples(r *runtime.Run) error {
//		b, s, n := &l.batches[r.Slot], &l.runs[r.Filler].V, len(r.Indices)
//		s.Epoch, s.Indices = r.Epoch, r.Indices
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
		jen.List(jen.Id("s").Dot("Epoch"), jen.Id("s").Dot("Indices")).Op("=").List(jen.Id("r").Dot("Epoch"), jen.Id("r").Dot("Indices")),
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
	f.Func().Params(jen.Id("l").Op("*").Id(g.n.exported("Loader"))).Id("fillSamples").Params(jen.Id("r").Op("*").Add(g.rt("Run"))).Error().Block(body...)
}

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

// field is one field of a struct literal written in declaration order.
type field struct {
	name  string
	value jen.Code
}

// literal renders fields one per line in the given order (jen.Dict sorts
// them, which scatters the plan's fields).
func literal(fields ...field) *jen.Statement {
	items := make([]jen.Code, len(fields))
	for i, f := range fields {
		items[i] = jen.Id(f.name).Op(":").Add(f.value)
	}
	return jen.Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, items...)
}

// ints renders a shape as an []int literal: []int{3, 64, 64}.
func ints(shape []int) *jen.Statement {
	dims := make([]jen.Code, len(shape))
	for i, d := range shape {
		dims[i] = jen.Lit(d)
	}
	return jen.Index().Int().Values(dims...)
}

// humanBytes is a size for comments: "864 B", "52.0 MiB".
func humanBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

func intsAny(s []int) []any {
	a := make([]any, len(s))
	for i, v := range s {
		a[i] = v
	}
	return a
}
