//go:build cuda

package runtime

import (
	"errors"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"sync"
	"time"
	"unsafe"

	"gorgonia.org/cu"
)

// newBackend returns the CUDA backend for "cuda" and "cuda:N", and the CPU
// backend for "cpu". "cuda" is GPU localRank of the node (modulo the
// number of GPUs this process sees).
func newBackend(device string, localRank int, p Plan, slots int, log *slog.Logger, stats *counters, trace *tracer) (backend, error) {
	ordinal, cuda, err := ParseDevice(device)
	if err != nil || !cuda {
		return cpuBackend{}, err
	}
	if ordinal < 0 {
		n, err := cu.NumDevices()
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: no CUDA device (%v)", device, err)
		}
		ordinal = localRank % n
	}
	c := &cudaBackend{plan: p, ordinal: ordinal, stats: stats, trace: trace, reqs: make(chan cudaReq), resp: make(chan error)}
	started := make(chan error)
	go c.loop(slots, started)
	if err := <-started; err != nil {
		return nil, fmt.Errorf("%s: %w", device, err)
	}
	if trace != nil {
		for i := range c.streams {
			trace.meta("thread_name", streamTrack+i, fmt.Sprintf("CUDA stream %d (copies)", i))
		}
	}
	log.Info("loadergen: CUDA backend", "device", device, "ordinal", ordinal, "name", c.devName, "streams", len(c.streams),
		"batch_mib", fmt.Sprintf("%.1f", p.BatchMiB), "slots", slots)
	return c, nil
}

// cudaBackend stages batches in pinned host memory and copies each key to
// its slot's device buffer on the key's planned stream. Every CUDA call runs
// on one goroutine locked to its OS thread with the device's primary
// context current; other goroutines send it requests by value, so a batch
// costs no allocation.
type cudaBackend struct {
	plan    Plan
	ordinal int
	devName string
	stats   *counters // per-stream copy time goes here
	trace   *tracer   // nil unless tracing; a slice per stream per batch

	dev      cu.Device
	retained bool        // the primary context is retained
	streams  []cu.Stream // created once, with the keys' priorities
	slots    []cudaSlot

	mu     sync.Mutex // one request at a time; guards closed
	closed bool
	reqs   chan cudaReq
	resp   chan error
}

// cudaSlot is one staging slot's host and device memory and its events.
type cudaSlot struct {
	host   []byte       // pinned
	device cu.DevicePtr // SlotBytes; key k at plan.Keys[k].Offset
	start  []cu.Event   // per stream: before the slot's copies on it (timed)
	ready  []cu.Event   // per stream: the slot's copies on it are done (timed)
	issued time.Time    // when the last copies were issued, for the trace
	batch  int          // the batch they carried, for the trace
	done   cu.Event     // recorded by Batch.Done on the consumer's stream
	// copying: a copy was issued and the host memory may still be read.
	// timed: the last copies' times are in the stats.
	// waitDone: the next copy into the slot must wait for done.
	copying, timed, waitDone bool
}

type cudaOp uint8

const (
	opTransfer cudaOp = iota
	opReuse
	opWait
	opSync
	opDone
	opToHost
	opClose
)

// cudaReq is one request to the CUDA goroutine.
type cudaReq struct {
	op     cudaOp
	slot   int
	n      int       // samples in the batch (transfer)
	batch  int       // batch number (transfer), for the trace
	stream cu.Stream // consumer's stream (wait, done)
	key    int       // key to copy back (toHost)
	dst    []byte    // host destination (toHost)
}

func (c *cudaBackend) call(r cudaReq) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.reqs <- r
	err := <-c.resp
	if r.op == opClose {
		c.closed = true
		close(c.reqs)
	}
	return err
}

