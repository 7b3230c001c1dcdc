package small

import (
	"context"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/pattern"
)

// TestClonesKeepTheirData: the loop reuses its batches (the same pointers
// come back with other samples), and clones kept in a list across the
// epoch still hold their own samples at the end.
func TestClonesKeepTheirData(t *testing.T) {
	l := newLoader(t, source{n: 37}, quiet)
	var kept []*SmallBatch
	seen := map[*SmallBatch]int{}
	for b, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		seen[b]++
		c := b.Clone()
		if c.Staged() != nil || c.Image.Device != 0 {
			t.Fatal("a clone has device memory or a staged batch")
		}
		kept = append(kept, c)
	}
	if len(seen) >= len(kept) {
		t.Fatalf("%d batches in %d distinct objects: the loop did not reuse them, and the test shows nothing", len(kept), len(seen))
	}
	n := 0
	for _, c := range kept {
		if err := pattern.Batch(c, c.Indices, keys...); err != nil {
			t.Fatalf("a kept clone changed: %v", err)
		}
		if len(c.ImageData()) != len(c.Indices)*smallImageElems || c.Image.Shape[0] != len(c.Indices) {
			t.Fatalf("clone tensor of %d bytes, shape %v for %d samples", len(c.Image.Data), c.Image.Shape, len(c.Indices))
		}
		n += len(c.Indices)
	}
	if n != 37 {
		t.Errorf("clones hold %d samples, want 37", n)
	}
}
