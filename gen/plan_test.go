package gen

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/schema"
)

// planOf parses a schema of the given keys (under inputs) and extra
// top-level lines, and plans it with o.
func planOf(t *testing.T, keys, extra string, o Overrides) (*Plan, error) {
	t.Helper()
	src := "version: 1\npackage: p\nname: P\nbatch_size: 16\n" + extra + "inputs:\n" + keys
	ds, err := schema.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return NewPlan(ds, o)
}

// setting returns the row of schema.Settings named name.
func setting(t *testing.T, name string) schema.Setting {
	t.Helper()
	i := slices.IndexFunc(schema.Settings, func(s schema.Setting) bool { return s.Name() == name })
	if i < 0 {
		t.Fatalf("no setting %q", name)
	}
	return schema.Settings[i]
}

// flags returns the overrides of name=value pairs, as flags give them.
func flags(t *testing.T, pairs ...string) Overrides {
	t.Helper()
	var o Overrides
	for _, pair := range pairs {
		name, value, _ := strings.Cut(pair, "=")
		s := setting(t, name)
		if err := o.Set(s, value, "flag -"+s.Flag()); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

// TestDecision: use_streams = cuda AND batch_size >= min AND batch_mib >= min
// AND max_streams > 1, and num_streams = min(max_streams, keys) when on.
func TestDecision(t *testing.T) {
	const keys = "  a: {shape: [1024, 1024], dtype: float32}\n  b: {shape: [1024], dtype: uint8}\n  c: {shape: [], dtype: int64}\n" // 64.0 MiB a batch
	tests := []struct {
		name    string
		extra   string
		o       Overrides
		streams bool
		num     int
		reason  string
	}{
		{"cpu", "", Overrides{}, false, 1, "device is cpu"},
		{"small memory", "device: cuda\n", Overrides{}, false, 1, "batch memory 64.0 MiB < 100 MiB"},
		{"small batch", "device: cuda\n", flags(t, "min_batch_size=32", "min_batch_memory_mb=1"), false, 1, "batch size 16 < 32"},
		{"one stream by default", "device: cuda\n", flags(t, "min_batch_memory_mb=64"), false, 1, "batch size 16 >= 8 and batch memory 64.0 MiB >= 64 MiB, but max_streams is 1"},
		{"on", "device: cuda\n", flags(t, "min_batch_memory_mb=64", "max_streams=4"), true, 3, "batch size 16 >= 8 and batch memory 64.0 MiB >= 64 MiB"},
		{"on, capped", "device: cuda:1\nstreams: {min_batch_memory_mb: 0, max_streams: 2}\n", Overrides{}, true, 2, "batch size 16 >= 8 and batch memory 64.0 MiB >= 0 MiB"},
		{"boundary", "device: cuda\n", flags(t, "min_batch_size=16", "min_batch_memory_mb=64.01", "max_streams=4"), true, 3, "batch size 16 >= 16 and batch memory 64.0 MiB >= 64.01 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := planOf(t, keys, tt.extra, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			rp := p.Runtime
			if rp.UseStreams != tt.streams || rp.NumStreams != tt.num || rp.Reason != tt.reason {
				t.Errorf("streams %v x %d (%q); want %v x %d (%q)", rp.UseStreams, rp.NumStreams, rp.Reason, tt.streams, tt.num, tt.reason)
			}
		})
	}
}

// TestAssignment: round robin by file order; balanced by bytes descending
// (ties in file order) onto the emptiest stream (ties: lowest index).
func TestAssignment(t *testing.T) {
	const keys = "  a: {shape: [10], dtype: uint8}\n  b: {shape: [40], dtype: uint8}\n  c: {shape: [30], dtype: uint8}\n" +
		"  d: {shape: [30], dtype: uint8}\n  e: {shape: [20], dtype: uint8}\n"
	tests := []struct {
		assign, max string
		want        []int
	}{
		{"round_robin", "2", []int{0, 1, 0, 1, 0}},
		{"round_robin", "3", []int{0, 1, 2, 0, 1}},
		{"round_robin", "64", []int{0, 1, 2, 3, 4}},
		// b 40 -> s0; c 30 -> s1; d 30 -> s1 (30 < 40), now 60;
		// e 20 -> s0, now 60; a 10 -> s0 (a tie: the lowest index).
		{"balanced", "2", []int{0, 0, 1, 1, 0}},
		// b 40 -> s0; c 30 -> s1; d 30 -> s2; e 20 -> s1 (30 = 30:
		// the lowest index), now 50; a 10 -> s2 (30).
		{"balanced", "3", []int{2, 0, 1, 2, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.assign+"/"+tt.max, func(t *testing.T) {
			extra := fmt.Sprintf("device: cuda\nstreams: {min_batch_memory_mb: 0, max_streams: %s, assign: %s}\n", tt.max, tt.assign)
			p, err := planOf(t, keys, extra, Overrides{})
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, k := range p.Runtime.Keys {
				got = append(got, k.Stream)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("streams (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSizes: sample_bytes = C * prod(S) * e (a scalar is one element, a
// target opting out of the class axis has none), batch = 16 samples,
// slots aligned to 256 bytes.
func TestSizes(t *testing.T) {
	src := "version: 1\npackage: p\nname: P\nbatch_size: 16\nclasses: [x, y, z]\n" +
		"inputs:\n  img: {shape: [2, 3], dtype: float16}\n" +
		"targets:\n  mask: {shape: [2, 3], dtype: bool}\n  w: {shape: [2, 3], dtype: float32, class_axis: false}\n  y: {shape: [], dtype: int64, class_axis: false}\n"
	ds, err := schema.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(ds, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	type size struct {
		Shape         []int
		Sample, Batch int64
		Offset        int64
	}
	var got []size
	for _, k := range p.Runtime.Keys {
		got = append(got, size{k.Shape, k.SampleBytes, k.BatchBytes, k.Offset})
	}
	want := []size{
		{[]int{2, 3}, 12, 192, 0},
		{[]int{3, 2, 3}, 18, 288, 256},
		{[]int{2, 3}, 24, 384, 768},
		{[]int{}, 8, 128, 1280},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sizes (-want +got):\n%s", diff)
	}
	if p.Runtime.BatchBytes != 192+288+384+128 || p.Runtime.SlotBytes != 1536 {
		t.Errorf("batch %d bytes, slot %d; want 992 and 1536", p.Runtime.BatchBytes, p.Runtime.SlotBytes)
	}
}

// TestPlanErrorsArePositioned: plan-stage errors point into the schema.
func TestPlanErrorsArePositioned(t *testing.T) {
	for _, tt := range []struct {
		extra string
		o     Overrides
		want  string
	}{
		{"loader: {prefetch: 3, max_staging_mb: 1}\n", Overrides{}, "p.yaml:5:39: staging needs 4 slots (prefetch 3 + 1) x 64.0 MiB"},
		{"loader: {prefetch: 3}\n", flags(t, "max_staging_mb=1"), "p.yaml:5:20: staging needs 4 slots"},
		{"", flags(t, "max_staging_mb=1"), "p.yaml:4:13: prefetch auto, at its least: staging needs 2 slots (prefetch 1 + 1)"},
		// The override replaces the schema's limit: not there, at the batch size.
		{"loader: {max_staging_mb: 100000}\n", flags(t, "max_staging_mb=1"), "p.yaml:4:13: prefetch auto, at its least: staging needs 2 slots (prefetch 1 + 1)"},
		{"", flags(t, "max_streams=0"), "flag -max-streams: max_streams must be between 1 and 64, got 0"},
	} {
		_, err := planOf(t, "  a: {shape: [1024, 1024], dtype: float32}\n  b: {shape: [1024], dtype: uint8}\n  c: {shape: [], dtype: int64}\n", tt.extra, tt.o)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%q %+v: %v\nwant %s...", tt.extra, tt.o, err, tt.want)
		}
	}
}

// TestSettingsOrigins: each setting says where it came from.
func TestSettingsOrigins(t *testing.T) {
	env, err := EnvOverrides(func(k string) string {
		return map[string]string{runtime.EnvMinBatchSize: "4", runtime.EnvMaxStreams: "2"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := planOf(t, "  a: {shape: [4], dtype: uint8}\n", "device: cuda\nstreams: {assign: balanced}\n", flags(t, "max_streams=3").Over(env))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"device=cuda (schema p.yaml:5:9)",
		"min_batch_size=4 (environment MIN_BATCH_SIZE_FOR_STREAMS)",
		"min_batch_memory_mb=100 (default)",
		"max_streams=3 (flag -max-streams)",
		"assign=balanced (schema p.yaml:6:19)",
		"max_staging_mb=16384 (default)",
	}
	var got []string
	for _, s := range p.settings() {
		got = append(got, fmt.Sprintf("%s=%s (%s)", s.Name, s.Value, s.From))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	stale := p.StaleSettings("device=cuda min_batch_size=4 min_batch_memory_mb=100 max_streams=4 assign=balanced max_staging_mb=16384")
	if len(stale) != 1 || !strings.HasPrefix(stale[0], "max_streams: the file was generated with 4, this run gives 3 (flag -max-streams)") {
		t.Errorf("stale settings %q", stale)
	}
}

// TestOverridesCheck: NewPlan applies the schema's rule of every overridden
// setting, and the error names where the value came from and the setting;
// Set refuses text that is not a value of the setting's type.
func TestOverridesCheck(t *testing.T) {
	for _, tt := range []struct {
		flag, want string
	}{
		{"min_batch_size=0", "flag -min-batch-size: min_batch_size must be >= 1, got 0"},
		{"min_batch_memory_mb=-1", "flag -min-batch-memory-mb: min_batch_memory_mb must be >= 0, got -1"},
		{"max_streams=65", "flag -max-streams: max_streams must be between 1 and 64, got 65"},
		{"max_staging_mb=0", "flag -max-staging-mb: max_staging_mb must be a finite number > 0, got 0"},
		{"max_staging_mb=inf", "flag -max-staging-mb: max_staging_mb must be a finite number > 0, got +Inf"},
	} {
		_, err := planOf(t, "  a: {shape: [4], dtype: uint8}\n", "", flags(t, tt.flag))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %s", tt.flag, err, tt.want)
		}
	}
	for _, tt := range []struct {
		setting, text, want string
	}{
		{"assign", "balancd", `must be round_robin or balanced, got "balancd"`},
		{"device", "gpu", `unknown device "gpu" (want cpu, cuda or cuda:N with N >= 0)`},
		{"max_streams", "many", "not an integer"},
	} {
		var o Overrides
		if err := o.Set(setting(t, tt.setting), tt.text, "flag"); err == nil || err.Error() != tt.want {
			t.Errorf("Set %s %q: %v, want %s", tt.setting, tt.text, err, tt.want)
		}
	}
}

// TestPlanOfHandBuiltDataset: a dataset that did not come through
// schema.Parse, with a key too large for int64 bytes, gets an error rather
// than a plan or a panic.
func TestPlanOfHandBuiltDataset(t *testing.T) {
	ds := schema.Defaults()
	ds.File, ds.Package, ds.Name, ds.BatchSize = "p.yaml", "p", "P", math.MaxInt32
	ds.Keys = []schema.Key{{Name: "a", GoName: "A", Shape: []int{1 << 30}, DType: runtime.Float64}}
	_, err := NewPlan(&ds, Overrides{})
	const want = `key "a": batch bytes overflow int64, which schema.Parse rejects: the dataset did not come through it`
	if err == nil || err.Error() != want {
		t.Errorf("NewPlan: %v, want %s", err, want)
	}
}

// TestHandBuiltSettings: NewPlan checks the settings of a Dataset built in
// code, which did not come through schema.Parse's checks, and says where
// each came from; an override replaces a bad value.
func TestHandBuiltSettings(t *testing.T) {
	base := schema.Defaults()
	base.File, base.Package, base.Name, base.BatchSize = "p.yaml", "p", "P", 4
	base.Keys = []schema.Key{{Name: "a", GoName: "A", Shape: []int{4}, DType: runtime.Uint8}}
	for _, tt := range []struct {
		name   string
		change func(*schema.Dataset)
		o      Overrides
		want   string
	}{
		{"assign", func(ds *schema.Dataset) { ds.Streams.Assign = schema.Assign(2) }, Overrides{}, `p.yaml: streams.assign: must be round_robin or balanced, got "Assign(2)"`},
		{"zero", func(ds *schema.Dataset) { ds.Streams = schema.Streams{} }, Overrides{}, "p.yaml: streams.min_batch_size: must be >= 1, got 0"},
		{"overridden", func(ds *schema.Dataset) { ds.Streams.Assign = schema.Assign(2) }, flags(t, "assign=balanced"), ""},
	} {
		ds := base
		tt.change(&ds)
		p, err := NewPlan(&ds, tt.o)
		switch {
		case tt.want != "":
			if err == nil || err.Error() != tt.want {
				t.Errorf("%s: %v, want %s", tt.name, err, tt.want)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case p.Dataset.Streams.Assign != schema.Balanced || p.From["assign"] != "flag -assign":
			t.Errorf("%s: assign %v from %q", tt.name, p.Dataset.Streams.Assign, p.From["assign"])
		}
	}
	ds := base
	ds.Streams.MaxStreams = 2
	p, err := NewPlan(&ds, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if p.From["max_streams"] != "schema p.yaml" || p.From["min_batch_size"] != "default" {
		t.Errorf("origins %v: want the dataset's max_streams, the default min_batch_size", p.From)
	}
}

// TestRaggedLengths: each ragged key is followed by its lengths key (int32,
// one per sample, its role, stream and priority), which the batch bytes
// count but the stream count and assignment do not.
func TestRaggedLengths(t *testing.T) {
	const keys = "  a: {shape: [64], dtype: float32, ragged: true}\n  b: {shape: [8], dtype: uint8}\n  c: {shape: [32, 2], dtype: int16, ragged: true}\n"
	p, err := planOf(t, keys, "device: cuda\nstreams: {min_batch_memory_mb: 0, max_streams: 8, assign: balanced, priority: {c: high}}\n", Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		Name, LengthsOf string
		Ragged          bool
		DType           runtime.DType
		Shape           []int
		Stream          int
		Priority        runtime.Priority
		BatchBytes      int64
	}
	var got []key
	for _, k := range p.Runtime.Keys {
		got = append(got, key{k.Name, k.LengthsOf, k.Ragged, k.DType, k.Shape, k.Stream, k.Priority, k.BatchBytes})
	}
	// Three streams for three keys; balanced: a (4096) -> s0, c (2048) -> s1, b (128) -> s2.
	want := []key{
		{"a", "", true, runtime.Float32, []int{64}, 0, runtime.Normal, 4096},
		{"a.lengths", "a", false, runtime.Int32, []int{}, 0, runtime.Normal, 64},
		{"b", "", false, runtime.Uint8, []int{8}, 2, runtime.Normal, 128},
		{"c", "", true, runtime.Int16, []int{32, 2}, 1, runtime.High, 2048},
		{"c.lengths", "c", false, runtime.Int32, []int{}, 1, runtime.High, 64},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	if p.Runtime.NumStreams != 3 || p.Runtime.BatchBytes != 4096+64+128+2048+64 {
		t.Errorf("%d streams, %d batch bytes", p.Runtime.NumStreams, p.Runtime.BatchBytes)
	}
}

// TestSlotLimit: a plan whose staging slot is over sizes.MaxSlotBytes is
// refused at the batch size, not generated into a loader that cannot
// start; one at the limit is planned.
func TestSlotLimit(t *testing.T) {
	const extra = "loader: {max_staging_mb: 1000000000000}\n"
	// 16 x 2^42 = 2^46 bytes: the limit.
	if _, err := planOf(t, "  a: {shape: [4398046511104], dtype: uint8}\n", extra, Overrides{}); err != nil {
		t.Fatalf("a slot at the limit: %v", err)
	}
	// 16 x 2^43 = 2^47 bytes.
	_, err := planOf(t, "  a: {shape: [8796093022208], dtype: uint8}\n", extra, Overrides{})
	want := "p.yaml:4:13: a batch of 140737488355328 bytes is more than a loader stages at once (70368744177664 bytes, 64 TiB): shrink the batch or its keys"
	if err == nil || err.Error() != want {
		t.Fatalf("NewPlan: %v, want %q", err, want)
	}
}

// TestTableSaysWhatRuns: the plan's first lines name the schema's device and,
// for a CUDA device, that the CUDA backend runs only in a -tags cuda binary
// on a machine with a GPU (the plan of a CPU device says nothing of it).
func TestTableSaysWhatRuns(t *testing.T) {
	for _, c := range []struct {
		device, want string
	}{
		{"cpu", "P: batch 16, device cpu\n\nsettings:\n"},
		{"cuda", "P: batch 16, device cuda\n" + cudaBackendNote + "\n\nsettings:\n"},
		{"cuda:1", "P: batch 16, device cuda:1\n" + cudaBackendNote + "\n\nsettings:\n"},
	} {
		p, err := planOf(t, "  a: {shape: [4], dtype: uint8}\n", "device: "+c.device+"\n", Overrides{})
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		if err := p.WriteTable(&out); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), c.want) {
			t.Errorf("device %s: the plan starts\n%s\nwant\n%s", c.device, out.String()[:min(len(out.String()), len(c.want)+40)], c.want)
		}
	}
}
