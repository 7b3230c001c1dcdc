//go:build !cuda

package loaderimpl

import (
	"sync"

	"github.com/loadergen/loadergen/internal/devicename"
	"github.com/loadergen/loadergen/runtime"
)

// noCUDA logs, once per process, that a loader asked for CUDA in a build
// without it.
var noCUDA sync.Once

// newBackend returns the CPU backend: this build has no CUDA support. A plan
// or option that asks for CUDA is logged once per process and run on the
// CPU, or is an error when the caller requires the GPU.
func newBackend(c backendConfig) (backend, error) {
	if _, cuda, _ := devicename.Parse(c.device); cuda {
		if c.require {
			return nil, errGPURequired(c.device, runtime.CUDAUsable())
		}
		noCUDA.Do(func() {
			c.log.Warn("loadergen: CUDA backend not compiled in (build with -tags cuda); running on CPU", "device", c.device)
		})
	}
	return newCPUBackend(), nil
}
