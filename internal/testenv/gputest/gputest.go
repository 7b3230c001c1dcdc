// Package gputest is the rule for tests that need a CUDA device, so that
// the cuda-tagged tests pass on any machine: where this process cannot use
// CUDA (no driver, a driver that failed to initialize or is too old, no
// device) such a test is skipped with the reason, unless the run demands
// the GPU (envswitch.RequireGPU, as the runtime reads it), as a GPU
// machine's run should: then it fails.
//
// The runtime's own tests use it, so it imports nothing of the runtime:
// callers pass runtime.CUDAUsable's answer.
package gputest

import (
	"os"
	"testing"

	"github.com/loadergen/loadergen/internal/envswitch"
)

// Need is the rule for a test that needs a CUDA device, called before the
// test touches one: why is runtime.CUDAUsable's answer. When it is not
// nil, Need skips tb giving why or, when envswitch.RequireGPU is on,
// fails tb giving why.
func Need(tb testing.TB, why error) {
	if why == nil {
		return
	}
	tb.Helper()
	v := os.Getenv(envswitch.RequireGPU)
	if on, _, _ := envswitch.Read(envswitch.RequireGPU, v); on {
		tb.Fatalf("%s=%s, but this test needs a CUDA device: %v", envswitch.RequireGPU, v, why)
	}
	tb.Skipf("this test needs a CUDA device: %v (%s=1 makes that a failure)", why, envswitch.RequireGPU)
}
