package runtime

import (
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
)

// Options are the run-time choices of a loader. The zero value means "as the
// schema says". Options cannot change the stream plan.
type Options struct {
	Device    string       // "" (the schema's), "cpu", "cuda" or "cuda:N"
	Workers   int          // 0: the schema's, or GOMAXPROCS when that is 0 too
	Prefetch  int          // 0: the schema's; batches staged ahead of the one in use
	Rank      int          // this process's rank, when WorldSize is set
	WorldSize int          // 0: RANK and WORLD_SIZE from the environment, else 1
	Logger    *slog.Logger // nil: slog.Default()
	// Trace, when set, receives a Chrome trace-event JSON (open it in
	// Perfetto or chrome://tracing): a track per worker with each sample
	// fill, and one for the consumer's waits. It is complete after Close.
	Trace io.Writer
}

// settings are Options resolved against the plan and the environment.
type settings struct {
	device    string
	workers   int
	prefetch  int
	rank      int
	worldSize int
	logger    *slog.Logger
}

func resolve(p Plan, o Options, getenv func(string) string) (settings, error) {
	s := settings{
		device:    p.Device,
		workers:   p.Loader.Workers,
		prefetch:  max(p.Loader.Prefetch, 1),
		rank:      o.Rank,
		worldSize: o.WorldSize,
		logger:    o.Logger,
	}
	if o.Device != "" {
		if _, _, err := parseDevice(o.Device); err != nil {
			return s, fmt.Errorf("options: %w", err)
		}
		s.device = o.Device
	}
	if o.Workers < 0 || o.Prefetch < 0 {
		return s, fmt.Errorf("options: workers (%d) and prefetch (%d) must not be negative", o.Workers, o.Prefetch)
	}
	if o.Workers > 0 {
		s.workers = o.Workers
	}
	if s.workers == 0 {
		s.workers = runtime.GOMAXPROCS(0)
	}
	if o.Prefetch > 0 {
		s.prefetch = o.Prefetch
	}
	if s.worldSize == 0 {
		var err error
		if s.rank, s.worldSize, err = envRank(getenv); err != nil {
			return s, err
		}
	}
	if s.worldSize < 1 || s.rank < 0 || s.rank >= s.worldSize {
		return s, fmt.Errorf("options: rank %d is not in [0, world size %d)", s.rank, s.worldSize)
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	return s, nil
}

// envRank reads RANK and WORLD_SIZE as torch.distributed sets them.
func envRank(getenv func(string) string) (rank, worldSize int, err error) {
	worldSize = 1
	for _, v := range []struct {
		name string
		dst  *int
	}{{"RANK", &rank}, {"WORLD_SIZE", &worldSize}} {
		s := strings.TrimSpace(getenv(v.name))
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, 0, fmt.Errorf("environment: %s=%q is not an integer", v.name, s)
		}
		*v.dst = n
	}
	return rank, worldSize, nil
}

// parseDevice reads "cpu", "cuda" or "cuda:N" (N >= 0); cuda reports whether
// d names a CUDA device.
func parseDevice(d string) (ordinal int, cuda bool, err error) {
	switch d {
	case "cpu":
		return 0, false, nil
	case "cuda":
		return 0, true, nil
	}
	if n, ok := strings.CutPrefix(d, "cuda:"); ok {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 {
			return i, true, nil
		}
	}
	return 0, false, fmt.Errorf("device %q: want cpu, cuda or cuda:N", d)
}
