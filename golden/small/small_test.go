package small

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loadergen/loadergen/internal/fixture/pattern"
	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/runtime"
)

func TestMain(m *testing.M) { goldentest.Main(m) }

var quiet = runtime.Options{Logger: goldentest.Quiet}

// source writes pattern values; fail, when set, makes one read fail.
type source struct {
	n    int
	fail func(key, index int) error
}

func (s source) Len() int { return s.n }

func (s source) read(key, index int) error {
	if s.fail != nil {
		return s.fail(key, index)
	}
	return nil
}

func (s source) Read(smp *SmallSample) error {
	pattern.Fill(smp.Image, 0, smp.Index)
	pattern.Fill(smp.Mask, 1, smp.Index)
	pattern.Fill(smp.Label, 2, smp.Index)
	for key, name := range []string{"image", "mask", "label"} {
		if err := s.read(key, smp.Index); err != nil {
			return &runtime.KeyError{Key: name, Err: err}
		}
	}
	return nil
}

func newLoader(t *testing.T, src SmallSource, opts runtime.Options) *SmallLoader {
	t.Helper()
	l, err := NewSmallLoader(src, opts)
	return goldentest.Closing(t, l, err)
}

// keys are the pattern rules of every key of a batch.
var keys = []pattern.Rule[*SmallBatch]{
	pattern.Key(0, (*SmallBatch).ImageData, smallImageElems),
	pattern.Key(1, (*SmallBatch).MaskData, smallMaskElems),
	pattern.Key(2, (*SmallBatch).LabelData, smallLabelElems),
}

// epoch checks every element of every batch, through the typed accessors
// and the image tensor's bytes, and the shapes; it returns the indices.
func epoch(t *testing.T, l *SmallLoader, e, start int) [][]int {
	t.Helper()
	imageBytes := pattern.Key(0, func(b *SmallBatch) []float32 { return runtime.View[float32](b.Image.Data) }, smallImageElems)
	return pattern.Epoch(t, l.EpochFrom(context.Background(), e, start), append(slices.Clip(keys), imageBytes, shapes)...)
}

// shapes is the rule that the tensors' shapes count the batch's samples.
func shapes(b *SmallBatch, indices []int) error {
	n := len(indices)
	if !slices.Equal(b.Image.Shape, []int{n, 3, 4, 4}) || !slices.Equal(b.Mask.Shape, []int{n, 4, 4}) || !slices.Equal(b.Label.Shape, []int{n}) {
		return fmt.Errorf("shapes %v %v %v for %d samples", b.Image.Shape, b.Mask.Shape, b.Label.Shape, n)
	}
	return nil
}

func TestEpochs(t *testing.T) {
	const n = 18
	l := newLoader(t, source{n: n}, quiet)
	if l.Len() != 5 {
		t.Errorf("Len() = %d, want 5 (18 samples in batches of 4)", l.Len())
	}
	e0, e1 := epoch(t, l, 0, 0), epoch(t, l, 1, 0)
	if cmp.Equal(e0, e1) {
		t.Error("shuffled epochs 0 and 1 have the same order")
	}
	for _, e := range [][][]int{e0, e1} {
		all := slices.Concat(e...)
		slices.Sort(all)
		if len(e) != 5 || len(e[4]) != 2 || !slices.Equal(all, seq(n)) {
			t.Errorf("epoch %v is not 4+4+4+4+2 samples covering 0..17 once", e)
		}
	}
	for start := range 6 {
		if diff := cmp.Diff(e1[start:], epoch(t, l, 1, start), cmp.Comparer(equalOrEmpty)); diff != "" {
			t.Errorf("EpochFrom(1, %d) (-want +got):\n%s", start, diff)
		}
	}
	one := newLoader(t, source{n: n}, runtime.Options{Workers: 1, Logger: goldentest.Quiet})
	if diff := cmp.Diff(e1, epoch(t, one, 1, 0)); diff != "" {
		t.Errorf("order depends on the worker count (-2 workers +1):\n%s", diff)
	}
}

func equalOrEmpty(a, b [][]int) bool {
	return len(a) == 0 && len(b) == 0 || slices.EqualFunc(a, b, slices.Equal)
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func TestPlan(t *testing.T) {
	l := newLoader(t, source{n: 1}, quiet)
	p := l.Plan()
	if p.BatchSize != SmallBatchSize || p.BatchBytes != SmallBatchBytes || p.UseStreams != SmallUseStreams || p.NumStreams != SmallNumStreams {
		t.Errorf("Plan() %+v disagrees with the constants", p)
	}
	if SmallBatchBytes != 4*(48*4+16+8) {
		t.Errorf("SmallBatchBytes = %d, want 4 x (192 + 16 + 8)", SmallBatchBytes)
	}
	p.Keys[0].Name = "changed"
	if l.Plan().Keys[0].Name != "image" {
		t.Error("Plan() returns the loader's own keys, not a copy")
	}
}

func TestReadErrorNamesKeyIndexAndBatch(t *testing.T) {
	errBad := errors.New("bad label")
	l := newLoader(t, source{n: 12, fail: func(key, index int) error {
		if key == 2 && index == 6 {
			return errBad
		}
		return nil
	}}, runtime.Options{Logger: goldentest.Quiet, Workers: 3})
	var errs []error
	for _, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var re *runtime.ReadError
	if len(errs) != 1 || !errors.Is(errs[0], errBad) || !errors.As(errs[0], &re) {
		t.Fatalf("errors %v, want one wrapping %v", errs, errBad)
	}
	if re.Key != "label" || re.Index != 6 {
		t.Errorf("error names key %q index %d, want label 6", re.Key, re.Index)
	}
}

func TestSteadyStateAllocatesNothing(t *testing.T) {
	l := newLoader(t, source{n: 1 << 20}, quiet)
	next, stop := iter.Pull2(l.Epoch(context.Background(), 0))
	defer stop()
	next()
	allocs := testing.AllocsPerRun(100, func() {
		if b, err, ok := next(); !ok || err != nil || len(b.Indices) != SmallBatchSize {
			t.Fatalf("next: %v %v", err, ok)
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per batch through the generated loader, want 0", allocs)
	}
}
