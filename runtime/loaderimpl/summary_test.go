package loaderimpl

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// TestSummary: the start-up line says what runs, whatever the plan and
// the backend.
func TestSummary(t *testing.T) {
	tests := []struct {
		plan    runtime.Plan
		backend string
		want    string
	}{
		{runtime.Plan{BatchSize: 4, Device: "cpu", Reason: "device is cpu"}, "cpu", "batch 4 (0.0 MiB), streams off: device is cpu"},
		{runtime.Plan{BatchSize: 4, Device: "cpu", Reason: "device is cpu"}, "cuda", "batch 4 (0.0 MiB), one CUDA stream: the loader was generated for device cpu, which plans no streams (generate it for cuda to plan them)"},
		{runtime.Plan{BatchSize: 4, Device: "cuda", Reason: "batch size 4 < 8"}, "cuda", "batch 4 (0.0 MiB), streams off: batch size 4 < 8"},
		{runtime.Plan{BatchSize: 16, Device: "cuda", UseStreams: true, NumStreams: 2}, "cuda", "batch 16 (0.0 MiB), 2 CUDA streams"},
		{runtime.Plan{BatchSize: 16, Device: "cuda", UseStreams: true, NumStreams: 2}, "cpu", "batch 16 (0.0 MiB), the plan's 2 CUDA streams are not in use on the cpu backend"},
	}
	for _, tt := range tests {
		if got := summary(tt.plan, tt.backend); got != tt.want {
			t.Errorf("summary(%q) of %+v =\n %q, want\n %q", tt.backend, tt.plan, got, tt.want)
		}
	}
}

// TestGenerationEnv: a stream variable set as a loader runs is named in a
// warning with the value the loader was generated with; one set to that
// same value, or none, gives no warning.
func TestGenerationEnv(t *testing.T) {
	cuda := runtime.Plan{Device: "cuda", Streams: runtime.StreamSettings{MinBatchSize: 8, MinBatchMemoryMB: 100, MaxStreams: 4}}
	cpu := runtime.Plan{Device: "cpu"}
	tests := []struct {
		plan runtime.Plan
		env  map[string]string
		want []string
	}{
		{cuda, nil, nil},
		{cuda, map[string]string{runtime.EnvMaxStreams: "4", runtime.EnvMinBatchMemoryMB: "100.0"}, nil},
		{cuda, map[string]string{runtime.EnvMaxStreams: "2"}, []string{"environment MAX_CONCURRENT_CUDA_STREAMS=2 is read when the loader is generated (go generate), not when it runs: this loader was generated with max_streams=4; set it when you run go generate to change the plan"}},
		{cuda, map[string]string{runtime.EnvMinBatchSize: "x"}, []string{"environment MIN_BATCH_SIZE_FOR_STREAMS=x is read when the loader is generated (go generate), not when it runs: this loader was generated with min_batch_size=8; set it when you run go generate to change the plan"}},
		{cpu, map[string]string{runtime.EnvMinBatchMemoryMB: "1"}, []string{"environment MIN_BATCH_MEMORY_FOR_STREAMS_MB=1 is read when a loader is generated (go generate), and this one was generated for device cpu, where min_batch_memory_mb decides nothing"}},
	}
	for _, tt := range tests {
		got := generationEnv(tt.plan, func(k string) string { return tt.env[k] })
		if !slices.Equal(got, tt.want) {
			t.Errorf("plan on %s, environment %v:\n got %q\nwant %q", tt.plan.Device, tt.env, got, tt.want)
		}
	}
}

// TestLoaderWarnsOfGenerationEnv: a loader started with a stream variable
// in its environment logs the warning.
func TestLoaderWarnsOfGenerationEnv(t *testing.T) {
	t.Setenv(runtime.EnvMaxStreams, "3")
	var log strings.Builder
	p := testPlan(4, runtime.LoaderDefaults{})
	p.Device, p.Streams = "cuda", runtime.StreamSettings{MinBatchSize: 8, MinBatchMemoryMB: 100, MaxStreams: 4}
	newTestEngine(t, p, 8, runtime.Options{Device: "cpu", Logger: slog.New(slog.NewTextHandler(&log, nil))}, nil)
	if !strings.Contains(log.String(), "MAX_CONCURRENT_CUDA_STREAMS=3 is read when the loader is generated") {
		t.Errorf("no warning in the log:\n%s", log.String())
	}
}
