package small

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loadergen/loadergen/internal/fixture/pattern"
	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/runtime"
)

// manySource fills pattern values like source, but through ReadSamples as
// well as Read, counting the calls of each; fail, when set, fails one
// dataset index.
type manySource struct {
	source
	reads, runs atomic.Int64
	failAt      int // dataset index whose sample fails, -1 for none
}

func (m *manySource) Read(s *SmallSample) error {
	m.reads.Add(1)
	return m.source.Read(s)
}

func (m *manySource) ReadSamples(s *SmallSamples) (int, error) {
	m.runs.Add(1)
	for i, index := range s.Indices {
		if index == m.failAt {
			return i, errors.New("corrupt record")
		}
		pattern.Fill(s.Image[i*48:(i+1)*48], 0, index)
		pattern.Fill(s.Mask[i*16:(i+1)*16], 1, index)
		pattern.Fill(s.Label[i:i+1], 2, index)
	}
	return len(s.Indices), nil
}

// TestSamplesReaderIsUsed: a source that implements SmallSamplesReader is
// read through it, never through Read, and gives exactly the batches of a
// Read-only source: same order, resume and shards, same data.
func TestSamplesReaderIsUsed(t *testing.T) {
	const n = 37
	for _, opts := range []runtime.Options{
		{Logger: goldentest.Quiet},
		{Logger: goldentest.Quiet, Workers: 1},
		{Logger: goldentest.Quiet, Rank: 1, WorldSize: 3},
	} {
		plain := newLoader(t, source{n: n}, opts)
		m := &manySource{source: source{n: n}, failAt: -1}
		many := newLoader(t, m, opts)
		for e := range 2 {
			want := epoch(t, plain, e, 0)
			if diff := cmp.Diff(want, epoch(t, many, e, 0)); diff != "" {
				t.Errorf("%+v epoch %d: ReadSamples batches differ from Read's (-Read +ReadSamples):\n%s", opts, e, diff)
			}
			if diff := cmp.Diff(want[2:], epoch(t, many, e, 2)); diff != "" {
				t.Errorf("%+v epoch %d: resume at batch 2 (-want +got):\n%s", opts, e, diff)
			}
		}
		if m.reads.Load() != 0 || m.runs.Load() == 0 {
			t.Errorf("%+v: %d Read calls and %d ReadSamples calls; want only ReadSamples", opts, m.reads.Load(), m.runs.Load())
		}
	}
}

// TestSamplesReaderErrorNamesTheSample: the n ReadSamples returns points
// the loader's error at the failing dataset index and its batch.
func TestSamplesReaderErrorNamesTheSample(t *testing.T) {
	m := &manySource{source: source{n: 40}, failAt: 13}
	l := newLoader(t, m, quiet)
	batchOf := -1
	for b, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			var re *runtime.ReadError
			if !errors.As(err, &re) || re.Index != 13 || re.Batch != batchOf+1 || !strings.Contains(err.Error(), "corrupt record") {
				t.Fatalf("error %v; want a ReadError at index 13 of batch %d", err, batchOf+1)
			}
			return
		}
		if slices.Contains(b.Indices, 13) {
			t.Fatal("the failing sample was handed out")
		}
		batchOf++
	}
	t.Fatal("the epoch ended without the error")
}

// randSource records each sample's first draw, through Read's s.Rand or
// ReadSamples's Rand(i).
type randSource struct {
	source
	draws sync.Map // [2]int{epoch, index} -> uint64
}

func (r *randSource) Read(s *SmallSample) error {
	r.draws.Store([2]int{s.Epoch, s.Index}, s.Rand.Uint64())
	return r.source.Read(s)
}

// randManySource records its draws through Samples.Rand; its Read fails,
// so that a loader not calling ReadSamples cannot pass for one that does.
type randManySource struct{ *randSource }

func (r randManySource) Read(s *SmallSample) error {
	return errors.New("Read called on a SamplesReader")
}

func (r randManySource) ReadSamples(s *SmallSamples) (int, error) {
	for i, index := range s.Indices {
		r.draws.Store([2]int{s.Epoch, index}, s.Rand(i).Uint64())
	}
	return len(s.Indices), nil
}

// TestSamplesRandMatchesRead: Samples.Rand(i) draws what Read's s.Rand
// draws for the same epoch and index.
func TestSamplesRandMatchesRead(t *testing.T) {
	one, many := &randSource{source: source{n: 50}}, &randSource{source: source{n: 50}}
	for _, src := range []SmallSource{one, randManySource{many}} {
		l := newLoader(t, src, quiet)
		for e := range 2 {
			for _, err := range l.Epoch(context.Background(), e) {
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	n := 0
	one.draws.Range(func(k, v any) bool {
		n++
		if w, ok := many.draws.Load(k); !ok || w != v {
			t.Errorf("sample %v: Read drew %v, ReadSamples %v", k, v, w)
		}
		return true
	})
	if n != 100 {
		t.Errorf("%d draws, want 100", n)
	}
}
