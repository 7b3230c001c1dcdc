//go:build cuda

package loaderimpl

import (
	"errors"
	"fmt"
	"time"

	"gorgonia.org/cu"
)

// slotState is where a slot's copies stand. A slot goes
//
//	idle --filled: copies issued--> copying --copies complete, times counted--> idle
//
// copying starts as soon as the first copy is queued, even if a later one
// fails to queue: a queued copy reads the host memory until it completes,
// so the slot must not be refilled before then.
type slotState uint8

const (
	// idle: no copy of the slot is outstanding and its times are counted;
	// workers may refill its host memory.
	idle slotState = iota
	// copying: copies were queued; the host memory may still be read and
	// their times are not yet in the stats.
	copying
)

// cudaSlot is one staging slot's host and device memory, its events and its
// state. Owned by the CUDA goroutine.
type cudaSlot struct {
	host   []byte       // pinned
	device cu.DevicePtr // SlotBytes; key k at plan.Keys[k].Offset
	state  slotState
	start  []cu.Event // per stream: before the slot's copies on it
	ready  []cu.Event // per stream: after the slot's copies on it
	key    []cu.Event // per key: after its copy, for runtime.Batch.WaitKey
	// done holds the events runtime.Batch.Done recorded on the consumer's streams
	// since the last copies; the next copies into the device buffers wait
	// for every one of them. The slice keeps its events for reuse.
	done  []cu.Event
	nDone int
	batch int // batch number of the last copies, for the trace
	// graphs holds, per stream, the executable graph of a full batch's
	// start record, copies, key records and ready record; nil when the
	// backend issues its copies call by call.
	graphs []cudaGraph
	// untimed marks, per stream, the last copies as ones whose time is
	// not to be measured (launch sets it when a graph launch fails; issue
	// clears it). Allocated at the slot's first failed launch.
	untimed []bool
}

// growthReserve is the part of the device's memory (1/growthReserve) that
// an auto ring leaves free as it adds slots: the model may still be
// allocating while the first epochs run.
const growthReserve = 8

// addSlot allocates one more staging slot, when free device memory holds
// it beside the growth reserve, with its graphs when the backend launches
// graphs: the ring of an auto-depth loader deepening, or starting deeper
// than its first two slots.
func (c *cudaBackend) addSlot() error {
	s := len(c.slots)
	if s == cap(c.slots) {
		return fmt.Errorf("cuda backend: slot %d is past the ring's bound of %d", s, cap(c.slots))
	}
	free, total, err := cu.MemInfo()
	if err != nil {
		return fmt.Errorf("device memory: %w", err)
	}
	if reserve := total / growthReserve; free < c.plan.SlotBytes+reserve {
		return fmt.Errorf("a staging slot needs %s of device memory and %s stays free for other work, but only %s of %s is free",
			mib(c.plan.SlotBytes), mib(reserve), mib(free), mib(total))
	}
	c.slots = c.slots[:s+1]
	err = c.slots[s].alloc(c.plan.SlotBytes, len(c.streams), len(c.plan.Keys))
	if err == nil && c.graphs {
		err = c.makeGraphs(s)
	}
	if err != nil {
		// Nothing of a slot the ring does not get stays allocated: under
		// memory pressure its pinned host memory matters most.
		err = errors.Join(err, c.slots[s].free())
		c.slots[s] = cudaSlot{}
		c.slots = c.slots[:s]
	}
	return err
}

// alloc allocates a slot's memory and events; on failure the slot holds what
// was made, for release. The host waits on start and ready (reuse, Sync),
// so they block instead of spinning a core; key events are only waited on
// by streams, so they carry no timing.
func (sl *cudaSlot) alloc(bytes int64, streams, keys int) error {
	var err error
	if sl.host, err = pinnedAlloc(bytes); err != nil {
		return err
	}
	if sl.device, err = cu.MemAlloc(bytes); err != nil {
		return fmt.Errorf("cuMemAlloc(%d bytes): %w", bytes, err)
	}
	for _, ev := range []struct {
		dst   *[]cu.Event
		n     int
		flags cu.EventFlags
	}{
		{&sl.start, streams, cu.BlockingSyncEvent},
		{&sl.ready, streams, cu.BlockingSyncEvent},
		{&sl.key, keys, cu.DisableTiming},
	} {
		for range ev.n {
			e, err := cu.MakeEvent(ev.flags)
			if err != nil {
				return fmt.Errorf("create event: %w", err)
			}
			*ev.dst = append(*ev.dst, e)
		}
	}
	return nil
}

