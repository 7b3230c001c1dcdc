package runtime

import (
	"io"
	"log/slog"

	"github.com/loadergen/loadergen/internal/envswitch"
)

// Options are the run-time choices of a loader. The zero value means "as the
// schema says". Options cannot change the stream plan nor lift the schema's
// staging-memory limit.
type Options struct {
	Device  string // "" (the schema's), "cpu", "cuda" or "cuda:N"
	Workers int    // 0: the schema's, or GOMAXPROCS when that is 0 too
	// Prefetch fixes the batches staged ahead of the one in use; 0 takes
	// the schema's, which may be "auto" (PrefetchAuto): a depth chosen at
	// start and deepened while the loader runs.
	Prefetch int
	// Locality sets the window, in batches, within which a volume source's
	// crops are grouped by the chunks they read (crops.locality); 0 takes
	// the schema's, LocalityOff turns grouping off. A loader whose source
	// gives no locality keys (a volume source does) refuses a window.
	Locality int

	// Rank, WorldSize and LocalRank place this process among the processes
	// of a distributed run: it loads the shard of rank Rank, and device
	// "cuda" means GPU LocalRank of its node. With WorldSize 0 all three
	// come from the launcher's environment (torchrun's RANK, WORLD_SIZE
	// and LOCAL_RANK, or Slurm's or Open MPI's), or the process runs
	// alone; Rank or LocalRank without WorldSize is an error.
	Rank      int
	WorldSize int
	LocalRank int

	Logger *slog.Logger // nil: slog.Default()
	// RequireGPU makes a loader whose device is CUDA fail to start, naming
	// the reason, when this process cannot use the GPU (CUDAUsable), rather
	// than run on the CPU with the reason logged: a training job on a GPU
	// node must not crawl on the CPU unnoticed. The environment variable
	// LOADERGEN_REQUIRE_GPU=1 does the same.
	RequireGPU bool
	// CUDAGraphs launches each full batch's copies to the GPU as one CUDA
	// graph per stream, which the CUDA backend builds once per slot, instead
	// of issuing them call by call. Off by default: on an H100 (driver 580;
	// docs/PERFORMANCE.md) graphs did not lower the host's cost per batch
	// (28-54 us against 23-60 us call by call). The environment variable
	// LOADERGEN_CUDA_GRAPHS=1 turns them on for every loader of a process,
	// and =0 off, whatever Options say.
	CUDAGraphs bool
	// LogEpochs logs a line at the end of every epoch with its rates
	// (Stats.Since): samples/s, GB/s and the share of the loop's time spent in
	// the loader, filling samples itself included.
	LogEpochs bool
	// Trace, when set, receives a Chrome trace-event JSON (open it in
	// Perfetto or chrome://tracing): a track per worker with each run of
	// samples it fills, one for the consumer's waits, and under CUDA one per
	// stream with its copies. It is complete after Close, or, while batches
	// are kept past Close (Batch.Keep), after the last of their Release.
	Trace io.Writer
}

// RequireGPUEnv names the environment variable that sets
// Options.RequireGPU for every loader of a process ("1" or "true").
const RequireGPUEnv = envswitch.RequireGPU

// CUDAGraphsEnv names the environment variable that turns the CUDA
// backend's graphs on ("1" or "true") or off ("0" or "false") for every
// loader of a process, over Options.CUDAGraphs.
const CUDAGraphsEnv = envswitch.CUDAGraphs
