//go:build !cuda

package runtime

import (
	"strings"
	"testing"
)

// TestNoCUDABuild: a build without -tags cuda runs a CUDA plan on the CPU
// with one warning, and refuses to start it when the GPU is required.
func TestNoCUDABuild(t *testing.T) {
	if err := CUDAUsable(); err != errNoCUDABuild {
		t.Errorf("CUDAUsable() = %v, want %v", err, errNoCUDABuild)
	}
	p := testPlan(4, LoaderDefaults{})
	p.Device = "cuda:0"
	_, err := NewEngine(p, 8, Options{RequireGPU: true, Logger: quiet}, noFill)
	want := "cuda:0: the GPU is required (Options.RequireGPU or LOADERGEN_REQUIRE_GPU) but cannot be used: this build has no CUDA backend (build with -tags cuda)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("RequireGPU: NewEngine error %v\nwant one containing %s", err, want)
	}
	e := newTestEngine(t, p, 8, Options{}, nil)
	if got := collect(t, e, 0, 0); len(got) != 2 {
		t.Errorf("without RequireGPU the CPU ran %d batches, want 2", len(got))
	}
}