// free destroys what alloc and makeGraphs made of the slot: its graphs,
// events, device and pinned host memory. Its copies must be complete and
// no consumer kernel may read its buffers any more.
func (sl *cudaSlot) free() error {
	var errs []error
	for _, g := range sl.graphs {
		errs = append(errs, g.destroy())
	}
	sl.graphs = nil
	for _, evs := range [][]cu.Event{sl.start, sl.ready, sl.key, sl.done} {
		for i := range evs {
			errs = append(errs, cu.DestroyEvent(&evs[i]))
		}
	}
	if sl.device != 0 {
		errs = append(errs, cu.MemFree(sl.device))
	}
	errs = append(errs, pinnedFree(sl.host))
	return errors.Join(errs...)
}

// settleMode is what settle does about copies still running.
type settleMode int

const (
	ifDone    settleMode = iota // nothing: settle only if they are done
	waitStall                   // wait for them, as host stall: the loader needs the slot
	waitAsked                   // wait for them, not as stall: the consumer asked (Sync)
)

// settle moves slot s from copying to idle once its copies are complete,
// counting their device time; mode says whether to wait for them. A time
// that cannot be measured is lost, never an error: the copies completed,
// and the slot must be refilled.
func (c *cudaBackend) settle(s int, mode settleMode) error {
	sl := &c.slots[s]
	if sl.state != copying {
		return nil
	}
	if mode != ifDone {
		t0 := time.Now()
		for _, ev := range sl.ready {
			if err := ev.Synchronize(); err != nil {
				return fmt.Errorf("wait for copies: %w", err)
			}
		}
		if mode == waitStall {
			c.stats.stall.Add(int64(time.Since(t0)))
		}
	} else {
		for _, ev := range sl.ready {
			switch err := ev.Query(); {
			case errors.Is(err, cu.NotReady):
				return nil
			case err != nil:
				return fmt.Errorf("query copies: %w", err)
			}
		}
	}
	sl.state = idle
	for i := range sl.ready {
		if !c.countCopy(sl, i) {
			c.stats.lost.Add(1)
		}
	}
	return nil
}

// countCopy adds the device time of slot sl's last copies on stream i to
// the stats, and to the trace, and reports whether it could: not when
// launch marked them untimed, nor when the driver fails to time them (an
// error about the events, not the copies, which completed).
func (c *cudaBackend) countCopy(sl *cudaSlot, i int) bool {
	if sl.untimed != nil && sl.untimed[i] {
		return false
	}
	ms, err := sl.start[i].Elapsed(sl.ready[i])
	if err != nil {
		return false
	}
	d := time.Duration(ms * 1e6)
	c.stats.copy[i].Add(int64(d))
	if c.trace != nil {
		if at, err := c.origin.Elapsed(sl.start[i]); err == nil {
			c.trace.slice(streamTrack+i, "copy", c.originAt.Add(time.Duration(at*1e6)), d, sl.batch, 0, 0)
		}
	}
	return true
}

// recordDone records an event on the consumer's stream st for slot s,
// reusing the slot's events and making one more only for a stream more
// than it ever had.
func (c *cudaBackend) recordDone(s int, st cu.Stream) error {
	sl := &c.slots[s]
	if sl.nDone == len(sl.done) {
		ev, err := cu.MakeEvent(cu.DisableTiming | cu.BlockingSyncEvent)
		if err != nil {
			return fmt.Errorf("create done event: %w", err)
		}
		sl.done = append(sl.done, ev)
	}
	if err := sl.done[sl.nDone].Record(st); err != nil {
		return fmt.Errorf("record done event: %w", err)
	}
	sl.nDone++
	return nil
}
