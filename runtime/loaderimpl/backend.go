package loaderimpl

import (
	"log/slog"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/internal/staged"
)

// backend owns staging memory and moves filled batches to their device.
// The CPU backend is always compiled in; the CUDA one with -tags cuda.
type backend interface {
	name() string
	// slot allocates staging slot s of n bytes, the host memory workers
	// fill, or returns it when the backend made it at start. Only the
	// consumer calls it, for the slots below backendConfig.slots and then
	// for each next one as an auto-depth ring deepens.
	slot(s int, n int64) ([]byte, error)
	// devicePtr is key k's device buffer in slot s (0 on the CPU).
	devicePtr(s, k int) uintptr
	// device is what runtime.Batch's GPU methods reach: nil on the CPU.
	device() staged.Device
	// reuse blocks until slot s may be refilled: its last copies have read
	// its host memory. The consumer calls it before dispatching into s.
	reuse(s int) error
	// filled starts moving batch number batch, n samples, from slot s to
	// the device. The filler that completes the slot calls it, before the
	// consumer may take the batch; it is never called twice for one fill.
	filled(s, batch, n int) error
	// settleAll counts the time of every completed copy, without waiting
	// for those still running (for Stats).
	settleAll()
	// close waits for the copies and releases everything slot acquired.
	close() error
}

// backendConfig is what newBackend starts a backend from.
type backendConfig struct {
	device    string // cpu, cuda or cuda:N (runtime.Options.Device over the plan's)
	localRank int    // this process's rank on its node: "cuda" is GPU localRank (modulo the GPUs it sees)
	plan      runtime.Plan
	slots     int  // the staging slots the ring starts with, which the backend makes at start
	maxSlots  int  // the most slots the ring may grow to: slot is never asked for one past it
	require   bool // a CUDA device that cannot be used is an error, not a CPU fallback (LOADERGEN_REQUIRE_GPU)
	graphs    bool // launch each full batch's copies as CUDA graphs when the driver can (runtime.Options.CUDAGraphs)
	log       *slog.Logger
	stats     *counters // the engine's: copy time and host stall go here
	trace     *tracer   // nil unless tracing
}
