package imagenet

import (
	"context"
	"iter"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/photoshards"
)

// TestSteadyStateAllocatesNothing: once every worker's buffers have grown
// (three batches), a batch of 64 JPEGs decoded, cropped, flipped and
// normalised allocates nothing, counting every goroutine. The photos are
// small (64 x 48) to keep the test quick; their crops are enlarged to 224.
// make test runs it without the race detector, which slows it tenfold.
func TestSteadyStateAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("35 s under the race detector; make test runs it without -race")
	}
	l := openLoader(t, photoshards.Set{Samples: 64 * 26, Shards: 4, Width: 64, Height: 48, Classes: 1000, Quality: 90, Seed: 1}, 2)
	next, stop := iter.Pull2(l.Epoch(context.Background(), 0))
	defer stop()
	batch := func() {
		if b, err, ok := next(); !ok || err != nil || len(b.Indices) != ImageNetBatchSize {
			t.Fatalf("next: %v %v", err, ok)
		}
	}
	for range 3 {
		batch()
	}
	if allocs := testing.AllocsPerRun(20, batch); allocs != 0 {
		t.Errorf("%.1f allocations per batch, want 0", allocs)
	}
}
