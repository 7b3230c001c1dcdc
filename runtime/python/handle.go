//go:build cgo

package python

/*
#include <stdlib.h>
#include "abi.h"
*/
import "C"

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/loadergen/loadergen/runtime"
)

// handle is one open loader of the library: what a Python loader object
// holds, by its id.
type handle struct {
	id     int64
	module string
	loader Loader
	plan   runtime.Plan
	trace  *os.File // Options.Trace's file, or nil: closed by forgetIfDone, after the loader completed the trace

	// q is the queue of ready batches that the pump of the running epoch
	// fills and lg_next empties (ready.c); made by start, retired with
	// the handle.
	q *C.lg_queue

	// mu guards run and ending, which lg_epoch, lg_stop, close and
	// lg_next's way into Go read and write on the Python threads that
	// call them. run is the epoch being iterated, or nil. ending, when
	// not nil, is closed once an epoch stopped without waiting (Ctrl-C)
	// has stopped its work: the next epoch and Close wait for it.
	mu     sync.Mutex
	run    *epochRun
	ending chan struct{}

	// slotsMu guards slots, which the pump extends when it first hands
	// out a slot and which lgTakeSlow, lgSlotReleased and forgetIfDone
	// read.
	slotsMu sync.Mutex
	slots   []*cslot
	// kept counts the batches the library holds for Python, queued or
	// taken, from the pump's Keep to their slot's last release. closed is
	// set as close begins; shut once it has stopped the epoch (no pump or
	// stop uses q any more) and closed the loader. From then on the last
	// release frees the C memory and forgets the handle.
	kept         atomic.Int64
	closed, shut atomic.Bool
}

// epochRun is an epoch being iterated: its pump takes the batches from
// the cursor ahead of Python and queues them; Python waits for them in
// slices (lg_next's timeout), so that Ctrl-C reaches it.
type epochRun struct {
	cur    *runtime.Cursor
	cancel context.CancelFunc // stops the epoch's reads and the pump
	// done is closed when the pump has closed the cursor; err, written
	// by the pump before, is what ended the epoch (nil at its end).
	done chan struct{}
	err  error
}

// handles are the open loaders by id; closed ones stay until the last
// of their kept batches is released.
var handles struct {
	mu   sync.RWMutex
	m    map[int64]*handle
	next int64
}

// lookup returns the loader of id h. Ids are never reused, so one this
// library gave out and no longer holds was closed.
func lookup(h int64) (*handle, error) {
	handles.mu.RLock()
	l, issued := handles.m[h], h > 0 && h <= handles.next
	handles.mu.RUnlock()
	switch {
	case l != nil:
		return l, nil
	case issued:
		return nil, fmt.Errorf("loader %d: %w", h, runtime.ErrClosed)
	}
	return nil, fmt.Errorf("no loader %d in this library (from another process?)", h)
}

// options are the Python constructor's keywords (runtime.Options in
// snake case), the caller's log level and its environment.
type options struct {
	Device     string            `json:"device"`
	Workers    int               `json:"workers"`
	Prefetch   int               `json:"prefetch"`
	Locality   int               `json:"locality"`
	Rank       int               `json:"rank"`
	WorldSize  int               `json:"world_size"`
	LocalRank  int               `json:"local_rank"`
	RequireGPU bool              `json:"require_gpu"`
	CUDAGraphs bool              `json:"cuda_graphs"`
	LogEpochs  bool              `json:"log_epochs"`
	Trace      string            `json:"trace"`     // a file for Options.Trace, or ""
	LogLevel   int               `json:"log_level"` // Python's logging level of the "loadergen" logger
	Env        map[string]string `json:"env"`       // Python's os.environ
}

// open opens the loader of module over source kind source at location.
func open(module, source, location string, opts []byte) (*handle, error) {
	d, err := dataset(module)
	if err != nil {
		return nil, err
	}
	openSource, ok := d.Sources[source]
	if !ok {
		return nil, fmt.Errorf("%s has no %s= source", module, source)
	}
	return start(module, opts, func(o runtime.Options) (Loader, error) { return openSource(location, o) })
}

