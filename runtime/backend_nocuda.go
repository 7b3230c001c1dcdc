//go:build !cuda

package runtime

import (
	"log/slog"
	"sync"
)

// CUDACompiled reports whether this build has the CUDA backend (-tags
// cuda). A program may run on the CPU on purpose when it does not, rather
// than have the loader warn that a cuda plan runs there.
const CUDACompiled = false

// noCUDA logs, once per process, that a loader asked for CUDA in a build
// without it.
var noCUDA sync.Once

// newBackend returns the CPU backend: this build has no CUDA support. A plan
// or option that asks for CUDA is logged once per process and run on the
// CPU.
func newBackend(device string, _ int, _ Plan, _ int, log *slog.Logger, _ *counters, _ *tracer) (backend, error) {
	if _, cuda, _ := ParseDevice(device); cuda {
		noCUDA.Do(func() {
			log.Warn("loadergen: CUDA backend not compiled in (build with -tags cuda); running on CPU", "device", device)
		})
	}
	return cpuBackend{}, nil
}

// deviceBatch is empty without CUDA: batches live in host memory only.
type deviceBatch struct{}
