package runtime

import "testing"

// TestSummary: the start-up line says what runs, whatever the plan and
// the backend.
func TestSummary(t *testing.T) {
	tests := []struct {
		plan    Plan
		backend string
		want    string
	}{
		{Plan{BatchSize: 4, Device: "cpu", Reason: "device is cpu"}, "cpu", "batch 4 (0.0 MiB), streams off: device is cpu"},
		{Plan{BatchSize: 4, Device: "cpu", Reason: "device is cpu"}, "cuda", "batch 4 (0.0 MiB), one CUDA stream: the loader was generated for device cpu, which plans no streams (generate it for cuda to plan them)"},
		{Plan{BatchSize: 4, Device: "cuda", Reason: "batch size 4 < 8"}, "cuda", "batch 4 (0.0 MiB), streams off: batch size 4 < 8"},
		{Plan{BatchSize: 16, Device: "cuda", UseStreams: true, NumStreams: 2}, "cuda", "batch 16 (0.0 MiB), 2 CUDA streams"},
		{Plan{BatchSize: 16, Device: "cuda", UseStreams: true, NumStreams: 2}, "cpu", "batch 16 (0.0 MiB), the plan's 2 CUDA streams are not in use on the cpu backend"},
	}
	for _, tt := range tests {
		if got := tt.plan.Summary(tt.backend); got != tt.want {
			t.Errorf("Summary(%q) of %+v =\n %q, want\n %q", tt.backend, tt.plan, got, tt.want)
		}
	}
}