// start starts a loader of module with start, under the options opts (the
// Python constructor's keywords, as JSON), and holds it as a new handle.
func start(module string, opts []byte, start func(runtime.Options) (Loader, error)) (*handle, error) {
	var o options
	if err := decodeStrict(opts, &o); err != nil {
		return nil, fmt.Errorf("%s: options: %w", module, err)
	}
	syncEnv(o.Env)
	setLogLevel(o.LogLevel)
	ro := runtime.Options{
		Device: o.Device, Workers: o.Workers, Prefetch: o.Prefetch, Locality: o.Locality,
		Rank: o.Rank, WorldSize: o.WorldSize, LocalRank: o.LocalRank,
		RequireGPU: o.RequireGPU, CUDAGraphs: o.CUDAGraphs, LogEpochs: o.LogEpochs,
		Logger: logger(module),
	}
	h := &handle{module: module}
	var err error
	if o.Trace != "" {
		if h.trace, err = os.Create(o.Trace); err != nil {
			return nil, fmt.Errorf("%s: trace: %w", module, err)
		}
		ro.Trace = h.trace
	}
	if h.loader, err = start(ro); err != nil {
		if h.trace != nil {
			h.trace.Close()
			os.Remove(o.Trace)
		}
		return nil, err
	}
	h.plan = h.loader.Plan()
	handles.mu.Lock()
	defer handles.mu.Unlock()
	if handles.m == nil {
		handles.m = map[int64]*handle{}
	}
	handles.next++
	h.id = handles.next
	h.q = C.lgq_open(C.int64_t(h.id))
	handles.m[h.id] = h
	return h, nil
}

