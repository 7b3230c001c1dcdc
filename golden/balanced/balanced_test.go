package balanced

import (
	"context"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loadergen/loadergen/internal/fixture/pattern"
	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/loaderimpl"
)

func TestMain(m *testing.M) { goldentest.Main(m) }

type source struct{ n int }

func (s source) Len() int { return s.n }
func (source) Read(s *BalancedSample) error {
	pattern.Fill(s.Tiny, 0, s.Index)
	pattern.Fill(s.Wide, 1, s.Index)
	pattern.Fill(s.Half, 2, s.Index)
	pattern.Fill(s.Ids, 3, s.Index)
	pattern.Fill(s.Depth, 4, s.Index)
	pattern.Fill(s.Count, 5, s.Index)
	pattern.Fill(s.Code, 6, s.Index)
	pattern.Fill(s.Step, 7, s.Index)
	return nil
}

// TestPlan checks the balanced assignment by hand. Batch bytes, largest
// first: wide 131072 -> stream 0, depth 65536 -> 1, half 8192 -> 2, then
// ids 512, code 128, count 64, step 24 and tiny 8 each join stream 2, the
// lightest.
func TestPlan(t *testing.T) {
	type row struct {
		Name     string
		Stream   int
		Priority runtime.Priority
	}
	want := []row{
		{"tiny", 2, runtime.Low}, {"wide", 0, runtime.High}, {"half", 2, runtime.Normal}, {"ids", 2, runtime.Normal},
		{"depth", 1, runtime.High}, {"count", 2, runtime.Normal}, {"code", 2, runtime.Normal}, {"step", 2, runtime.Normal},
	}
	var got []row
	for _, k := range balancedPlan.Keys {
		got = append(got, row{k.Name, k.Stream, k.Priority})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stream map (-want +got):\n%s", diff)
	}
	if BalancedBatchBytes != 205536 || !BalancedUseStreams || BalancedNumStreams != 3 || balancedPlan.Device != "cuda:1" {
		t.Errorf("plan %d bytes, streams %v x %d on %s; want 205536, on, 3, cuda:1",
			BalancedBatchBytes, BalancedUseStreams, BalancedNumStreams, balancedPlan.Device)
	}
}

// TestDropLast: 10 shuffled samples in batches of 4 with drop_last give 2
// full batches.
// The plan names cuda:1, which a one-GPU machine lacks, so the run is forced
// onto the CPU in every build.
func TestDropLast(t *testing.T) {
	l, err := NewBalancedLoader(source{n: 10}, runtime.Options{Device: "cpu", Logger: goldentest.Quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := pattern.Epoch(t, l.Epoch(context.Background(), 0),
		pattern.Key(0, (*BalancedBatch).TinyData, 2),
		pattern.Key(1, (*BalancedBatch).WideData, 64*64),
		pattern.Key(2, (*BalancedBatch).HalfData, 32*32),
		pattern.Key(3, (*BalancedBatch).IdsData, 16),
		pattern.Key(4, (*BalancedBatch).DepthData, 64*64),
		pattern.Key(5, (*BalancedBatch).CountData, 4),
		pattern.Key(6, (*BalancedBatch).CodeData, 8),
		pattern.Key(7, (*BalancedBatch).StepData, 3))
	// The order shuffled with seed 2^64-1 (the generated plan carries it
	// as an untyped constant), cut to 2 full batches of 4.
	order, err := loaderimpl.Sampler{N: 10, Shuffle: true, Seed: math.MaxUint64, WorldSize: 1, DropLast: true}.Order(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]int{order[:4], order[4:8]}, got); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
}
