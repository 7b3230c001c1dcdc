package gen

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/volume/volumespec"
	"github.com/loadergen/loadergen/runtime/zarr/zarrspec"
	"github.com/loadergen/loadergen/schema"
)

const (
	rtPath   = "github.com/loadergen/loadergen/runtime"
	implPath = "github.com/loadergen/loadergen/runtime/loaderimpl"
	npyPath  = "github.com/loadergen/loadergen/runtime/npy"
	randPath = "math/rand/v2"
)

// newEmitter returns the emitter of p's loader.
func newEmitter(p *Plan) *emitter {
	g := &emitter{ds: p.Dataset, rp: p.Runtime, n: newNames(p.Dataset)}
	for _, k := range g.rp.Keys {
		g.keys = append(g.keys, g.emitKey(k))
	}
	return g
}

// Generate emits the gofmt'd Go source of the loader for p. source is the
// schema's path as the header should name it (relative to the output file,
// slash-separated); it is quoted if it holds anything unusual.
//
// The file holds, in order, the declarations of the emitters below; each
// emitter's comment shows what it renders for a dataset named CellMap.
func Generate(p *Plan, source string) ([]byte, error) {
	g := newEmitter(p)
	f := jen.NewFile(g.ds.Package)
	f.ImportName(rtPath, "runtime")
	f.ImportName(implPath, "loaderimpl")
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
		g.start,
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
	if g.ds.Tiles != nil {
		g.tiles(f)
	}
	if g.ds.Records != nil {
		g.records(f)
	}
	if g.filesBacked() || g.ds.Crops != nil || g.ds.Tiles != nil || g.ds.Records != nil {
		storageDrivers(f)
	}
	out, err := render(f)
	if err != nil {
		return nil, fmt.Errorf("render %s loader: %w", g.ds.Name, err)
	}
	return out, nil
}

// The storage drivers a loader that opens data roots links, so that each
// of its roots may be an s3:// or https:// URL (docs/REMOTE.md).
const (
	s3DriverPath    = "github.com/loadergen/loadergen/runtime/storage/s3"
	httpsDriverPath = "github.com/loadergen/loadergen/runtime/storage/https"
)

// storageDrivers renders the imports that link the storage drivers into
// the program:
//
//	import (
//		_ "github.com/loadergen/loadergen/runtime/storage/https"
//		_ "github.com/loadergen/loadergen/runtime/storage/s3"
//	)
func storageDrivers(f *jen.File) { f.Anon(httpsDriverPath, s3DriverPath) }

// render returns f's gofmt'd source, imports grouped as goimports groups
// them.
func render(f *jen.File) ([]byte, error) {
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, err
	}
	return groupImports(buf.Bytes())
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
	missing    volumespec.Missing
	arrayDType runtime.DType
	normalize  *zarrspec.Affine
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

// rt refers to name in runtime, the package of the loader's users: the
// types in the generated API (Options, Stats, Tensor, Batch) and the
// plan's.
func (g *emitter) rt(name string) *jen.Statement { return jen.Qual(rtPath, name) }

// impl refers to name in runtime/loaderimpl, the package only generated
// code calls: the engine and the helpers of the emitted bodies.
func (g *emitter) impl(name string) *jen.Statement { return jen.Qual(implPath, name) }

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
