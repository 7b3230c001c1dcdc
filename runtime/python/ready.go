//go:build cgo

package python

/*
#include "abi.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/loadergen/loadergen/runtime"
)

// The Go halves of ready.c's hot path: the pump that queues an epoch's
// batches for lg_next and takes back the slots Python released, and what
// lg_next, lg_take and lg_release leave to Go.

// pumpWait is the slice in which the pump waits for a batch, or for Python
// to release a slot, before it looks again whether it was stopped.
const pumpWait = 50 * time.Millisecond

// pump runs epoch r for Python: it takes the batches from the cursor as
// they are ready, keeps each and queues it, and gives back the slots whose
// last hold Python released, until the epoch ends, fails or is stopped;
// then it closes the cursor. Python's waits in lg_next are the loop's time
// in the loader (Stats.InLoader).
func (h *handle) pump(ctx context.Context, r *epochRun) {
	r.err = h.queue(ctx, r.cur)
	r.cur.Waited(time.Duration(C.lgq_take_waited(h.q)))
	C.lgq_finish(h.q)
	h.takeReturned() // those returned before lgq_finish; later ones come through lgSlotReleased
	r.cur.Close()
	close(r.done)
}

// queue is the pump's loop: what ended it, nil at the epoch's end.
func (h *handle) queue(ctx context.Context, cur *runtime.Cursor) error {
	for {
		cur.Waited(time.Duration(C.lgq_take_waited(h.q)))
		h.takeReturned()
		stuck, err := cur.Advance()
		switch {
		case err != nil:
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		case stuck:
			// Python holds every slot: wait outside Go for it to release
			// one (or for a stop).
			C.lgq_await_returned(h.q, C.int64_t(pumpWait/time.Millisecond))
			continue
		}
		b, err := cur.Next(pumpWait)
		switch {
		case errors.Is(err, runtime.ErrNotYet):
			continue
		case err != nil:
			return err
		case b == nil:
			return nil
		}
		b.Keep() // for Python: released with the last of its holds
		h.kept.Add(1)
		C.lgq_push(h.q, h.slot(b).c)
	}
}

// takeReturned gives back the slots whose last hold Python released while
// the pump ran.
func (h *handle) takeReturned() {
	for c := C.lgq_returned(h.q); c != nil; c = C.lgq_returned(h.q) {
		if s, err := h.slotAt(int(c.slot)); err == nil {
			h.released(s)
		}
	}
}

// releaseQueued releases the batches queued that Python did not take,
// once the pump has stopped.
func (h *handle) releaseQueued() {
	for c := C.lgq_pop(h.q); c != nil; c = C.lgq_pop(h.q) {
		if s, err := h.slotAt(int(c.slot)); err == nil {
			h.release(s)
		}
	}
}

// release ends one hold of slot s's batch; the last gives the slot back.
func (h *handle) release(s *cslot) {
	if atomic.AddInt64(s.holds(), -1) == 0 {
		h.released(s)
	}
}

// released gives back slot s, whose last hold was released: its batch is
// marked done on the CUDA streams its device tensors were read on, and its
// Keep ends.
func (h *handle) released(s *cslot) {
	s.done()
	s.batch.Release()
	h.kept.Add(-1)
	if err := h.forgetIfDone(); err != nil {
		logger(h.module).Error("loadergen: closing the trace file", "err", err) // as the engine logs its release's errors
	}
}

// lgNextSlow answers lg_next when no batch is queued and no pump runs:
// the epoch's end (LG_END) or error, which stop it, or an error when no
// epoch runs.
//
//export lgNextSlow
func lgNextSlow(hid C.int64_t, out *C.lg_batch, errOut **C.char) C.int {
	out.logs = C.int64_t(pendingLogs())
	h, err := lookup(int64(hid))
	if err != nil {
		setErr(errOut, err)
		return C.LG_ERROR
	}
	h.mu.Lock()
	r := h.run
	h.mu.Unlock()
	switch {
	case r == nil && h.closed.Load():
		setErr(errOut, runtime.ErrClosed) // by close() on another thread
		return C.LG_ERROR
	case r == nil:
		setErr(errOut, errors.New("no epoch is running: call epoch() first"))
		return C.LG_ERROR
	}
	<-r.done // the queue says the pump has ended
	h.stopEpoch(true)
	if r.err != nil {
		setErr(errOut, r.err)
		return C.LG_ERROR
	}
	return C.LG_END
}

// lgTakeSlow is lg_take for what ready.c leaves to Go: a key out of range,
// and device tensors, for which the consumer's stream (DLPack's
// __dlpack__(stream)) waits for the key's copy to the device.
//
//export lgTakeSlow
func lgTakeSlow(hid, slot, key, stream C.int64_t, errOut **C.char) *C.DLManagedTensor {
	t, err := takeSlow(int64(hid), int(slot), int(key), uintptr(stream))
	if err != nil {
		setErr(errOut, err)
		return nil
	}
	return t
}

func takeSlow(hid int64, slot, key int, stream uintptr) (*C.DLManagedTensor, error) {
	h, err := lookup(hid)
	if err != nil {
		return nil, err
	}
	s, err := h.slotAt(slot)
	if err != nil {
		return nil, err
	}
	if key < 0 || key >= len(h.plan.Keys) {
		return nil, fmt.Errorf("key %d: the plan has %d keys", key, len(h.plan.Keys))
	}
	if err := s.waitOn(key, stream); err != nil {
		return nil, fmt.Errorf("key %q: %w", h.plan.Keys[key].Name, err)
	}
	atomic.AddInt64(s.holds(), 1)
	return s.tensor(key), nil
}

// lgSlotReleased is lg_release's way back into Go when it released the
// last hold of a slot while no pump runs.
//
//export lgSlotReleased
func lgSlotReleased(hid, slot C.int64_t) {
	if h, err := lookup(int64(hid)); err == nil {
		if s, err := h.slotAt(int(slot)); err == nil {
			h.released(s)
		}
	}
}

func init() {
	logs.told = func(waiting int) { C.lg_set_pending_logs(C.int64_t(waiting)) }
}
