//go:build cuda

package loaderimpl

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/loadergen/loadergen/runtime"
)

type cudaOp uint8

const (
	opFilled cudaOp = iota
	opAddSlot
	opReuse
	opSettle
	opWait
	opWaitKey
	opSync
	opDone
	opToHost
	opClose
)

// cudaReq is one request to the CUDA goroutine.
type cudaReq struct {
	op     cudaOp
	slot   int
	n      int       // samples in the batch (filled)
	batch  int       // batch number (filled), for the trace
	stream cu.Stream // consumer's stream (wait, waitKey, done)
	key    int       // key to wait for (waitKey) or copy back (toHost)
	dst    []byte    // host destination (toHost)
}

func (c *cudaBackend) call(r cudaReq) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return runtime.ErrClosed
	}
	c.reqs <- r
	err := <-c.resp
	if r.op == opClose {
		c.closed = true
		close(c.reqs)
	}
	return err
}

func (c *cudaBackend) loop(slots, maxSlots int, started chan<- error) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	// The thread goes back to Go's pool without a (released) context current.
	defer cu.SetCurrentContext(cu.CUContext{})
	if err := c.start(slots, maxSlots); err != nil {
		started <- errors.Join(err, c.release())
		return
	}
	started <- nil
	for r := range c.reqs {
		err := c.serve(r)
		c.resp <- err
		if r.op == opClose {
			return
		}
	}
}

func (c *cudaBackend) serve(r cudaReq) error {
	switch r.op {
	case opFilled:
		return c.issue(r.slot, r.n, r.batch)
	case opAddSlot:
		return c.addSlot()
	case opReuse:
		return c.settle(r.slot, waitStall)
	case opSettle:
		for s := range c.slots {
			if err := c.settle(s, ifDone); err != nil {
				return err
			}
		}
	case opWait:
		for _, ev := range c.slots[r.slot].ready {
			if err := r.stream.Wait(ev, 0); err != nil {
				return fmt.Errorf("stream wait: %w", err)
			}
		}
	case opWaitKey:
		if err := r.stream.Wait(c.slots[r.slot].key[r.key], 0); err != nil {
			return fmt.Errorf("stream wait for key %q: %w", c.plan.Keys[r.key].Name, err)
		}
	case opSync:
		return c.settle(r.slot, waitAsked)
	case opDone:
		return c.recordDone(r.slot, r.stream)
	case opToHost:
		if err := c.settle(r.slot, waitAsked); err != nil {
			return err
		}
		k := c.plan.Keys[r.key]
		src := c.slots[r.slot].device + cu.DevicePtr(k.Offset)
		if err := cu.MemcpyDtoH(unsafe.Pointer(unsafe.SliceData(r.dst)), src, int64(len(r.dst))); err != nil {
			return fmt.Errorf("copy key %q to host: %w", k.Name, err)
		}
	case opClose:
		return c.release()
	}
	return nil
}
