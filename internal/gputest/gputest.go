// Package gputest is the rule for tests that need a CUDA device, so that
// the cuda-tagged tests pass on any machine: where this process cannot use
// CUDA (no driver, a driver that failed to initialize or is too old, no
// device) such a test is skipped with the reason, unless the run demands
// the GPU (RequireEnv), as a GPU machine's run should: then it fails.
//
// The runtime's own tests use it, so it imports nothing of the runtime:
// callers pass runtime.CUDAUsable's answer.
package gputest

import (
	"os"
	"testing"
)

// RequireEnv is runtime.RequireGPUEnv, the variable that demands the GPU,
// spelled out here because this package cannot import the runtime; the
// package's tests keep the two equal.
const RequireEnv = "LOADERGEN_REQUIRE_GPU"

// Need is the rule for a test that needs a CUDA device, called before the
// test touches one: why is runtime.CUDAUsable's answer. When it is not
// nil, Need skips tb giving why or, when RequireEnv is 1 or true (as the
// runtime reads it), fails tb giving why.
func Need(tb testing.TB, why error) {
	if why == nil {
		return
	}
	tb.Helper()
	if v := os.Getenv(RequireEnv); v == "1" || v == "true" {
		tb.Fatalf("%s=%s, but this test needs a CUDA device: %v", RequireEnv, v, why)
	}
	tb.Skipf("this test needs a CUDA device: %v (%s=1 makes that a failure)", why, RequireEnv)
}
