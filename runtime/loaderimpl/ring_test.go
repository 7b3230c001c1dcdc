package loaderimpl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loadergen/loadergen/runtime"
)

// TestAutoPrefetch: the starting depth keeps twice the workers' count of
// samples in flight, the bound eight times, both at least 2, at most
// maxAutoPrefetch, and within the staging limit down to 1.
func TestAutoPrefetch(t *testing.T) {
	for _, tt := range []struct {
		name                string
		workers, batch      int
		batchMiB, limit     float64
		wantStart, wantMost int
	}{
		{"16 workers, batch 8", 16, 8, 1, 0, 4, 16},
		{"uneven: 3 workers, batch 4", 3, 4, 1, 0, 2, 6},
		{"big batches: never below 2", 2, 64, 1, 0, 2, 2},
		{"one sample a batch", 1, 1, 1, 0, 2, 8},
		{"capped", 64, 1, 1, 0, maxAutoPrefetch, maxAutoPrefetch},
		{"staging limit: (3+1) x 100 MiB fit in 400", 16, 8, 100, 400, 3, 3},
		{"staging limit between start and bound", 16, 8, 1, 8.5, 4, 7},
		{"staging limit below 2 slots: 1, which resolve refuses", 16, 8, 100, 150, 1, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start, most := autoPrefetch(tt.workers, tt.batch, tt.batchMiB, tt.limit)
			if start != tt.wantStart || most != tt.wantMost {
				t.Errorf("autoPrefetch(%d workers, batch %d, %g MiB, limit %g) = %d, %d; want %d, %d",
					tt.workers, tt.batch, tt.batchMiB, tt.limit, start, most, tt.wantStart, tt.wantMost)
			}
		})
	}
}

// straggling fills samples as a slow source does: each sample sleeps 1 ms,
// every eighth (index%8 == 0) 9 ms, so that each batch of 8 waits for one
// straggler. It writes the pattern of patterned, and checks that every
// run's slot had its views set by OnSlot first.
type straggling struct {
	patterned
	mu    sync.Mutex
	views map[int]bool // slots OnSlot has seen
}

func (s *straggling) fill(r *Run) error {
	s.mu.Lock()
	seen := s.views[r.Slot]
	s.mu.Unlock()
	if !seen {
		return fmt.Errorf("slot %d filled before OnSlot set its views", r.Slot)
	}
	for _, index := range r.Indices {
		d := time.Millisecond
		if index%8 == 0 {
			d = 9 * time.Millisecond
		}
		time.Sleep(d)
	}
	return s.patterned.fill(r)
}

// onSlot is the OnSlot function: it notes that slot s has its views.
func (s *straggling) onSlot(slot int) {
	s.mu.Lock()
	s.views[slot] = true
	s.mu.Unlock()
}

// stragglingLoader is the loader settings of the straggler tests: shuffled,
// so that a deeper ring's batches are compared on a non-trivial order.
func stragglingLoader(prefetch int) runtime.LoaderDefaults {
	return runtime.LoaderDefaults{Prefetch: prefetch, Shuffle: true, Seed: 11}
}

// stragglingPlan is testPlan in batches of 8 with stragglingLoader.
func stragglingPlan(prefetch int) runtime.Plan { return testPlan(8, stragglingLoader(prefetch)) }

// newStraggling starts an engine of 16 workers over n straggling samples
// of plan p, batches of 8 (stragglingPlan).
func newStraggling(tb testing.TB, p runtime.Plan, n int, o runtime.Options) (*Engine, *straggling) {
	tb.Helper()
	o.Workers = 16
	if o.Logger == nil {
		o.Logger = quiet
	}
	src := &straggling{views: map[int]bool{}}
	e, err := NewEngine(p, n, o, src.fill)
	if err != nil {
		tb.Fatal(err)
	}
	src.e = e
	e.OnSlot(src.onSlot)
	tb.Cleanup(func() { e.Close() })
	return e, src
}

// TestRingDeepens: with prefetch auto, workers that idle behind stragglers
// make the ring deeper, one slot at a time, up to its bound; the batches
// stay exactly those of a fixed ring; the depth shows in Stats, the log
// and the trace. A fixed prefetch never changes.
func TestRingDeepens(t *testing.T) {
	var logs bytes.Buffer
	var trace bytes.Buffer
	e, src := newStraggling(t, stragglingPlan(runtime.PrefetchAuto), 8*64, runtime.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Trace: &trace})
	if e.Prefetch() != 4 || e.MaxSlots() != 17 {
		t.Fatalf("16 workers, batch 8: prefetch %d, max slots %d; want 4 and 17", e.Prefetch(), e.MaxSlots())
	}
	if !strings.Contains(logs.String(), `prefetch="auto: 4, up to 16"`) {
		t.Errorf("start-up line does not give the depth:\n%s", logs.String())
	}
	got := collect(t, e, 0, 0)
	want := collect(t, newTestEngine(t, stragglingPlan(2), 8*64, runtime.Options{Workers: 3}, nil), 0, 0)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("batches of the deepening ring differ from a fixed ring's:\n got %v\nwant %v", got, want)
	}
	deep := e.Prefetch()
	if deep <= 4 || deep > 16 {
		t.Fatalf("after an epoch of stragglers prefetch is %d, want in (4, 16]", deep)
	}
	if s := e.Stats(); s.Prefetch != deep {
		t.Errorf("Stats.Prefetch %d, want %d", s.Prefetch, deep)
	}
	grew := fmt.Sprintf("Test epoch 0: prefetch auto grew from 4 to %d: the loop waited for batches while workers idled for want of a free slot", deep)
	if n := strings.Count(logs.String(), "prefetch auto grew"); n != 1 || !strings.Contains(logs.String(), grew) {
		t.Errorf("%d lines log a deeper ring, want 1 with %q:\n%s", n, grew, logs.String())
	}
	src.mu.Lock()
	views := len(src.views)
	src.mu.Unlock()
	if views != deep+1 {
		t.Errorf("OnSlot saw %d slots, want %d", views, deep+1)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	var events []struct {
		Ph   string         `json:"ph"`
		Name string         `json:"name"`
		Args map[string]any `json:"args"`
	}
	if err := json.Unmarshal(trace.Bytes(), &events); err != nil {
		t.Fatalf("trace: %v", err)
	}
	var depths []int
	for _, ev := range events {
		if ev.Ph == "C" && ev.Name == "prefetch" {
			v, _ := ev.Args["prefetch"].(float64)
			depths = append(depths, int(v))
		}
	}
	if len(depths) != deep-3 || depths[0] != 4 || depths[len(depths)-1] != deep {
		t.Errorf("trace's prefetch counter %v, want 4 up to %d", depths, deep)
	}
}

