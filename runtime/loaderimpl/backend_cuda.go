//go:build cuda

package loaderimpl

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"gorgonia.org/cu"

	"github.com/loadergen/loadergen/internal/devicename"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/internal/cudadriver"
	"github.com/loadergen/loadergen/runtime/internal/hostmem"
	"github.com/loadergen/loadergen/runtime/internal/staged"
)

// cudaFallback logs, once per process, that loaders asking for CUDA run on
// the CPU, and why.
var cudaFallback sync.Once

// newBackend returns the CUDA backend for "cuda" and "cuda:N", and the CPU
// backend for "cpu". "cuda" is GPU localRank of the node (modulo the
// number of GPUs this process sees). When this process cannot use CUDA
// (CUDAUsable), a CUDA device runs on the CPU backend with the reason
// logged, or is an error when the caller requires the GPU.
func newBackend(cfg backendConfig) (backend, error) {
	device, p, log := cfg.device, cfg.plan, cfg.log
	ordinal, cuda, err := devicename.Parse(device)
	if err != nil {
		return nil, err
	}
	if !cuda {
		return hostBackend(cfg.localRank, log), nil
	}
	n, err := cudadriver.Devices()
	if err != nil {
		if cfg.require {
			return nil, errGPURequired(device, err)
		}
		cudaFallback.Do(func() {
			log.Warn("loadergen: CUDA cannot be used, running on CPU: "+err.Error(), "device", device)
		})
		return newCPUBackend(), nil
	}
	if ordinal < 0 {
		ordinal = cfg.localRank % n
	}
	c := &cudaBackend{plan: p, ordinal: ordinal, stats: cfg.stats, trace: cfg.trace, graphs: cfg.graphs, reqs: make(chan cudaReq), resp: make(chan error)}
	c.order = issueOrder(p.Keys)
	c.launches = launchOrder(p, c.order)
	started := make(chan error)
	go c.loop(cfg.slots, cfg.maxSlots, started)
	if err := <-started; err != nil {
		return nil, fmt.Errorf("%s: %w", device, err)
	}
	if cfg.trace != nil {
		for i := range c.streams {
			cfg.trace.meta("thread_name", streamTrack+i, fmt.Sprintf("CUDA stream %d (copies, at device time)", i))
		}
	}
	if c.noGraphs != nil {
		log.Info("loadergen: CUDA graphs off, copies issued one call each: "+c.noGraphs.Error(), "device", device)
	}
	log.Info("loadergen: CUDA backend", "device", device, "ordinal", ordinal, "name", c.devName, "streams", len(c.streams),
		"batch_mib", fmt.Sprintf("%.1f", p.BatchMiB), "slots", cfg.slots, "graphs", c.graphs)
	return c, nil
}

// hostBackend is the backend of device "cpu" in a cuda build: the CPU
// backend, with pinned slots (on GPU localRank of the node) when staging
// goes to another runtime (hostmem.Outside) and this process can use CUDA,
// so that the consumer's own copies to the GPU run asynchronously.
func hostBackend(localRank int, log *slog.Logger) backend {
	if !hostmem.Outside() {
		return newCPUBackend()
	}
	n, err := cudadriver.Devices()
	if err == nil {
		var p *pinnedCPUBackend
		if p, err = newPinnedCPUBackend(cu.Device(localRank % n)); err == nil {
			return p
		}
	}
	log.Info("loadergen: host staging is not pinned: "+err.Error(), "device", "cpu")
	return newCPUBackend()
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
	plan  runtime.Plan
	order []int // issueOrder of the keys
	// graphs says that each full batch's copies go out as one graph launch
	// per stream (runtime.Options.CUDAGraphs or CUDAGraphsEnv, and the driver able); start,
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

// start makes the primary context current on this thread, checks device
// memory, and creates the streams, events and buffers of the first slots
// of a ring that may grow to maxSlots (addSlot).
func (c *cudaBackend) start(slots, maxSlots int) error {
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
	c.slots = make([]cudaSlot, slots, maxSlots)
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

func (c *cudaBackend) device() staged.Device { return c }

func (c *cudaBackend) reuse(s int) error { return c.call(cudaReq{op: opReuse, slot: s}) }

func (c *cudaBackend) filled(s, batch, n int) error {
	return c.call(cudaReq{op: opFilled, slot: s, n: n, batch: batch})
}

func (c *cudaBackend) settleAll() {
	// After Close there is nothing to settle: release counted everything.
	_ = c.call(cudaReq{op: opSettle})
}

func (c *cudaBackend) close() error { return c.call(cudaReq{op: opClose}) }

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
