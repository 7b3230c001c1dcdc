//go:build cuda

package runtime

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/loadergen/loadergen/internal/devicename"
)

// cudaFallback logs, once per process, that loaders asking for CUDA run on
// the CPU, and why.
var cudaFallback sync.Once

// newBackend returns the CUDA backend for "cuda" and "cuda:N", and the CPU
// backend for "cpu". "cuda" is GPU localRank of the node (modulo the
// number of GPUs this process sees). When this process cannot use CUDA
// (CUDAUsable), a CUDA device runs on the CPU backend with the reason
// logged, or is an error when the caller requires the GPU.
func newBackend(device string, localRank int, p Plan, slots, most int, require, graphs bool, log *slog.Logger, stats *counters, trace *tracer) (backend, error) {
	ordinal, cuda, err := devicename.Parse(device)
	if err != nil || !cuda {
		return cpuBackend{}, err
	}
	n, err := cudaDevices()
	if err != nil {
		if require {
			return nil, errGPURequired(device, err)
		}
		cudaFallback.Do(func() {
			log.Warn("loadergen: CUDA cannot be used, running on CPU: "+err.Error(), "device", device)
		})
		return cpuBackend{}, nil
	}
	if ordinal < 0 {
		ordinal = localRank % n
	}
	c := &cudaBackend{plan: p, ordinal: ordinal, stats: stats, trace: trace, graphs: graphs, reqs: make(chan cudaReq), resp: make(chan error)}
	c.order = issueOrder(p.Keys)
	c.launches = launchOrder(p, c.order)
	started := make(chan error)
	go c.loop(slots, most, started)
	if err := <-started; err != nil {
		return nil, fmt.Errorf("%s: %w", device, err)
	}
	if trace != nil {
		for i := range c.streams {
			trace.meta("thread_name", streamTrack+i, fmt.Sprintf("CUDA stream %d (copies, at device time)", i))
		}
	}
	if c.noGraphs != nil {
		log.Info("loadergen: CUDA graphs off, copies issued one call each: "+c.noGraphs.Error(), "device", device)
	}
	log.Info("loadergen: CUDA backend", "device", device, "ordinal", ordinal, "name", c.devName, "streams", len(c.streams),
		"batch_mib", fmt.Sprintf("%.1f", p.BatchMiB), "slots", slots, "graphs", c.graphs)
	return c, nil
}

// issueOrder is the order in which a batch's copies are issued: by
// priority, high first, then in plan order. Stream priorities do not apply
// to copies (cuda.h: "Stream priorities have no effect on host-to-device and
// device-to-host memory operations"), so issue order is what lets a
// high-priority key, say the inputs, arrive before the rest.
func issueOrder(keys []Key) []int {
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(keys[a].Priority.order(), keys[b].Priority.order()) })
	return order
}

// streamKeys names the keys copied on stream st, for errors: `key "b"`,
// `keys "a", "c"`.
func (c *cudaBackend) streamKeys(st int) string {
	var names []string
	for _, k := range c.order {
		if c.plan.Keys[k].Stream == st {
			names = append(names, strconv.Quote(c.plan.Keys[k].Name))
		}
	}
	if len(names) == 1 {
		return "key " + names[0]
	}
	return "keys " + strings.Join(names, ", ")
}

// launchOrder is the order of the streams' launches: by the issue order of
// their first key, then any stream without keys.
func launchOrder(p Plan, order []int) []int {
	var streams []int
	for _, k := range order {
		if st := p.Keys[k].Stream; !slices.Contains(streams, st) {
			streams = append(streams, st)
		}
	}
	for st := range p.NumStreams {
		if !slices.Contains(streams, st) {
			streams = append(streams, st)
		}
	}
	return streams
}

// order ranks the priorities, high first: the order of a batch's copies
// and of the streams' priority levels.
func (p Priority) order() int {
	switch p {
	case High:
		return 0
	case Normal:
		return 1
	}
	return 2
}

