package loaderimpl

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/loadergen/loadergen/runtime"
)

// TestTrace: the trace is valid JSON with a named track per worker, fill
// slices that together cover every sample once, and one wait slice per
// batch.
func TestTrace(t *testing.T) {
	var out bytes.Buffer
	e := newTestEngine(t, testPlan(4, runtime.LoaderDefaults{Prefetch: 2}), 10, runtime.Options{Workers: 2, Trace: &out}, nil)
	collect(t, e, 0, 0)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	var events []struct {
		Ph   string         `json:"ph"`
		Name string         `json:"name"`
		Tid  int            `json:"tid"`
		Dur  float64        `json:"dur"`
		Args map[string]any `json:"args"`
	}
	if err := json.Unmarshal(out.Bytes(), &events); err != nil {
		t.Fatalf("trace is not JSON: %v\n%s", err, out.String())
	}
	tracks := map[int]string{}
	counts := map[string]int{}
	samples := 0
	for _, ev := range events {
		switch ev.Ph {
		case "M":
			if ev.Name == "thread_name" {
				tracks[ev.Tid] = ev.Args["name"].(string)
			}
		case "X":
			counts[ev.Name]++
			if ev.Name == "fill" {
				samples += int(ev.Args["samples"].(float64))
				if ev.Tid != workerTrack && ev.Tid != workerTrack+1 && ev.Tid != consumerTrack {
					t.Errorf("fill on track %d, neither a worker's nor the consumer's", ev.Tid)
				}
			}
		}
	}
	if tracks[workerTrack] != "worker 0" || tracks[workerTrack+1] != "worker 1" || tracks[consumerTrack] == "" {
		t.Errorf("tracks %v", tracks)
	}
	if counts["fill"] < 3 || samples != 10 || counts["wait"] != 3 {
		t.Errorf("%d fill slices of %d samples and %d waits; want at least one slice per batch, 10 samples, 3 waits", counts["fill"], samples, counts["wait"])
	}
}

// fillSlices runs one epoch of n samples in batches of batch with the
// source's failure hook fail (used to slow samples down) and returns the
// sample counts of the trace's fill slices.
func fillSlices(t *testing.T, batch, n int, fail func(key, index int) error) []int {
	t.Helper()
	var out bytes.Buffer
	e := newTestEngine(t, testPlan(batch, runtime.LoaderDefaults{Prefetch: 2}), n, runtime.Options{Workers: 2, Trace: &out}, fail)
	collect(t, e, 0, 0)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	var events []struct {
		Name string         `json:"name"`
		Args map[string]any `json:"args"`
	}
	if err := json.Unmarshal(out.Bytes(), &events); err != nil {
		t.Fatal(err)
	}
	var runs []int
	for _, ev := range events {
		if ev.Name == "fill" {
			runs = append(runs, int(ev.Args["samples"].(float64)))
		}
	}
	return runs
}

// TestRunSizing: workers claim long runs of fast samples (one run per
// batch once the speed is known) and single slow samples, so that a slow
// sample never holds up the others.
func TestRunSizing(t *testing.T) {
	// Fast samples: once timed, most batches are one run (a preempted run
	// makes the average, and the runs after it, shorter for a while).
	fast := fillSlices(t, 16, 16*40, nil)
	whole := 0
	for _, n := range fast {
		if n == 16 {
			whole++
		}
	}
	if whole < 20 {
		t.Errorf("fast samples: runs %v; want most of the 40 batches of 16 in one run", fast)
	}
	slow := fillSlices(t, 8, 32, func(key, index int) error {
		if key == 0 {
			time.Sleep(200 * time.Microsecond)
		}
		return nil
	})
	if len(slow) != 32 || slices.Max(slow) != 1 {
		t.Errorf("slow samples (200 µs each): runs %v; want 32 runs of one sample", slow)
	}
}
