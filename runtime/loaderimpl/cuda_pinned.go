//go:build cuda

package loaderimpl

// gorgonia.org/cu has no pinned host allocation, so the runtime calls the
// driver itself. Pinned memory lets cuMemcpyHtoDAsync run as a true DMA
// copy, overlapping the workers and the consumer; pageable Go memory would
// be staged through a driver buffer and must never be handed to CUDA for
// asynchronous use.

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// pinnedAlloc returns n bytes of page-locked host memory.
//
// CU_MEMHOSTALLOC_PORTABLE makes the memory pinned for every CUDA context,
// so consumers that copy from the host views with their own context get DMA
// speed too. Write-combined memory is not asked for: consumers read the host
// views (RawData and the like) on the CPU, which write-combining makes slow.
func pinnedAlloc(n int64) ([]byte, error) {
	var p unsafe.Pointer
	if r := C.cuMemHostAlloc(&p, C.size_t(n), C.CU_MEMHOSTALLOC_PORTABLE); r != C.CUDA_SUCCESS {
		return nil, fmt.Errorf("cuMemHostAlloc(%d bytes): CUDA error %d", n, int(r))
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// pinnedFree releases memory from pinnedAlloc.
func pinnedFree(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if r := C.cuMemFreeHost(unsafe.Pointer(unsafe.SliceData(b))); r != C.CUDA_SUCCESS {
		return fmt.Errorf("cuMemFreeHost: CUDA error %d", int(r))
	}
	return nil
}
