package small

import (
	"slices"
	"sync"
	"testing"
)

// aheadSource is a source that reads ahead: it records the batches it is
// told of.
type aheadSource struct {
	source
	mu    sync.Mutex
	hints [][]int
}

func (s *aheadSource) ReadAhead(epoch int, indices []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hints = append(s.hints, slices.Clone(indices))
}

// TestReadAhead: a source with ReadAhead hears of every batch the epoch
// yields, in order; the batches are as without it.
func TestReadAhead(t *testing.T) {
	src := &aheadSource{source: source{n: 37}}
	l := newLoader(t, src, quiet)
	got := epoch(t, l, 2, 1)
	want := epoch(t, newLoader(t, source{n: 37}, quiet), 2, 1)
	if !slices.EqualFunc(got, want, slices.Equal[[]int]) {
		t.Errorf("batches %v, want %v as without ReadAhead", got, want)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if !slices.EqualFunc(src.hints, got, slices.Equal[[]int]) {
		t.Errorf("ReadAhead heard of %v, want the batches %v", src.hints, got)
	}
}
