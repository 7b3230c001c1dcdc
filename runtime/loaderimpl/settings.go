package loaderimpl

import (
	"fmt"
	"log/slog"
	goruntime "runtime"
	"strconv"

	"github.com/loadergen/loadergen/internal/devicename"
	"github.com/loadergen/loadergen/internal/envswitch"
	"github.com/loadergen/loadergen/internal/sizes"
	"github.com/loadergen/loadergen/runtime"
)

// settings are Options resolved against the plan and the environment.
type settings struct {
	device     string
	workers    int
	prefetch   int  // batches staged ahead at start
	maxFetch   int  // the most prefetch may grow to: prefetch itself unless auto
	auto       bool // prefetch is the schema's "auto": the engine deepens the ring up to maxFetch
	locality   int  // batches per locality window: runtime.Options.Locality over the plan's; 0 off
	place      placement
	logger     *slog.Logger
	logEpochs  bool
	requireGPU bool
	graphs     bool     // the CUDA backend launches graphs: CUDAGraphsEnv, else runtime.Options.CUDAGraphs
	envWarns   []string // the plan's generationEnv warnings, logged at start
}

// errGPURequired is the error of a loader whose CUDA device cannot be used,
// for the reason why, when the caller requires the GPU.
func errGPURequired(device string, why error) error {
	return fmt.Errorf("%s: the GPU is required (Options.RequireGPU or %s) but cannot be used: %w", device, runtime.RequireGPUEnv, why)
}

// resolve applies o over the plan's defaults, reading the environment
// (RequireGPUEnv, the launcher's, and the stream variables that
// generationEnv warns about) through getenv.
func resolve(p runtime.Plan, o runtime.Options, getenv func(string) string) (settings, error) {
	s := settings{
		device:    p.Device,
		workers:   p.Loader.Workers,
		prefetch:  p.Loader.Prefetch,
		logger:    o.Logger,
		logEpochs: o.LogEpochs,
	}
	// The GPU demand is turned on, never off, by its variable; graphs are
	// turned either way by theirs, over the Options.
	require, _, err := envswitch.Read(runtime.RequireGPUEnv, getenv(runtime.RequireGPUEnv))
	if err != nil {
		return s, err
	}
	s.requireGPU = require || o.RequireGPU
	graphs, set, err := envswitch.Read(runtime.CUDAGraphsEnv, getenv(runtime.CUDAGraphsEnv))
	if err != nil {
		return s, err
	}
	s.graphs = graphs || !set && o.CUDAGraphs
	if o.Device != "" {
		if _, _, err := devicename.Parse(o.Device); err != nil {
			return s, fmt.Errorf("options: %w", err)
		}
		s.device = o.Device
	}
	if o.Workers < 0 || o.Prefetch < 0 {
		return s, fmt.Errorf("options: workers (%d) and prefetch (%d) must not be negative", o.Workers, o.Prefetch)
	}
	switch {
	case o.Locality > 0:
		s.locality = o.Locality
	case o.Locality == 0:
		s.locality = max(p.Loader.Locality.Window, 0)
	case o.Locality != runtime.LocalityOff:
		return s, fmt.Errorf("options: locality %d is not a window >= 1, 0 (the schema's) or LocalityOff", o.Locality)
	}
	if o.Workers > 0 {
		s.workers = o.Workers
	}
	if s.workers == 0 {
		s.workers = goruntime.GOMAXPROCS(0)
	}
	if o.Prefetch > 0 {
		s.prefetch = o.Prefetch
	}
	if s.prefetch == runtime.PrefetchAuto {
		s.auto = true
		s.prefetch, s.maxFetch = autoPrefetch(s.workers, p.BatchSize, p.BatchMiB, p.Loader.MaxStagingMB)
	} else {
		s.maxFetch = s.prefetch
	}
	if err := sizes.CheckStaging(s.prefetch, p.BatchMiB, p.Loader.MaxStagingMB); err != nil {
		return s, fmt.Errorf("options: %w, fixed when the loader was generated (loader.max_staging_mb): lower Prefetch", err)
	}
	if s.place, err = place(o, getenv); err != nil {
		return s, err
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	s.envWarns = generationEnv(p, getenv)
	return s, nil
}

// maxAutoPrefetch bounds the depth that "prefetch: auto" grows to, whatever
// the workers and batch size: past it a ring holds more batches than any
// straggler needs and only costs pinned memory.
const maxAutoPrefetch = 64

// autoPrefetch is the ring depth "prefetch: auto" starts at and the most it
// may grow to, for workers filling batches of batch samples of batchMiB:
// it starts at the smallest depth that keeps twice the workers' count of
// samples in flight, so that every worker has work while a batch waits for
// its slowest sample, and at least 2; it may grow until eight times the
// workers' count of samples are in flight, or maxAutoPrefetch. Both stay
// within the staging limit limitMB (sizes.CheckStaging), down to 1.
func autoPrefetch(workers, batch int, batchMiB, limitMB float64) (start, most int) {
	ahead := func(samples int) int { return min(max(2, (samples+batch-1)/batch), maxAutoPrefetch) }
	fit := func(prefetch int) int {
		for prefetch > 1 && sizes.CheckStaging(prefetch, batchMiB, limitMB) != nil {
			prefetch--
		}
		return prefetch
	}
	return fit(ahead(2 * workers)), fit(ahead(8 * workers))
}

// describePrefetch says how deep the ring is for the start-up line: "4",
// or "auto: 4, up to 16".
func (s settings) describePrefetch() string {
	if !s.auto {
		return strconv.Itoa(s.prefetch)
	}
	return fmt.Sprintf("auto: %d, up to %d", s.prefetch, s.maxFetch)
}
