package ragged

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/pattern"
	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/runtime"
)

func TestMain(m *testing.M) { goldentest.Main(m) }

// Sample i has i%17 tokens (0 to 16, the maximum) and i%9 boxes (0 to 8).
func tokenRows(i int) int { return i % 17 }
func boxRows(i int) int   { return i % 9 }

func token(i, j int) int32        { return int32(i*100 + j) }
func box(i, j, c int) float32     { return float32(i*1000 + j*10 + c) }
func pixel(i, j int) uint8        { return uint8(i + j) }
func wantLabel(i int) int64       { return int64(-i) }
func isNaN32(v float32) bool      { return v != v }
func sameFloat(a, b float32) bool { return a == b || isNaN32(a) && isNaN32(b) }

// appender is a Source whose Read appends each sample's rows, as the
// generated Sample's comment shows.
type appender struct{ n int }

func (a appender) Len() int { return a.n }

func (a appender) Read(s *RaggedSample) error {
	i := s.Index
	for j := range s.Image {
		s.Image[j] = pixel(i, j)
	}
	for j := range tokenRows(i) {
		s.Tokens = append(s.Tokens, token(i, j))
	}
	for j := range boxRows(i) {
		s.Boxes = append(s.Boxes, box(i, j, 0), box(i, j, 1), box(i, j, 2), box(i, j, 3))
	}
	s.Label[0] = wantLabel(i)
	return nil
}

// owner is a Source whose Read sets the ragged slices to slices of its own,
// which the loader copies in.
type owner struct{ appender }

func (o owner) Read(s *RaggedSample) error {
	if err := o.appender.Read(s); err != nil {
		return err
	}
	s.Tokens = slices.Clone(s.Tokens)
	s.Boxes = slices.Clone(s.Boxes)
	return nil
}

// batchReader fills runs of samples at once through ReadSamples: each
// sample's rows at the start of its slot and its count in the lengths.
type batchReader struct{ appender }

func (r batchReader) ReadSamples(s *RaggedSamples) (int, error) {
	for p, i := range s.Indices {
		for j := range raggedImageElems {
			s.Image[p*raggedImageElems+j] = pixel(i, j)
		}
		for j := range tokenRows(i) {
			s.Tokens[p*raggedTokensElems+j] = token(i, j)
		}
		s.TokensLengths[p] = int32(tokenRows(i))
		for j := range boxRows(i) {
			for c := range 4 {
				s.Boxes[p*raggedBoxesElems+j*4+c] = box(i, j, c)
			}
		}
		s.BoxesLengths[p] = int32(boxRows(i))
		s.Label[p] = wantLabel(i)
	}
	return len(s.Indices), nil
}

// check is the rule for every sample of b: rows, padding (-1 for tokens,
// NaN for boxes), lengths and the fixed keys.
func check(b *RaggedBatch, indices []int) error {
	n := len(indices)
	if !slices.Equal(b.Tokens.Shape, []int{n, 16}) || !slices.Equal(b.Boxes.Shape, []int{n, 8, 4}) ||
		!slices.Equal(b.TokensLengths.Shape, []int{n}) || !slices.Equal(b.BoxesLengths.Shape, []int{n}) {
		return fmt.Errorf("shapes: tokens %v, boxes %v, lengths %v and %v", b.Tokens.Shape, b.Boxes.Shape, b.TokensLengths.Shape, b.BoxesLengths.Shape)
	}
	toks, boxes, tl, bl := b.TokensData(), b.BoxesData(), b.TokensLengthsData(), b.BoxesLengthsData()
	for p, i := range indices {
		if int(tl[p]) != tokenRows(i) || int(bl[p]) != boxRows(i) {
			return fmt.Errorf("sample %d (index %d): lengths %d and %d, want %d and %d", p, i, tl[p], bl[p], tokenRows(i), boxRows(i))
		}
		for j := range 16 {
			want := int32(-1)
			if j < tokenRows(i) {
				want = token(i, j)
			}
			if got := toks[p*16+j]; got != want {
				return fmt.Errorf("sample %d (index %d) token %d is %d, want %d", p, i, j, got, want)
			}
		}
		for j := range 8 {
			for c := range 4 {
				want := float32(math.NaN())
				if j < boxRows(i) {
					want = box(i, j, c)
				}
				if got := boxes[p*32+j*4+c]; !sameFloat(got, want) {
					return fmt.Errorf("sample %d (index %d) box %d[%d] is %v, want %v", p, i, j, c, got, want)
				}
			}
		}
		if b.LabelData()[p] != wantLabel(i) || b.ImageData()[p*12+11] != pixel(i, 11) {
			return fmt.Errorf("sample %d (index %d): fixed keys wrong", p, i)
		}
	}
	return nil
}

