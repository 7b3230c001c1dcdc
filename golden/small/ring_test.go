package small

import (
	"testing"
	"time"

	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/runtime"
)

// straggler is source with slow reads: 1 ms a sample, 6 ms for every
// fourth, so that each batch of 4 waits for one straggler.
type straggler struct{ source }

func (s straggler) Read(smp *SmallSample) error {
	d := time.Millisecond
	if smp.Index%4 == 0 {
		d = 6 * time.Millisecond
	}
	time.Sleep(d)
	return s.source.Read(smp)
}

// TestRingDeepens: with prefetch auto (small.yaml), 16 workers behind
// stragglers make the ring deeper while the epoch runs, and the slots the
// ring adds reach the generated loader's typed views (Engine.OnSlot):
// every element of every batch is checked, across two epochs.
func TestRingDeepens(t *testing.T) {
	const n = 4 * 100
	l := newLoader(t, straggler{source{n: n}}, runtime.Options{Workers: 16, Logger: goldentest.Quiet})
	start := l.Stats().Prefetch
	if start != 8 {
		t.Fatalf("16 workers, batch 4: prefetch %d at start, want 8", start)
	}
	for e := range 2 {
		if got := len(epoch(t, l, e, 0)); got != l.Len() {
			t.Fatalf("epoch %d: %d batches, want %d", e, got, l.Len())
		}
	}
	if got := l.Stats().Prefetch; got <= start {
		t.Errorf("prefetch %d after two epochs of stragglers, want more than %d", got, start)
	}
}