func (c *cudaBackend) loop(slots int, started chan<- error) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	// The thread goes back to Go's pool without a (released) context current.
	defer cu.SetCurrentContext(cu.CUContext{})
	if err := c.start(slots); err != nil {
		c.release()
		started <- err
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

// start makes the primary context current on this thread, checks device
// memory, and creates the streams, events and buffers.
func (c *cudaBackend) start(slots int) error {
	var err error
	if c.dev, err = cu.GetDevice(c.ordinal); err != nil {
		return fmt.Errorf("get device: %w", err)
	}
	if c.devName, err = c.dev.Name(); err != nil {
		return fmt.Errorf("device name: %w", err)
	}
	ctx, err := c.dev.RetainPrimaryCtx()
	if err != nil {
		return fmt.Errorf("retain primary context: %w", err)
	}
	c.retained = true
	if err := cu.SetCurrentContext(ctx); err != nil {
		return fmt.Errorf("make context current: %w", err)
	}
	free, total, err := cu.MemInfo()
	if err != nil {
		return fmt.Errorf("device memory: %w", err)
	}
	if need := int64(slots) * c.plan.SlotBytes; need > free {
		return fmt.Errorf("staging needs %d slots x %s = %s of device memory, but only %s of %s is free",
			slots, mib(c.plan.SlotBytes), mib(need), mib(free), mib(total))
	}
	if err := c.makeStreams(); err != nil {
		return err
	}
	c.slots = make([]cudaSlot, slots)
	for s := range c.slots {
		if err := c.slots[s].make(c.plan.SlotBytes, len(c.streams)); err != nil {
			return fmt.Errorf("staging slot %d: %w", s, err)
		}
	}
	return nil
}

// make allocates a slot's memory and events; on failure the slot holds what
// was made, for release.
func (sl *cudaSlot) make(bytes int64, streams int) error {
	var err error
	if sl.host, err = pinnedAlloc(bytes); err != nil {
		return err
	}
	if sl.device, err = cu.MemAlloc(bytes); err != nil {
		return fmt.Errorf("cuMemAlloc(%d bytes): %w", bytes, err)
	}
	if sl.done, err = cu.MakeEvent(cu.DisableTiming); err != nil {
		return fmt.Errorf("create event: %w", err)
	}
	for range streams {
		for _, evs := range []*[]cu.Event{&sl.start, &sl.ready} {
			ev, err := cu.MakeEvent(cu.DefaultEvent)
			if err != nil {
				return fmt.Errorf("create event: %w", err)
			}
			*evs = append(*evs, ev)
		}
	}
	sl.timed = true
	return nil
}

// makeStreams creates the planned streams. A stream runs at the highest
// priority of its keys: high is the device's greatest priority, low its
// least, and normal the middle of the range.
func (c *cudaBackend) makeStreams() error {
	least, greatest, err := cu.StreamPriorityRange()
	if err != nil {
		return fmt.Errorf("stream priority range: %w", err)
	}
	level := map[Priority]int{Low: 0, Normal: 1, High: 2}
	value := [...]int{least, least + (greatest-least)/2, greatest}
	rank := make([]int, c.plan.NumStreams)
	for _, k := range c.plan.Keys {
		rank[k.Stream] = max(rank[k.Stream], level[k.Priority])
	}
	for i := range c.plan.NumStreams {
		st, err := cu.MakeStreamWithPriority(value[rank[i]], cu.NonBlocking)
		if err != nil {
			return fmt.Errorf("create stream %d: %w", i, err)
		}
		c.streams = append(c.streams, st)
	}
	return nil
}

func (c *cudaBackend) serve(r cudaReq) error {
	switch r.op {
	case opTransfer:
		return c.transferNow(r.slot, r.n, r.batch)
	case opReuse:
		return c.reuseNow(r.slot)
	case opWait:
		for _, ev := range c.slots[r.slot].ready {
			if err := r.stream.Wait(ev, 0); err != nil {
				return fmt.Errorf("stream wait: %w", err)
			}
		}
	case opSync:
		return c.syncReady(r.slot)
	case opDone:
		sl := &c.slots[r.slot]
		if err := sl.done.Record(r.stream); err != nil {
			return fmt.Errorf("record done event: %w", err)
		}
		sl.waitDone = true
	case opToHost:
		if err := c.syncReady(r.slot); err != nil {
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

// transferNow issues the copies of slot s's n samples, key by key on each
// key's stream, and records one ready event per stream.
func (c *cudaBackend) transferNow(s, n, batch int) error {
	sl := &c.slots[s]
	sl.issued, sl.batch = time.Now(), batch
	// Set before anything is queued: if a later copy fails, the earlier
	// ones still read the host memory, and reuse must wait for them.
	sl.copying, sl.timed = true, false
	if sl.waitDone {
		for _, st := range c.streams {
			if err := st.Wait(sl.done, 0); err != nil {
				return fmt.Errorf("wait for the consumer: %w", err)
			}
		}
		sl.waitDone = false
	}
	for i, st := range c.streams {
		if err := sl.start[i].Record(st); err != nil {
			return fmt.Errorf("record start event: %w", err)
		}
	}
	for _, k := range c.plan.Keys {
		src := unsafe.Pointer(&sl.host[k.Offset])
		if err := cu.MemcpyHtoDAsync(sl.device+cu.DevicePtr(k.Offset), src, int64(n)*k.SampleBytes, c.streams[k.Stream]); err != nil {
			return fmt.Errorf("copy key %q: %w", k.Name, err)
		}
	}
	for i, st := range c.streams {
		if err := sl.ready[i].Record(st); err != nil {
			return fmt.Errorf("record ready event: %w", err)
		}
	}
	return nil
}

// reuseNow blocks until slot s's last copies have read its host memory.
func (c *cudaBackend) reuseNow(s int) error {
	if !c.slots[s].copying {
		return nil
	}
	if err := c.syncReady(s); err != nil {
		return err
	}
	c.slots[s].copying = false
	return nil
}

// syncReady blocks until slot s's copies are done, and counts their device
// time per stream the first time it sees them complete.
func (c *cudaBackend) syncReady(s int) error {
	sl := &c.slots[s]
	for _, ev := range sl.ready {
		if err := ev.Synchronize(); err != nil {
			return fmt.Errorf("wait for copies: %w", err)
		}
	}
	if sl.timed {
		return nil
	}
	for i := range sl.ready {
		ms, err := sl.start[i].Elapsed(sl.ready[i])
		if err != nil {
			return fmt.Errorf("copy time: %w", err)
		}
		c.stats.copy[i].Add(int64(ms * 1e6))
		if c.trace != nil {
			// Device time, placed at the host time the copies were issued.
			c.trace.slice(streamTrack+i, "copy", sl.issued, time.Duration(ms*1e6), sl.batch, 0, 0)
		}
	}
	sl.timed = true
	return nil
}

// release waits for all work and frees what start created, then releases
// the primary context. It tolerates a half-finished start.
func (c *cudaBackend) release() error {
	var errs []error
	for i := range c.streams {
		errs = append(errs, c.streams[i].Synchronize(), c.streams[i].Destroy())
	}
	for s := range c.slots {
		sl := &c.slots[s]
		if sl.waitDone {
			// The consumer's kernels may still read this slot's buffers.
			errs = append(errs, sl.done.Synchronize())
		}
		for _, evs := range [][]cu.Event{sl.start, sl.ready} {
			for i := range evs {
				errs = append(errs, cu.DestroyEvent(&evs[i]))
			}
		}
		if sl.done != (cu.Event{}) {
			errs = append(errs, cu.DestroyEvent(&sl.done))
		}
		if sl.device != 0 {
			errs = append(errs, cu.MemFree(sl.device))
		}
		errs = append(errs, pinnedFree(sl.host))
	}
	c.streams, c.slots = nil, nil
	if c.retained {
		errs = append(errs, c.dev.ReleasePrimaryCtx())
		c.retained = false
	}
	return errors.Join(errs...)
}

func (c *cudaBackend) name() string { return "cuda" }

func (c *cudaBackend) slot(s int, n int64) ([]byte, error) {
	if n != c.plan.SlotBytes || s >= len(c.slots) {
		return nil, fmt.Errorf("cuda backend: slot %d of %d bytes was not planned", s, n)
	}
	return c.slots[s].host, nil
}

func (c *cudaBackend) devicePtr(s, k int) uintptr {
	return uintptr(c.slots[s].device) + uintptr(c.plan.Keys[k].Offset)
}

func (c *cudaBackend) handle(s int) deviceBatch { return deviceBatch{c: c, slot: s} }

func (c *cudaBackend) reuse(s int) error { return c.call(cudaReq{op: opReuse, slot: s}) }

func (c *cudaBackend) transfer(b *Batch) error {
	return c.call(cudaReq{op: opTransfer, slot: b.Slot, n: len(b.Indices), batch: b.Number})
}

func (c *cudaBackend) close() error { return c.call(cudaReq{op: opClose}) }

// deviceBatch is a batch's handle on its slot in the CUDA backend.
type deviceBatch struct {
	c    *cudaBackend
	slot int
}

var errHostBatch = errors.New("batch is on the CPU backend: it has no device copy")

func (b *Batch) gpuCall(r cudaReq) error {
	if b.gpu.c == nil {
		return errHostBatch
	}
	r.slot = b.gpu.slot
	return b.gpu.c.call(r)
}

// Wait makes stream s wait, on the device, until every key of the batch has
// arrived: kernels queued on s afterwards see the data. The host does not
// block.
func (b *Batch) Wait(s cu.Stream) error { return b.gpuCall(cudaReq{op: opWait, stream: s}) }

// Sync blocks the host until every key of the batch has arrived on the
// device.
func (b *Batch) Sync() error { return b.gpuCall(cudaReq{op: opSync}) }

// Done records an event on stream s after the consumer's work on this batch.
// The loader's next copy into the batch's device buffers waits for it, so
// kernels still reading them are never overwritten. Without Done, advancing
// the loop means the consumer has finished with the device buffers (call
// Sync on your own stream, or Done, before advancing if kernels may still be
// reading them).
func (b *Batch) Done(s cu.Stream) error { return b.gpuCall(cudaReq{op: opDone, stream: s}) }

// DeviceToHost copies key k's device buffer of this batch into dst, waiting
// for the batch's copies first. It is for checks and debugging; dst must hold
// len(Tensors[k].Data) bytes.
func (b *Batch) DeviceToHost(k int, dst []byte) error {
	if k < 0 || k >= len(b.Tensors) || len(dst) != len(b.Tensors[k].Data) {
		return fmt.Errorf("DeviceToHost: key %d into %d bytes does not match the batch", k, len(dst))
	}
	return b.gpuCall(cudaReq{op: opToHost, key: k, dst: dst})
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
