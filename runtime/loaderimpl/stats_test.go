package loaderimpl

import (
	"sync"
	"testing"
)

// TestPaddingSnapshotWhileCounting: Stats taken from another goroutine
// while the consumer counts rows never shows more Rows than Spanned, so
// Padding stays in [0, 1]. Every batch here has no padding (Rows equals
// Spanned), so a snapshot that sees a batch's rows without its span reads
// a negative padding.
func TestPaddingSnapshotWhileCounting(t *testing.T) {
	var c counters
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		lengths := []int32{3}
		for range 1_000_000 {
			c.countRows(lengths)
		}
		close(stop)
	}()
	for {
		select {
		case <-stop:
			wg.Wait()
			return
		default:
		}
		if s := c.snapshot(); s.Rows > s.Spanned {
			t.Fatalf("snapshot has %d rows of %d spanned: padding %v", s.Rows, s.Spanned, s.Padding())
		}
	}
}