// TestRingIdleRule: a wait of the consumer shows the ring too shallow
// when a worker slept for want of a share through half of it or more; one
// that fell asleep just before the wait ended (a hand-off merely late)
// shows nothing, nor does a wait shorter than a worker's poll. The workers of an engine with no epoch sleep; the waits
// are placed around the moment the first of them fell asleep.
func TestRingIdleRule(t *testing.T) {
	e := newTestEngine(t, testPlan(1, runtime.LoaderDefaults{}), 8, runtime.Options{Workers: 2}, nil)
	var asleep int64 // when the first worker fell asleep
	for deadline := time.Now().Add(10 * time.Second); ; {
		a, b := e.idleSince[0].Load(), e.idleSince[1].Load()
		if a != 0 && b != 0 {
			asleep = min(a, b)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the workers of an idle engine did not go to sleep")
		}
		time.Sleep(time.Millisecond)
	}
	ms := int64(time.Millisecond)
	for _, tt := range []struct {
		name     string
		from, to int64 // the wait, relative to asleep
		idle     time.Duration
	}{
		{"asleep through the wait", 1 * ms, 5 * ms, 4 * time.Millisecond},
		{"asleep for its second half", -2 * ms, 2 * ms, 2 * time.Millisecond},
		{"asleep for its last tenth: late", -9 * ms, 1 * ms, 0},
		{"awake through the wait", -9 * ms, -1 * ms, 0},
		{"asleep through a wait shorter than a poll", 1 * ms, 1*ms + int64(pollTime/2), 0},
	} {
		got := e.idled(asleep+tt.from, asleep+tt.to)
		if got.idle != tt.idle || got.wait != time.Duration(tt.to-tt.from) {
			t.Errorf("%s: idled %v of %v, want %v of %v", tt.name, got.idle, got.wait, tt.idle, time.Duration(tt.to-tt.from))
		}
	}
}

// TestRingStaysFixed: a prefetch that the schema or Options fix never
// grows, and an auto ring never grows past its staging limit.
func TestRingStaysFixed(t *testing.T) {
	for _, tt := range []struct {
		name     string
		prefetch int
		o        runtime.Options
		most     int
	}{
		{"schema", 2, runtime.Options{}, 2},
		{"options over auto", runtime.PrefetchAuto, runtime.Options{Prefetch: 3}, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newStraggling(t, stragglingPlan(tt.prefetch), 8*32, tt.o)
			collect(t, e, 0, 0)
			if e.Prefetch() != tt.most || e.MaxSlots() != tt.most+1 {
				t.Errorf("prefetch %d of at most %d slots after an epoch of stragglers, want %d of %d", e.Prefetch(), e.MaxSlots(), tt.most, tt.most+1)
			}
		})
	}
	t.Run("staging limit", func(t *testing.T) {
		p := stragglingPlan(runtime.PrefetchAuto)
		p.BatchMiB, p.Loader.MaxStagingMB = 1, 6.5 // room for 6 slots: prefetch 5
		e, _ := newStraggling(t, p, 8*32, runtime.Options{})
		collect(t, e, 0, 0)
		if e.Prefetch() > 5 || e.MaxSlots() != 6 {
			t.Errorf("prefetch %d of at most %d slots, want at most 5 of 6", e.Prefetch(), e.MaxSlots())
		}
	})
}

// BenchmarkRingDepth: 16 workers fill batches of 8 samples of 1 ms, one in
// eight taking 9 ms: 2 ms a sample on average, so the workers' rate is
// 8000 samples/s when no worker idles. of_ideal is the rate against that;
// the target for the default (auto) is 0.8 (docs/PERFORMANCE.md, "Ring depth").
func BenchmarkRingDepth(b *testing.B) {
	for _, bb := range []struct {
		name     string
		prefetch int
	}{{"prefetch=2", 2}, {"prefetch=8", 8}, {"prefetch=auto", runtime.PrefetchAuto}} {
		b.Run(bb.name, func(b *testing.B) {
			const n = 8 * 128
			e, _ := newStraggling(b, stragglingPlan(bb.prefetch), n, runtime.Options{})
			ctx := context.Background()
			b.ResetTimer()
			for epoch := range b.N {
				for _, err := range e.Epoch(ctx, epoch, 0) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			rate := float64(n*b.N) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "samples/s")
			b.ReportMetric(rate/8000, "of_ideal")
			b.ReportMetric(float64(e.Prefetch()), "prefetch")
		})
	}
}