// cudaBackend stages batches in pinned host memory and copies each key to
// its slot's device buffer on the key's planned stream, as soon as the
// workers have filled the slot. Every CUDA call runs on one goroutine
// (loop), locked to its OS thread with the device's primary context
// current; other goroutines send it requests by value through call, so a
// batch costs no allocation. Everything below mu is owned by that
// goroutine: only it writes the streams and slots, and only it touches the
// slots' state and events. The consumer alone reads the slots' memory
// (slot, devicePtr), after the request that made them: newBackend's wait for
// the goroutine's start-up, or an opAddSlot's reply.
type cudaBackend struct {
	plan  Plan
	order []int // issueOrder of the keys
	// graphs says that each full batch's copies go out as one graph launch
	// per stream (Options.CUDAGraphs or CUDAGraphsEnv, and the driver able); start,
	// on the CUDA goroutine, clears it with the reason in noGraphs when the
	// driver is not, before newBackend reads them.
	graphs   bool
	noGraphs error
	// launches is the order of the streams' graph launches (and ready
	// records): by the issue order of their first key, so that
	// high-priority keys go first. Fixed before the goroutine starts.
	launches []int
	// calls counts the driver calls of the last issue, for the tests and
	// benchmarks: the CUDA goroutine writes it, and a call's reply orders
	// a read after that write.
	calls   int
	ordinal int
	devName string
	stats   *counters // copy time and host stall go here
	trace   *tracer   // nil unless tracing: a slice per stream per batch

	mu     sync.Mutex // one request at a time; guards closed
	closed bool
	reqs   chan cudaReq
	resp   chan error

	dev      cu.Device
	retained bool        // the primary context is retained
	streams  []cu.Stream // created once, with the keys' priorities
	slots    []cudaSlot
	origin   cu.Event  // recorded once at start: device times are measured from it
	originAt time.Time // host time of origin, to place copies in the trace
}

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
	key    []cu.Event // per key: after its copy, for Batch.WaitKey
	// done holds the events Batch.Done recorded on the consumer's streams
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