// decodeStrict decodes JSON js into v, refusing fields v does not have.
func decodeStrict(js []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// close stops the epoch and closes the loader and its source. The handle
// stays while Python holds batches of it; their staging is released with
// the last of them.
func (h *handle) close() error {
	if h.closed.Swap(true) {
		return nil
	}
	h.stopEpoch(true)
	err := h.loader.Close()
	h.shut.Store(true)
	return errors.Join(err, h.forgetIfDone())
}

// forgetIfDone frees the C memory and forgets a shut handle that holds no
// kept batch, and closes its trace file: the loader completes the trace
// once its last kept batch is released, which comes first. It returns the
// error of that close: close() returns it, a release logs it.
func (h *handle) forgetIfDone() error {
	if !h.shut.Load() || h.kept.Load() > 0 {
		return nil
	}
	handles.mu.Lock()
	_, present := handles.m[h.id]
	delete(handles.m, h.id)
	handles.mu.Unlock()
	if !present {
		return nil // another release got here first
	}
	C.lgq_retire(h.q)
	h.slotsMu.Lock()
	for _, s := range h.slots {
		if s != nil {
			s.free()
		}
	}
	h.slots = nil
	h.slotsMu.Unlock()
	if h.trace != nil {
		return h.trace.Close()
	}
	return nil
}

// startEpoch starts batches start.. of epoch.
func (h *handle) startEpoch(epoch, start int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed.Load():
		return runtime.ErrClosed
	case h.run != nil:
		return runtime.ErrBusy
	case h.ending != nil:
		<-h.ending
		h.ending = nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	cur, err := h.loader.Start(ctx, epoch, start)
	if err != nil {
		cancel()
		return err
	}
	cur.Ahead()
	h.run = &epochRun{cur: cur, cancel: cancel, done: make(chan struct{})}
	C.lgq_start(h.q, C.int(wakeGoal(h.loader.Stats().Prefetch)))
	go h.pump(ctx, h.run)
	return nil
}

// wakeGoal is how many batches, or returned slots, end a wait of lg_next
// or of the pump (ready.c) with a ring that stages prefetch batches ahead:
// a quarter of the ring, so that a deep ring's small batches wake each
// side once in several batches, while a shallow one's wake it at once.
func wakeGoal(prefetch int) int { return max(1, (prefetch+1)/4) }

// stopEpoch ends the running epoch, if any, cancelling its reads; with
// wait it returns once the epoch's work has stopped and the batches Python
// did not take are released, else at once (the next epoch and Close wait
// instead).
func (h *handle) stopEpoch(wait bool) {
	h.mu.Lock()
	r := h.run
	h.run = nil
	var ended chan struct{}
	if r != nil && !wait {
		ended = make(chan struct{})
		h.ending = ended
	}
	ending := h.ending
	h.mu.Unlock()
	if r != nil {
		r.cancel()
		C.lgq_wake(h.q)
		stop := func() {
			<-r.done
			h.releaseQueued()
			C.lgq_idle(h.q)
		}
		if !wait {
			go func() {
				stop()
				close(ended)
			}()
			return
		}
		stop()
	}
	if wait && ending != nil {
		<-ending
	}
}

// processInfo answers lg_info(0, "process"): the loaders the library
// holds (closed ones included until their batches are released) and its
// goroutines, for leak checks.
func processInfo() map[string]int {
	handles.mu.RLock()
	defer handles.mu.RUnlock()
	return map[string]int{"handles": len(handles.m), "goroutines": goruntime.NumGoroutine()}
}

// info answers lg_info: "stats", "plan", or "crop" of (epoch a, index b).
func (h *handle) info(what string, a, b int) (any, error) {
	switch what {
	case "stats":
		return statsJSON(h.loader.Stats()), nil
	case "plan":
		return h.plan, nil
	case "crop":
		return h.loader.Crop(a, b)
	}
	return nil, fmt.Errorf("lg_info: unknown question %q", what)
}

// slot returns the C memory of b's slot, made when the slot is first
// handed out, and points its tensors at b.
func (h *handle) slot(b *runtime.Batch) *cslot {
	h.slotsMu.Lock()
	for len(h.slots) <= b.Slot {
		h.slots = append(h.slots, nil)
	}
	s := h.slots[b.Slot]
	if s == nil {
		s = newCSlot(h.id, h.q, b, h.plan)
		h.slots[b.Slot] = s
	}
	h.slotsMu.Unlock()
	s.point(b)
	return s
}

// slotAt returns the C memory of a slot handed out before.
func (h *handle) slotAt(slot int) (*cslot, error) {
	h.slotsMu.Lock()
	defer h.slotsMu.Unlock()
	if slot < 0 || slot >= len(h.slots) || h.slots[slot] == nil {
		return nil, fmt.Errorf("slot %d was never handed out", slot)
	}
	return h.slots[slot], nil
}

// envPrefixes are the environment variables the Go side reads at run
// time: Go copied the environment when the library loaded, so open
// brings these up to date with Python's os.environ.
var envPrefixes = []string{"LOADERGEN_", "AWS_", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "SLURM_", "OMPI_", "MIN_BATCH_", "MAX_CONCURRENT_CUDA_STREAMS"}

// syncEnv sets the variables of env that the Go side reads, and unsets
// those env lacks.
func syncEnv(env map[string]string) {
	if env == nil {
		return
	}
	read := func(k string) bool {
		for _, p := range envPrefixes {
			if strings.HasPrefix(k, p) {
				return true
			}
		}
		return false
	}
	for k, v := range env {
		if old, ok := os.LookupEnv(k); read(k) && (!ok || old != v) {
			os.Setenv(k, v)
		}
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := env[k]; read(k) && !ok {
			os.Unsetenv(k)
		}
	}
}

// cslot is the C memory of one staging slot's batch: what Python reads
// and what DLPack consumers keep pointers to.
type cslot struct {
	batch   *runtime.Batch // the slot's batch (the pointer stays; its contents change)
	c       *C.lg_slot     // the lease and manager_ctx; its holds count is atomic
	indices *C.int64_t     // BatchSize of them
	shapes  *C.int64_t     // per key: maxDims of them
	// streams are the CUDA streams consumers named for the slot's device
	// tensors since it was last handed out; guarded by mu, written by
	// lgTakeSlow and read by lgSlotReleased.
	mu      sync.Mutex
	streams []uintptr
}

// maxDims bounds a tensor's dimensions: the batch axis, a class axis and
// the key's own.
const maxDims = 16

func newCSlot(h int64, q *C.lg_queue, b *runtime.Batch, p runtime.Plan) *cslot {
	s := &cslot{batch: b}
	s.c = (*C.lg_slot)(C.calloc(1, C.size_t(unsafe.Sizeof(C.lg_slot{}))))
	s.c.handle, s.c.slot, s.c.keys, s.c.queue = C.int64_t(h), C.int64_t(b.Slot), C.int64_t(len(p.Keys)), q
	s.c.tensors = (*C.DLManagedTensor)(C.calloc(C.size_t(max(len(p.Keys), 1)), C.size_t(unsafe.Sizeof(C.DLManagedTensor{}))))
	s.indices = (*C.int64_t)(C.calloc(C.size_t(max(p.BatchSize, 1)), 8))
	s.shapes = (*C.int64_t)(C.calloc(C.size_t(max(len(p.Keys), 1)*maxDims), 8))
	return s
}

func (s *cslot) tensor(k int) *C.DLManagedTensor {
	return (*C.DLManagedTensor)(unsafe.Add(unsafe.Pointer(s.c.tensors), k*int(unsafe.Sizeof(C.DLManagedTensor{}))))
}

// holds is the slot's count of holds (lg_slot.holds), which ready.c
// changes atomically.
func (s *cslot) holds() *int64 { return (*int64)(unsafe.Pointer(&s.c.holds)) }

// point describes batch b in the slot's C memory, with one hold, that of
// the batch Python will take: indices, and each key's tensor (data,
// device, shape, type). Nothing reads it meanwhile: a slot is handed out
// again only once the holds of its last batch are all released.
func (s *cslot) point(b *runtime.Batch) {
	idx := unsafe.Slice((*int64)(unsafe.Pointer(s.indices)), len(b.Indices))
	for i, v := range b.Indices {
		idx[i] = int64(v)
	}
	shapes := unsafe.Slice((*int64)(unsafe.Pointer(s.shapes)), len(b.Tensors)*maxDims)
	for k, t := range b.Tensors {
		m := s.tensor(k)
		shape := shapes[k*maxDims:][:len(t.Shape)]
		for i, d := range t.Shape {
			shape[i] = int64(d)
		}
		dt := &m.dl_tensor
		dt.device = C.DLDevice{device_type: C.kDLCPU}
		dt.data = unsafe.Pointer(unsafe.SliceData(t.Data))
		if t.Device != 0 {
			dt.device = C.DLDevice{device_type: C.kDLCUDA, device_id: C.int32_t(deviceOrdinal(b))}
			dt.data = *(*unsafe.Pointer)(unsafe.Pointer(&t.Device)) // a device address, no Go pointer
		}
		dt.ndim = C.int32_t(len(t.Shape))
		code, bits := dlType(t.DType)
		dt.dtype = C.DLDataType{code: C.uint8_t(code), bits: C.uint8_t(bits), lanes: 1}
		dt.shape = (*C.int64_t)(unsafe.Pointer(unsafe.SliceData(shape)))
		dt.strides, dt.byte_offset = nil, 0
		m.manager_ctx = unsafe.Pointer(s.c)
		m.deleter = (*[0]byte)(C.lg_dl_deleter)
	}
	dev := s.tensor(0).dl_tensor.device
	s.c.batch = C.lg_batch{number: C.int64_t(b.Number), n: C.int64_t(len(b.Indices)), indices: s.indices,
		device_type: C.int64_t(dev.device_type), device_id: C.int64_t(dev.device_id)}
	s.mu.Lock()
	s.streams = s.streams[:0]
	s.mu.Unlock()
	atomic.StoreInt64(s.holds(), 1)
}

// free releases the slot's C memory.
func (s *cslot) free() {
	C.free(unsafe.Pointer(s.c.tensors))
	C.free(unsafe.Pointer(s.c))
	C.free(unsafe.Pointer(s.indices))
	C.free(unsafe.Pointer(s.shapes))
}

// dlType is DLPack's type code and bits of d. A bool key goes as uint8,
// one byte per element as the loader stages it: torch 1.13 and numpy 1.24
// refuse DLPack's kDLBool (code 6).
func dlType(d runtime.DType) (code, bits int) {
	switch d {
	case runtime.Int8, runtime.Int16, runtime.Int32, runtime.Int64:
		return 0, 8 * d.Size()
	case runtime.Float16, runtime.Float32, runtime.Float64:
		return 2, 8 * d.Size()
	case runtime.BFloat16:
		return 4, 16
	}
	return 1, 8 * d.Size() // the unsigned ints, and bool
}