// cloneLengths is the rule that a clone of b has b's lengths.
func cloneLengths(b *RaggedBatch, _ []int) error {
	c := b.Clone()
	if !slices.Equal(c.TokensLengthsData(), b.TokensLengthsData()) || !slices.Equal(c.BoxesLengthsData(), b.BoxesLengthsData()) {
		return errors.New("the clone's lengths differ")
	}
	return nil
}

// TestSources runs an epoch twice (the staging slots then hold older
// batches, which padding must overwrite) through each way a source can
// fill ragged keys.
func TestSources(t *testing.T) {
	const n = 200
	for _, c := range []struct {
		name string
		src  RaggedSource
	}{
		{"append", appender{n}},
		{"own slices", owner{appender{n}}},
		{"ReadSamples", batchReader{appender{n}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := NewRaggedLoader(c.src, runtime.Options{Logger: goldentest.Quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			for epoch := range 2 {
				batches := pattern.Epoch(t, l.Epoch(context.Background(), epoch), check, cloneLengths)
				if seen := len(slices.Concat(batches...)); seen != n {
					t.Fatalf("epoch %d: %d samples, want %d", epoch, seen, n)
				}
			}
			st := l.Stats()
			if st.Rows == 0 || st.Spanned < st.Rows || st.Padding() <= 0 {
				t.Errorf("stats: rows %d, spanned %d, padding %v", st.Rows, st.Spanned, st.Padding())
			}
		})
	}
}

// TestBadRows: rows past the maximum, rows that are not whole, or lengths
// out of range from ReadSamples end the epoch with a ReadError that names
// the key, the sample and the numbers.
func TestBadRows(t *testing.T) {
	for _, c := range []struct {
		name  string
		src   RaggedSource
		key   string
		error string
	}{
		{"17 tokens", badRead{func(s *RaggedSample) { s.Tokens = append(s.Tokens, make([]int32, 17)...) }}, "tokens", `read sample 5: key "tokens": 17 rows, more than the maximum 16`},
		{"9 boxes", badRead{func(s *RaggedSample) { s.Boxes = append(s.Boxes, make([]float32, 33)...) }}, "boxes", `read sample 5: key "boxes": 9 rows, more than the maximum 8`},
		{"half a box", badRead{func(s *RaggedSample) { s.Boxes = append(s.Boxes, 1, 2) }}, "boxes", `read sample 5: key "boxes": 2 elements are not whole rows of 4`},
		{"ReadSamples length", badSamples{}, "boxes", `read sample 5: key "boxes": ReadSamples set 9 rows, not in [0, 8]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := NewRaggedLoader(c.src, runtime.Options{Logger: goldentest.Quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			for _, err := range l.Epoch(context.Background(), 0) {
				if err == nil {
					continue
				}
				var re *runtime.ReadError
				if !errors.As(err, &re) || re.Key != c.key || re.Index != 5 || !strings.Contains(err.Error(), c.error) {
					t.Fatalf("error %q, want a ReadError of key %q saying %q", err, c.key, c.error)
				}
				return
			}
			t.Fatal("the epoch ended without an error")
		})
	}
}

// badRead reads like appender, and spoils sample 5 with bad.
type badRead struct{ bad func(s *RaggedSample) }

func (badRead) Len() int { return 12 }

func (r badRead) Read(s *RaggedSample) error {
	if err := (appender{12}).Read(s); err != nil {
		return err
	}
	if s.Index == 5 {
		s.Tokens, s.Boxes = s.Tokens[:0], s.Boxes[:0]
		r.bad(s)
	}
	return nil
}

// badSamples reads like batchReader, and claims 9 boxes for sample 5.
type badSamples struct{ batchReader }

func (badSamples) Len() int { return 12 }

func (b badSamples) ReadSamples(s *RaggedSamples) (int, error) {
	n, err := (batchReader{appender{12}}).ReadSamples(s)
	if i := slices.Index(s.Indices, 5); i >= 0 {
		s.BoxesLengths[i] = 9
	}
	return n, err
}
