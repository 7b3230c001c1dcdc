//go:build !cuda

package runtime

import "log/slog"

// newBackend returns the CPU backend: this build has no CUDA support. A plan
// or option that asks for CUDA is logged once and run on the CPU.
func newBackend(device string, _ Plan, _ int, log *slog.Logger, _ *counters, _ *tracer) (backend, error) {
	if _, cuda, _ := parseDevice(device); cuda {
		log.Warn("loadergen: CUDA backend not compiled in (build with -tags cuda); running on CPU", "device", device)
	}
	return cpuBackend{}, nil
}

// deviceBatch is empty without CUDA: batches live in host memory only.
type deviceBatch struct{}
