// Package envswitch is the one rule for loadergen's on/off environment
// variables: "1" or "true" is on, "0" or "false" is off, empty is unset,
// and anything else is an error naming the variable. The runtime reads
// them; internal/testenv/gputest, which the runtime's own tests import and which
// therefore cannot import the runtime, reads RequireGPU through it too.
package envswitch

import "fmt"

// Names of the switches (runtime.RequireGPUEnv and runtime.CUDAGraphsEnv).
const (
	RequireGPU = "LOADERGEN_REQUIRE_GPU" // demand the GPU: no CPU fallback, no skipped GPU test
	CUDAGraphs = "LOADERGEN_CUDA_GRAPHS" // launch each batch's copies as CUDA graphs
)

// Read reads value, the variable name's: set reports whether it says
// anything, on what it says.
func Read(name, value string) (on, set bool, err error) {
	switch value {
	case "":
		return false, false, nil
	case "1", "true":
		return true, true, nil
	case "0", "false":
		return false, true, nil
	}
	return false, false, fmt.Errorf("environment %s=%q: want 1 or 0", name, value)
}
