//go:build !cuda

package loaderimpl

import (
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// TestNoCUDABuild: a build without -tags cuda runs a CUDA plan on the CPU
// with one warning per process, and refuses to start it when the GPU is
// required.
func TestNoCUDABuild(t *testing.T) {
	if err := runtime.CUDAUsable(); err == nil || err.Error() != "this build has no CUDA backend (build with -tags cuda)" {
		t.Errorf("CUDAUsable() = %v, want the build's reason", err)
	}
	p := testPlan(4, runtime.LoaderDefaults{})
	p.Device = "cuda:0"
	_, err := NewEngine(p, 8, runtime.Options{RequireGPU: true, Logger: quiet}, noFill)
	want := "cuda:0: the GPU is required (Options.RequireGPU or LOADERGEN_REQUIRE_GPU) but cannot be used: this build has no CUDA backend (build with -tags cuda)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("RequireGPU: NewEngine error %v\nwant one containing %s", err, want)
	}
	noCUDA = sync.Once{} // as if no loader of this process had asked for CUDA yet
	var log strings.Builder
	o := runtime.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))}
	for range 2 {
		e := newTestEngine(t, p, 8, o, nil)
		if got := collect(t, e, 0, 0); len(got) != 2 {
			t.Errorf("without RequireGPU the CPU ran %d batches, want 2", len(got))
		}
	}
	if n := strings.Count(log.String(), "level=WARN msg=\"loadergen: CUDA backend not compiled in (build with -tags cuda); running on CPU\" device=cuda:0"); n != 1 {
		t.Errorf("two loaders logged the warning %d times, want once:\n%s", n, log.String())
	}
}
