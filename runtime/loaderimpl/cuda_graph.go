//go:build cuda

package loaderimpl

// gorgonia.org/cu v0.9.6 builds graphs but cannot instantiate or launch
// them, and has no event-record nodes, so the runtime calls the driver
// itself for the executable graphs of a slot's copies.

/*
#cgo LDFLAGS: -lcuda
#include <string.h>
#include <cuda.h>

// addCopy appends to g, after dep (when ndep is 1), a node copying n bytes
// of host memory src to device memory dst, in the current context.
static CUresult addCopy(CUgraphNode *node, CUgraph g, CUgraphNode *dep, size_t ndep,
		CUdeviceptr dst, const void *src, size_t n) {
	CUcontext ctx;
	CUresult r = cuCtxGetCurrent(&ctx);
	if (r != CUDA_SUCCESS) {
		return r;
	}
	CUDA_MEMCPY3D p;
	memset(&p, 0, sizeof p);
	p.srcMemoryType = CU_MEMORYTYPE_HOST;
	p.srcHost = src;
	p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	p.dstDevice = dst;
	p.WidthInBytes = n;
	p.Height = 1;
	p.Depth = 1;
	return cuGraphAddMemcpyNode(node, g, dep, ndep, &p, ctx);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// graphStep is one step of a slot's work on a stream: a copy of n bytes
// from host to device, or, when n is 0, recording event.
type graphStep struct {
	dst   cu.DevicePtr
	src   unsafe.Pointer // pinned host memory
	n     int64
	event cu.Event
}

// cudaGraph is an executable graph: the steps of one (slot, stream), built
// once, as a slot's addresses never change, and launched for each full
// batch with one driver call.
type cudaGraph struct {
	exec C.CUgraphExec
}

// errNoGraphs reports a driver without the graph calls the backend needs.
var errNoGraphs = errors.New("the driver does not support CUDA graphs of copies and event records")

// newGraph builds and instantiates the chain of steps, each after the one
// before.
func newGraph(steps []graphStep) (cudaGraph, error) {
	var g C.CUgraph
	if r := C.cuGraphCreate(&g, 0); r != C.CUDA_SUCCESS {
		return cudaGraph{}, graphError("cuGraphCreate", r)
	}
	defer C.cuGraphDestroy(g) // the executable graph keeps what it needs
	var prev C.CUgraphNode
	for i, st := range steps {
		var node C.CUgraphNode
		ndep := C.size_t(min(i, 1))
		var r C.CUresult
		if st.n > 0 {
			r = C.addCopy(&node, g, &prev, ndep, C.CUdeviceptr(st.dst), st.src, C.size_t(st.n))
		} else {
			r = C.cuGraphAddEventRecordNode(&node, g, &prev, ndep, cEvent(st.event))
		}
		if r != C.CUDA_SUCCESS {
			return cudaGraph{}, graphError(fmt.Sprintf("graph step %d of %d", i+1, len(steps)), r)
		}
		prev = node
	}
	var exec C.CUgraphExec
	if r := C.cuGraphInstantiateWithFlags(&exec, g, 0); r != C.CUDA_SUCCESS {
		return cudaGraph{}, graphError("cuGraphInstantiateWithFlags", r)
	}
	return cudaGraph{exec: exec}, nil
}

// launch queues the graph's steps on st.
func (g cudaGraph) launch(st cu.Stream) error {
	if r := C.cuGraphLaunch(g.exec, cStream(st)); r != C.CUDA_SUCCESS {
		return graphError("cuGraphLaunch", r)
	}
	return nil
}

// destroy frees the executable graph; launches already queued complete.
func (g cudaGraph) destroy() error {
	if g.exec == nil {
		return nil
	}
	return graphError("cuGraphExecDestroy", C.cuGraphExecDestroy(g.exec))
}

// graphError is nil for success, errNoGraphs for a driver without the
// call (CUDA_ERROR_NOT_FOUND, the driver stub's answer for a symbol the
// driver lacks, or CUDA_ERROR_NOT_SUPPORTED), and the call's name and code
// otherwise, as pinnedAlloc reports its own.
func graphError(call string, r C.CUresult) error {
	switch r {
	case C.CUDA_SUCCESS:
		return nil
	case C.CUDA_ERROR_NOT_FOUND, C.CUDA_ERROR_NOT_SUPPORTED:
		return fmt.Errorf("%s: %w", call, errNoGraphs)
	}
	return fmt.Errorf("%s: CUDA error %d", call, int(r))
}

// cEvent and cStream are the driver's handles inside cu's types, each a
// struct of the one handle (gorgonia.org/cu v0.9.6: event.go, stream.go).
func cEvent(e cu.Event) C.CUevent    { return *(*C.CUevent)(unsafe.Pointer(&e)) }
func cStream(s cu.Stream) C.CUstream { return *(*C.CUstream)(unsafe.Pointer(&s)) }

// These fail to compile if cu's types stop being exactly their handle.
var (
	_ = [1]struct{}{}[unsafe.Sizeof(cu.Event{})-unsafe.Sizeof(C.CUevent(nil))]
	_ = [1]struct{}{}[unsafe.Sizeof(cu.Stream{})-unsafe.Sizeof(C.CUstream(nil))]
)