func (c *cudaBackend) loop(slots, most int, started chan<- error) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	// The thread goes back to Go's pool without a (released) context current.
	defer cu.SetCurrentContext(cu.CUContext{})
	if err := c.start(slots, most); err != nil {
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

// start makes the primary context current on this thread, checks device
// memory, and creates the streams, events and buffers of the first slots
// of a ring that may grow to most (addSlot).
func (c *cudaBackend) start(slots, most int) error {
	for _, k := range c.plan.Keys {
		if k.Stream < 0 || k.Stream >= c.plan.NumStreams {
			return fmt.Errorf("plan: key %q is on stream %d of %d", k.Name, k.Stream, c.plan.NumStreams)
		}
	}
	var err error
	if c.dev, err = cu.GetDevice(c.ordinal); err != nil {
		if n, nerr := cu.NumDevices(); nerr == nil && c.ordinal >= n {
			return fmt.Errorf("get device %d: %w: this machine has %s", c.ordinal, err, howManyDevices(n))
		}
		return fmt.Errorf("get device %d: %w", c.ordinal, err)
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
	if c.origin, err = cu.MakeEvent(cu.BlockingSyncEvent); err != nil {
		return fmt.Errorf("create event: %w", err)
	}
	if err := c.origin.Record(c.streams[0]); err != nil {
		return fmt.Errorf("record origin event: %w", err)
	}
	if err := c.origin.Synchronize(); err != nil {
		return fmt.Errorf("origin event: %w", err)
	}
	c.originAt = time.Now()
	// The capacity is the ring's bound, so that addSlot never moves the
	// slots that slot and devicePtr have handed out.
	c.slots = make([]cudaSlot, slots, most)
	for s := range c.slots {
		if err := c.slots[s].alloc(c.plan.SlotBytes, len(c.streams), len(c.plan.Keys)); err != nil {
			return fmt.Errorf("staging slot %d: %w", s, err)
		}
	}
	if !c.graphs {
		return nil
	}
	for s := range c.slots {
		err := c.makeGraphs(s)
		if errors.Is(err, errNoGraphs) {
			c.graphs, c.noGraphs = false, err
			return c.destroyGraphs()
		}
		if err != nil {
			return err
		}
	}
	return nil
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

// makeGraphs builds slot s's graphs, one per stream: the start record,
// each of the stream's keys' copy of a full batch and key record in issue
// order, and the ready record, as issue queues them call by call. An error
// wrapping errNoGraphs says the driver has no graphs.
func (c *cudaBackend) makeGraphs(s int) error {
	sl := &c.slots[s]
	for i := range c.streams {
		steps := []graphStep{{event: sl.start[i]}}
		for _, k := range c.order {
			if key := c.plan.Keys[k]; key.Stream == i {
				steps = append(steps, graphStep{dst: sl.device + cu.DevicePtr(key.Offset), src: unsafe.Pointer(&sl.host[key.Offset]), n: key.BatchBytes},
					graphStep{event: sl.key[k]})
			}
		}
		g, err := newGraph(append(steps, graphStep{event: sl.ready[i]}))
		if err != nil {
			return fmt.Errorf("staging slot %d, stream %d: %w", s, i, err)
		}
		sl.graphs = append(sl.graphs, g)
	}
	return nil
}

// destroyGraphs frees every slot's graphs.
func (c *cudaBackend) destroyGraphs() error {
	var errs []error
	for s := range c.slots {
		for _, g := range c.slots[s].graphs {
			errs = append(errs, g.destroy())
		}
		c.slots[s].graphs = nil
	}
	return errors.Join(errs...)
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

// makeStreams creates the planned streams. A stream runs at the highest
// priority of its keys: high is the device's greatest priority, low its
// least, and normal the middle of the range. It orders the consumer's work
// queued there; copies are ordered by issueOrder.
func (c *cudaBackend) makeStreams() error {
	least, greatest, err := cu.StreamPriorityRange()
	if err != nil {
		return fmt.Errorf("stream priority range: %w", err)
	}
	// By Priority.order: high, normal, low.
	value := [...]int{greatest, least + (greatest-least)/2, least}
	level := make([]int, c.plan.NumStreams)
	for i := range level {
		level[i] = Low.order()
	}
	for _, k := range c.plan.Keys {
		level[k.Stream] = min(level[k.Stream], k.Priority.order())
	}
	for i := range c.plan.NumStreams {
		st, err := cu.MakeStreamWithPriority(value[level[i]], cu.NonBlocking)
		if err != nil {
			return fmt.Errorf("create stream %d: %w", i, err)
		}
		c.streams = append(c.streams, st)
	}
	return nil
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

// issue queues the copies of slot s's n samples: after the consumer's Done
// events, a start event per stream, each key's copy on its stream in issue
// order followed by its key event, and a ready event per stream. A copy
// that fails to queue stops the rest, but the ready events are still
// recorded, so that reuse waits for the copies already queued.
func (c *cudaBackend) issue(s, n, batch int) error {
	sl := &c.slots[s]
	if sl.state != idle {
		return fmt.Errorf("cuda backend: slot %d filled while its copies are outstanding", s)
	}
	sl.batch = batch
	clear(sl.untimed)
	c.calls = 0
	for _, st := range c.streams {
		for _, done := range sl.done[:sl.nDone] {
			c.calls++
			if err := st.Wait(done, 0); err != nil {
				return fmt.Errorf("wait for the consumer: %w", err)
			}
		}
	}
	sl.nDone = 0
	if sl.graphs != nil && n == c.plan.BatchSize {
		return c.launch(sl)
	}
	for i, st := range c.streams {
		if err := sl.start[i].Record(st); err != nil {
			return fmt.Errorf("record start event: %w", err)
		}
	}
	c.calls += len(c.streams)
	sl.state = copying
	var copyErr error
	for _, k := range c.order {
		key, st := c.plan.Keys[k], c.streams[c.plan.Keys[k].Stream]
		src := unsafe.Pointer(&sl.host[key.Offset])
		c.calls += 2
		if err := cu.MemcpyHtoDAsync(sl.device+cu.DevicePtr(key.Offset), src, int64(n)*key.SampleBytes, st); err != nil {
			copyErr = fmt.Errorf("copy key %q: %w", key.Name, err)
			break
		}
		if err := sl.key[k].Record(st); err != nil {
			copyErr = fmt.Errorf("record key event: %w", err)
			break
		}
	}
	return errors.Join(copyErr, c.recordReady(sl, c.launches))
}

// recordReady records slot sl's ready event on each of the streams, after
// the copies queued there. Without a ready event nothing says when the
// queued copies end: then it waits for them here, and leaves their time
// uncounted.
func (c *cudaBackend) recordReady(sl *cudaSlot, streams []int) error {
	for _, i := range streams {
		c.calls++
		if err := sl.ready[i].Record(c.streams[i]); err != nil {
			sl.state = idle
			return errors.Join(fmt.Errorf("record ready event: %w", err), c.syncStreams())
		}
	}
	return nil
}

// launch queues a full batch of slot sl as one graph launch per stream.
// When a launch fails, the streams from it on get their ready events call
// by call, so that reuse still waits for whatever was queued, and the batch
// fails.
//
// The copy times of those streams are not measured (untimed): their start
// events are recorded only inside their graphs, so a start event may be a
// previous batch's or one never recorded (Elapsed then fails), and the
// failed launch itself may have queued part of its graph or nothing (a
// driver submits a graph whole; the emulator queues the nodes before the
// failing copy). Recording start events here, beside the ready events,
// would time none of the copies queued; untimed, their time is counted as
// lost (settle) rather than measured wrong.
func (c *cudaBackend) launch(sl *cudaSlot) error {
	sl.state = copying
	for j, i := range c.launches {
		c.calls++
		err := sl.graphs[i].launch(c.streams[i])
		if err == nil {
			continue
		}
		if sl.untimed == nil {
			sl.untimed = make([]bool, len(c.streams))
		}
		for _, st := range c.launches[j:] {
			sl.untimed[st] = true
		}
		return errors.Join(fmt.Errorf("copy %s (one graph launch on stream %d): %w", c.streamKeys(i), i, err), c.recordReady(sl, c.launches[j:]))
	}
	return nil
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

func (c *cudaBackend) syncStreams() error {
	var errs []error
	for _, st := range c.streams {
		errs = append(errs, st.Synchronize())
	}
	return errors.Join(errs...)
}

// release waits for all work, counts the copies still uncounted, frees what
// start created and releases the primary context. It tolerates a
// half-finished start.
func (c *cudaBackend) release() error {
	errs := []error{c.syncStreams(), c.destroyGraphs()}
	for s := range c.slots {
		sl := &c.slots[s]
		errs = append(errs, c.settle(s, ifDone))
		for _, done := range sl.done[:sl.nDone] {
			// The consumer's kernels may still read this slot's buffers.
			errs = append(errs, done.Synchronize())
		}
		errs = append(errs, sl.free())
	}
	if c.origin != (cu.Event{}) {
		errs = append(errs, cu.DestroyEvent(&c.origin))
	}
	for i := range c.streams {
		errs = append(errs, c.streams[i].Destroy())
	}
	c.streams, c.slots = nil, nil
	if c.retained {
		errs = append(errs, c.dev.ReleasePrimaryCtx())
		c.retained = false
	}
	return errors.Join(errs...)
}

func (c *cudaBackend) name() string { return "cuda" }

// slot returns the host memory of slot s, allocated at start, or adds it
// when s is the next slot (addSlot). Only the consumer calls it, and the
// slots change only in its own requests, so reading them here is safe.
func (c *cudaBackend) slot(s int, n int64) ([]byte, error) {
	if n != c.plan.SlotBytes || s > len(c.slots) {
		return nil, fmt.Errorf("cuda backend: slot %d of %d bytes was not planned", s, n)
	}
	if s == len(c.slots) {
		if err := c.call(cudaReq{op: opAddSlot}); err != nil {
			return nil, err
		}
	}
	return c.slots[s].host, nil
}

func (c *cudaBackend) devicePtr(s, k int) uintptr {
	return uintptr(c.slots[s].device) + uintptr(c.plan.Keys[k].Offset)
}

func (c *cudaBackend) handle(s int) deviceBatch { return deviceBatch{c: c, slot: s} }

func (c *cudaBackend) reuse(s int) error { return c.call(cudaReq{op: opReuse, slot: s}) }

func (c *cudaBackend) filled(s, batch, n int) error {
	return c.call(cudaReq{op: opFilled, slot: s, n: n, batch: batch})
}

func (c *cudaBackend) settleAll() {
	// After Close there is nothing to settle: release counted everything.
	_ = c.call(cudaReq{op: opSettle})
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
// block. s must belong to the device's primary context.
func (b *Batch) Wait(s cu.Stream) error { return b.gpuCall(cudaReq{op: opWait, stream: s}) }

// WaitKey makes stream s wait, on the device, until key k of the batch has
// arrived, without waiting for the other keys: a consumer can start on the
// inputs while the targets are still copied. Keys are copied in priority
// order (high first), then plan order.
func (b *Batch) WaitKey(s cu.Stream, k int) error {
	if k < 0 || k >= len(b.Tensors) {
		return fmt.Errorf("WaitKey: key %d of %d", k, len(b.Tensors))
	}
	return b.gpuCall(cudaReq{op: opWaitKey, stream: s, key: k})
}

// Sync blocks the host until every key of the batch has arrived on the
// device.
func (b *Batch) Sync() error { return b.gpuCall(cudaReq{op: opSync}) }

// Done records an event on stream s after the consumer's work on this batch.
// The loader's next copy into the batch's device buffers waits for it (and
// for every other stream the batch was marked Done on), so kernels still
// reading them are never overwritten. Without Done, advancing the loop
// means the consumer has finished with the device buffers (call Sync on
// your own stream, or Done, before advancing if kernels may still be
// reading them). s must belong to the device's primary context.
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

// howManyDevices says how many CUDA devices there are, and their ordinals:
// "1 CUDA device (0)", "2 CUDA devices (0 to 1)".
func howManyDevices(n int) string {
	switch n {
	case 0:
		return "no CUDA device"
	case 1:
		return "1 CUDA device (0)"
	}
	return fmt.Sprintf("%d CUDA devices (0 to %d)", n, n-1)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
