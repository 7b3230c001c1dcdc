package runtime

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestTrace: the trace is valid JSON with a named track per worker, one
// fill slice per sample and one wait slice per batch.
func TestTrace(t *testing.T) {
	var out bytes.Buffer
	e := newTestEngine(t, testPlan(4, LoaderDefaults{Prefetch: 2}), 10, Options{Workers: 2, Trace: &out}, nil)
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
	indices := map[float64]bool{}
	for _, ev := range events {
		switch ev.Ph {
		case "M":
			if ev.Name == "thread_name" {
				tracks[ev.Tid] = ev.Args["name"].(string)
			}
		case "X":
			counts[ev.Name]++
			if ev.Name == "fill" {
				indices[ev.Args["index"].(float64)] = true
				if ev.Tid != workerTrack && ev.Tid != workerTrack+1 {
					t.Errorf("fill on track %d, not a worker's", ev.Tid)
				}
			}
		}
	}
	if tracks[workerTrack] != "worker 0" || tracks[workerTrack+1] != "worker 1" || tracks[consumerTrack] == "" {
		t.Errorf("tracks %v", tracks)
	}
	if counts["fill"] != 10 || len(indices) != 10 || counts["wait"] != 3 {
		t.Errorf("%d fill slices over %d indices and %d waits; want 10, 10, 3", counts["fill"], len(indices), counts["wait"])
	}
}
