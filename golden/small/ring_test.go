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
// stragglers make the ring deeper while epochs run, and the slots the ring
// adds reach the generated loader's typed views (Engine.OnSlot): every
// element of every batch is checked, in the epochs until the ring deepens
// and in one more over the deeper ring. The ring deepens when the loop
// waits while workers idle; a loaded machine (the race detector, the
// emulated driver, other tests) can keep the loop from waiting for a whole
// epoch, so the test gives it up to maxEpochs.
func TestRingDeepens(t *testing.T) {
	const n, maxEpochs = 4 * 100, 8
	l := newLoader(t, straggler{source{n: n}}, runtime.Options{Workers: 16, Logger: goldentest.Quiet})
	start := l.Stats().Prefetch
	if start != 8 {
		t.Fatalf("16 workers, batch 4: prefetch %d at start, want 8", start)
	}
	e := 0
	for ; e < maxEpochs && l.Stats().Prefetch <= start; e++ {
		if got := len(epoch(t, l, e, 0)); got != l.Len() {
			t.Fatalf("epoch %d: %d batches, want %d", e, got, l.Len())
		}
	}
	if got := l.Stats().Prefetch; got <= start {
		t.Fatalf("prefetch %d after %d epochs of stragglers, want more than %d", got, e, start)
	}
	if got := len(epoch(t, l, e, 0)); got != l.Len() {
		t.Fatalf("epoch %d, over the deeper ring: %d batches, want %d", e, got, l.Len())
	}
}
