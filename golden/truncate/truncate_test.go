package truncate

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/loaderimpl"
	"github.com/loadergen/loadergen/runtime/npy"
)

func TestMain(m *testing.M) { goldentest.Main(m) }

// samples is the corpus size: every tenth sample (i%10 == 3) is an outlier
// of 33 to 73 tokens, over the maximum 32; every tenth (i%10 == 7) has
// exactly 32; the others 1 to 31.
const samples = 300

// outliers is how many samples of the corpus are over the maximum.
const outliers = samples / 10

func tokenRows(i int) int {
	switch i % 10 {
	case 3:
		return 33 + i%41
	case 7:
		return maxTokens
	}
	return 1 + i%31
}

// maxTokens is the schema's maximum rows of key tokens, written out so
// that the test computes the cut without the loader's constant.
const maxTokens = 32

func spanRows(i int) int     { return i % 5 }
func token(i, j int) int32   { return int32(i*1000 + j) }
func span(i, j, c int) int32 { return int32(i*100 + j*2 + c) }

// writeCorpus writes the CSR files of the corpus under a new directory.
func writeCorpus(tb testing.TB) string {
	tb.Helper()
	root := tb.TempDir()
	tokOff, spanOff := []int64{0}, []int64{0}
	var toks, spans []int32
	labels := make([]int64, samples)
	for i := range samples {
		for j := range tokenRows(i) {
			toks = append(toks, token(i, j))
		}
		for j := range spanRows(i) {
			spans = append(spans, span(i, j, 0), span(i, j, 1))
		}
		tokOff = append(tokOff, int64(len(toks)))
		spanOff = append(spanOff, int64(len(spans)/2))
		labels[i] = int64(i)
	}
	for _, f := range []struct {
		name  string
		dtype runtime.DType
		shape []int
		data  []byte
	}{
		{"tokens.npy", runtime.Int32, []int{len(toks)}, runtime.Bytes(toks)},
		{"tokens_offsets.npy", runtime.Int64, []int{len(tokOff)}, runtime.Bytes(tokOff)},
		{"spans.npy", runtime.Int32, []int{len(spans) / 2, 2}, runtime.Bytes(spans)},
		{"spans_offsets.npy", runtime.Int64, []int{len(spanOff)}, runtime.Bytes(spanOff)},
		{"label.npy", runtime.Int64, []int{samples}, runtime.Bytes(labels)},
	} {
		if err := npy.Write(filepath.Join(root, f.name), f.dtype, f.shape, f.data); err != nil {
			tb.Fatal(err)
		}
	}
	return root
}

// check verifies every sample of b: the tokens it keeps (the first
// maxTokens of an outlier) and the -1 padding after them, the
// lengths of both keys, the spans and the label.
func check(t *testing.T, b *TruncateBatch) {
	t.Helper()
	toks, tokLens := b.TokensData(), b.TokensLengthsData()
	spans, spanLens, labels := b.SpansData(), b.SpansLengthsData(), b.LabelData()
	for p, i := range b.Indices {
		kept := min(tokenRows(i), maxTokens)
		if int(tokLens[p]) != kept || int(spanLens[p]) != spanRows(i) || labels[p] != int64(i) {
			t.Fatalf("sample %d (index %d): token length %d, span length %d, label %d; want %d, %d, %d",
				p, i, tokLens[p], spanLens[p], labels[p], kept, spanRows(i), i)
		}
		for j, v := range toks[p*maxTokens : (p+1)*maxTokens] {
			want := int32(-1)
			if j < kept {
				want = token(i, j)
			}
			if v != want {
				t.Fatalf("sample %d (index %d) token %d is %d, want %d", p, i, j, v, want)
			}
		}
		for j := range spanRows(i) {
			for c := range 2 {
				if v := spans[p*8+j*2+c]; v != span(i, j, c) {
					t.Fatalf("sample %d (index %d) span %d.%d is %d, want %d", p, i, j, c, v, span(i, j, c))
				}
			}
		}
	}
}

// readOnly hides the file source's Gather, so the loader calls Read.
type readOnly struct{ *TruncateFiles }

// TestTruncate reads epochs of a corpus with outliers through the gather
// loop (the file source) and through Read (a type embedding it), with 1 and
// 3 workers: each outlier keeps exactly its first 32 tokens, every other
// sample all of its own, and Stats.Truncated counts the outliers of each
// epoch, which the epoch's Rates report.
func TestTruncate(t *testing.T) {
	root := writeCorpus(t)
	for _, c := range []struct {
		name    string
		workers int
		read    bool
	}{{"gather/1", 1, false}, {"gather/3", 3, false}, {"read/3", 3, true}} {
		t.Run(c.name, func(t *testing.T) {
			files, err := OpenTruncateFiles(root)
			if err != nil {
				t.Fatal(err)
			}
			defer files.Close()
			var src TruncateSource = files
			if c.read {
				src = readOnly{files}
			}
			l, err := NewTruncateLoader(src, runtime.Options{Workers: c.workers, Logger: goldentest.Quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			for epoch := range 2 {
				before, seen := l.Stats(), 0
				for b, err := range l.Epoch(context.Background(), epoch) {
					if err != nil {
						t.Fatal(err)
					}
					check(t, b)
					seen += len(b.Indices)
				}
				if seen != samples {
					t.Fatalf("epoch %d: %d samples, want %d", epoch, seen, samples)
				}
				r := l.Stats().Since(before, time.Second)
				if r.Truncated != outliers {
					t.Errorf("epoch %d: Stats counts %d samples truncated, want %d", epoch, r.Truncated, outliers)
				}
				if want := fmt.Sprintf("; %d samples truncated to their key's maximum rows", outliers); !strings.HasSuffix(r.String(), want) {
					t.Errorf("epoch %d: %q does not end in %q", epoch, r, want)
				}
			}
		})
	}
}

// TestBucketSeesTruncated: bucketing groups the samples by the tokens they
// keep, an outlier counting 32: the loader's batches are those of the
// grouping rule applied to the cut lengths, which differ from those of the
// whole lengths.
func TestBucketSeesTruncated(t *testing.T) {
	files, err := OpenTruncateFiles(writeCorpus(t))
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	l, err := NewTruncateLoader(files, runtime.Options{Logger: goldentest.Quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const epoch = 1
	var got [][]int
	for b, err := range l.Epoch(context.Background(), epoch) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, slices.Clone(b.Indices))
	}
	batches := func(max int) [][]int {
		lengths := make([]int32, samples)
		for i := range lengths {
			lengths[i] = int32(min(tokenRows(i), max))
		}
		s := loaderimpl.Sampler{N: samples, Shuffle: true, Seed: 9, WorldSize: 1}
		order, err := s.Order(epoch, nil)
		if err != nil {
			t.Fatal(err)
		}
		loaderimpl.GroupBuckets(runtime.Bucket{Key: "tokens", Window: 4}, order, lengths, TruncateBatchSize, 9, epoch, 0, nil)
		return slices.Collect(slices.Chunk(order, TruncateBatchSize))
	}
	cut, whole := batches(maxTokens), batches(1<<20)
	if slices.EqualFunc(cut, whole, slices.Equal) {
		t.Fatal("the corpus groups alike by cut and whole lengths: the test cannot tell them apart")
	}
	if !slices.EqualFunc(got, cut, slices.Equal) {
		t.Errorf("the loader's batches are not the grouping of the cut lengths:\n got %v\nwant %v", got, cut)
	}
}
