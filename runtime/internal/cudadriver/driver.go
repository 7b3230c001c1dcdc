//go:build cuda

package cudadriver

// The cuda build links the driver stub of internal/cudastub, which opens
// libcuda.so.1 at run time; these are its questions about what it found.

/*
#include <stdlib.h>
#include <cuda.h>
int loadergen_cuda_state(int *code, const char **detail);
int loadergen_cuda_has(const char *name);
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"gorgonia.org/cu"
)

// BackendCalls are the driver functions the CUDA backend calls, by the
// names cuda.h 11.8 gives their symbols: a driver that lacks one is too old
// for the backend, which then does not start (TestBackendCallsAreListed
// keeps the list inside internal/cudastub/symbols.txt).
var BackendCalls = []string{
	"cuDeviceGet", "cuDeviceGetName", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2",
	"cuCtxSetCurrent", "cuCtxGetStreamPriorityRange", "cuMemGetInfo_v2",
	"cuStreamCreateWithPriority", "cuStreamDestroy_v2", "cuStreamWaitEvent", "cuStreamSynchronize",
	"cuEventCreate", "cuEventDestroy_v2", "cuEventRecord", "cuEventSynchronize", "cuEventQuery", "cuEventElapsedTime",
	"cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoH_v2", "cuMemHostAlloc", "cuMemFreeHost",
}

// initErrors names the cuInit results a machine without a usable GPU gives.
var initErrors = map[int]string{
	C.CUDA_ERROR_NOT_INITIALIZED:                "CUDA_ERROR_NOT_INITIALIZED",
	C.CUDA_ERROR_NO_DEVICE:                      "CUDA_ERROR_NO_DEVICE",
	C.CUDA_ERROR_INVALID_DEVICE:                 "CUDA_ERROR_INVALID_DEVICE",
	C.CUDA_ERROR_OPERATING_SYSTEM:               "CUDA_ERROR_OPERATING_SYSTEM",
	C.CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:         "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	C.CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
	C.CUDA_ERROR_UNKNOWN:                        "CUDA_ERROR_UNKNOWN",
}

// Devices returns the number of CUDA devices, at least 1, or why this
// process cannot run the CUDA backend (runtime.CUDAUsable). It asks the driver once:
// what the driver found is fixed before main, when the stub loads it and
// gorgonia.org/cu calls cuInit.
var Devices = sync.OnceValues(func() (int, error) {
	var code C.int
	var detail *C.char
	switch C.loadergen_cuda_state(&code, &detail) {
	case 1:
		return 0, fmt.Errorf("no CUDA driver: %s", C.GoString(detail))
	case 2:
		name := initErrors[int(code)]
		if name == "" {
			name = fmt.Sprintf("error %d", int(code))
		}
		if code == C.CUDA_ERROR_NO_DEVICE {
			return 0, fmt.Errorf("no CUDA device (cuInit: %s)", name)
		}
		return 0, fmt.Errorf("the CUDA driver failed to initialize: cuInit returned %s (%d)", name, int(code))
	case 3:
		return 0, errors.New("the CUDA driver was not initialized")
	}
	for _, name := range BackendCalls {
		cs := C.CString(name)
		has := C.loadergen_cuda_has(cs) != 0
		C.free(unsafe.Pointer(cs))
		if !has {
			return 0, fmt.Errorf("the CUDA driver lacks %s, which the loader needs: it is too old, update the NVIDIA driver", name)
		}
	}
	n, err := cu.NumDevices()
	switch {
	case err != nil:
		return 0, fmt.Errorf("count CUDA devices: %w", err)
	case n == 0:
		return 0, errors.New("no CUDA device")
	}
	return n, nil
})
