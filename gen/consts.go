package gen

import (
	"fmt"
	"strconv"

	"github.com/dave/jennifer/jen"

	"github.com/loadergen/loadergen/runtime"
)

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
	if l.OnError != runtime.OnErrorFail {
		loader = append(loader, field{"OnError", g.rt(constName("OnError", l.OnError))})
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
