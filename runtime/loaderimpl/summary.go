package loaderimpl

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/loadergen/loadergen/runtime"
)

// generationEnv returns a warning, one per variable, for each stream
// variable set in getenv's environment to a value other than the plan's:
// it would have changed the plan at go generate, and changes nothing now.
func generationEnv(p runtime.Plan, getenv func(string) string) []string {
	var out []string
	for _, v := range []struct {
		env, setting string
		baked        float64
	}{
		{runtime.EnvMinBatchSize, "min_batch_size", float64(p.Streams.MinBatchSize)},
		{runtime.EnvMinBatchMemoryMB, "min_batch_memory_mb", p.Streams.MinBatchMemoryMB},
		{runtime.EnvMaxStreams, "max_streams", float64(p.Streams.MaxStreams)},
	} {
		val := strings.TrimSpace(getenv(v.env))
		if val == "" {
			continue
		}
		switch f, err := strconv.ParseFloat(val, 64); {
		case p.Device == "cpu":
			out = append(out, fmt.Sprintf("environment %s=%s is read when a loader is generated (go generate), and this one was generated for device cpu, where %s decides nothing", v.env, val, v.setting))
		case err != nil || f != v.baked:
			out = append(out, fmt.Sprintf("environment %s=%s is read when the loader is generated (go generate), not when it runs: this loader was generated with %s=%s; set it when you run go generate to change the plan",
				v.env, val, v.setting, strconv.FormatFloat(v.baked, 'f', -1, 64)))
		}
	}
	return out
}

// summary describes the plan as it runs on backend ("cpu" or "cuda") for
// the start-up log line, e.g. "batch 16 (402.7 MiB), 2 CUDA streams" or
// "batch 16 (52.0 MiB), streams off: batch memory 52.0 MiB < 100 MiB".
func summary(p runtime.Plan, backend string) string {
	batch := fmt.Sprintf("batch %d (%.1f MiB)", p.BatchSize, p.BatchMiB)
	switch {
	case !p.UseStreams && backend == "cuda" && p.Device == "cpu":
		return fmt.Sprintf("%s, one CUDA stream: the loader was generated for device cpu, which plans no streams (generate it for cuda to plan them)", batch)
	case !p.UseStreams:
		return fmt.Sprintf("%s, streams off: %s", batch, p.Reason)
	case backend != "cuda":
		return fmt.Sprintf("%s, the plan's %d CUDA streams are not in use on the %s backend", batch, p.NumStreams, backend)
	}
	return fmt.Sprintf("%s, %d CUDA streams", batch, p.NumStreams)
}
