package tokens

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/loaderimpl"
	"github.com/loadergen/loadergen/runtime/npy"
)

func TestMain(m *testing.M) { goldentest.Main(m) }

// lengths draws n row counts from a long-tailed (log-normal) distribution
// with a mean of about 200, cut at 512: most sentences are short, a few are
// long.
func lengths(n int) []int {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]int, n)
	for i := range out {
		out[i] = min(512, max(1, int(math.Exp(5.1+0.6*r.NormFloat64()))))
	}
	return out
}

// token is row j of sample i.
func token(i, j int) int32 { return int32(i*1000 + j) }

// writeTokens writes the CSR files of samples with the given row counts
// under a new directory: tokens.npy (every row, back to back), offsets.npy
// (n+1 int64) and label.npy (sample i's label is i).
func writeTokens(tb testing.TB, rows []int) string {
	tb.Helper()
	root := tb.TempDir()
	offsets := make([]int64, 1, len(rows)+1)
	var toks []int32
	labels := make([]int64, len(rows))
	for i, n := range rows {
		for j := range n {
			toks = append(toks, token(i, j))
		}
		offsets = append(offsets, int64(len(toks)))
		labels[i] = int64(i)
	}
	for _, f := range []struct {
		name  string
		dtype runtime.DType
		shape []int
		data  []byte
	}{
		{"tokens.npy", runtime.Int32, []int{len(toks)}, runtime.Bytes(toks)},
		{"offsets.npy", runtime.Int64, []int{len(offsets)}, runtime.Bytes(offsets)},
		{"label.npy", runtime.Int64, []int{len(labels)}, runtime.Bytes(labels)},
	} {
		if err := npy.Write(filepath.Join(root, f.name), f.dtype, f.shape, f.data); err != nil {
			tb.Fatal(err)
		}
	}
	return root
}

// openFiles opens the files under root, closed when tb ends.
func openFiles(tb testing.TB, root string) *TokensFiles {
	tb.Helper()
	files, err := OpenTokensFiles(root)
	return goldentest.Closing(tb, files, err)
}

// open starts a loader with o over the files under root, closed when tb
// ends.
func open(tb testing.TB, root string, o runtime.Options) (*TokensFiles, *TokensLoader) {
	tb.Helper()
	files := openFiles(tb, root)
	o.Logger = goldentest.Quiet
	l, err := NewTokensLoader(files, o)
	return files, goldentest.Closing(tb, l, err)
}

// check verifies every sample of b against the files' contents: its rows,
// the zero padding after them, its length and its label.
func check(t *testing.T, rows []int, b *TokensBatch) {
	t.Helper()
	toks, lens, labels := b.TokensData(), b.TokensLengthsData(), b.LabelData()
	if want := []int{len(b.Indices)}; !slices.Equal(b.TokensLengths.Shape, want) || b.TokensLengths.DType != runtime.Int32 {
		t.Fatalf("lengths tensor %v %v, want int32 %v", b.TokensLengths.DType, b.TokensLengths.Shape, want)
	}
	for p, i := range b.Indices {
		if int(lens[p]) != rows[i] || labels[p] != int64(i) {
			t.Fatalf("sample %d (index %d): length %d label %d, want %d and %d", p, i, lens[p], labels[p], rows[i], i)
		}
		s := toks[p*512 : (p+1)*512]
		for j, v := range s {
			want := int32(0)
			if j < rows[i] {
				want = token(i, j)
			}
			if v != want {
				t.Fatalf("sample %d (index %d) row %d is %d, want %d", p, i, j, v, want)
			}
		}
	}
}

// TestEpoch reads bucketed epochs through the gather loop (the file source)
// and through Read (a type embedding it), with 1 and 4 workers: every
// sample once, each row and its padding right, and the same batches in
// every configuration.
func TestEpoch(t *testing.T) {
	rows := lengths(1000)
	root := writeTokens(t, rows)
	var first [][]int
	for _, c := range []struct {
		name    string
		workers int
		read    bool // through Read instead of the gather loop
	}{{"gather/1", 1, false}, {"gather/4", 4, false}, {"read/3", 3, true}} {
		t.Run(c.name, func(t *testing.T) {
			files, err := OpenTokensFiles(root)
			if err != nil {
				t.Fatal(err)
			}
			defer files.Close()
			var src TokensSource = files
			if c.read {
				src = readOnly{files}
			}
			l, err := NewTokensLoader(src, runtime.Options{Workers: c.workers, Logger: goldentest.Quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			var got [][]int
			seen := make([]bool, len(rows))
			for b, err := range l.Epoch(context.Background(), 2) {
				if err != nil {
					t.Fatal(err)
				}
				check(t, rows, b)
				got = append(got, slices.Clone(b.Indices))
				for _, i := range b.Indices {
					if seen[i] {
						t.Fatalf("index %d twice", i)
					}
					seen[i] = true
				}
			}
			if i := slices.Index(seen, false); i >= 0 {
				t.Fatalf("index %d never loaded", i)
			}
			if first == nil {
				first = got
			} else if !slices.EqualFunc(first, got, slices.Equal) {
				t.Errorf("batches differ from the first configuration's")
			}
		})
	}
}

// readOnly hides the file source's Gather, so the loader calls Read.
type readOnly struct{ *TokensFiles }

// TestBucketing: batches hold similar lengths, so the padding up to each
// batch's longest sample (Stats.Padding) is at most half that of the
// sampler's plain order; the order is a pure function of the epoch (a
// resumed epoch yields the same batches) and covers every sample on each
// of two ranks.
func TestBucketing(t *testing.T) {
	rows := lengths(4000)
	root := writeTokens(t, rows)
	_, l := open(t, root, runtime.Options{})
	var batches [][]int
	for b, err := range l.Epoch(context.Background(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, slices.Clone(b.Indices))
	}
	bucketed := l.Stats().Padding()

	s := loaderimpl.Sampler{N: len(rows), Shuffle: true, Seed: tokensPlan.Loader.Seed, WorldSize: 1}
	order, err := s.Order(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain := padding(rows, slices.Collect(slices.Chunk(order, TokensBatchSize)))
	if want := padding(rows, batches); math.Abs(bucketed-want) > 1e-12 {
		t.Errorf("Stats.Padding %.4f, the batches' padding %.4f", bucketed, want)
	}
	t.Logf("padding: %.3f plain, %.3f bucketed", plain, bucketed)
	if bucketed > plain/2 {
		t.Errorf("bucketed padding %.3f is more than half the plain order's %.3f", bucketed, plain)
	}

	for _, start := range []int{0, 7, len(batches) - 1} {
		k := 0
		for b, err := range l.EpochFrom(context.Background(), 1, start) {
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(b.Indices, batches[start+k]) {
				t.Fatalf("resumed at %d: batch %d differs", start, start+k)
			}
			k++
		}
		if start+k != len(batches) {
			t.Fatalf("resumed at %d: %d batches, want %d", start, k, len(batches)-start)
		}
	}

	seen := make([]int, len(rows))
	for rank := range 2 {
		_, l := open(t, root, runtime.Options{Rank: rank, WorldSize: 2})
		for b, err := range l.Epoch(context.Background(), 1) {
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range b.Indices {
				seen[i]++
			}
		}
	}
	for i, n := range seen {
		if n != 1 {
			t.Fatalf("index %d loaded %d times over the two ranks", i, n)
		}
	}
}

// padding is the share of padding in batches cut at their longest sample.
func padding(rows []int, batches [][]int) float64 {
	var own, spanned int
	for _, b := range batches {
		longest := 0
		for _, i := range b {
			own += rows[i]
			longest = max(longest, rows[i])
		}
		spanned += longest * len(b)
	}
	return float64(spanned-own) / float64(spanned)
}

// TestBadFiles: inconsistent CSR files are refused at open, naming the file
// and what is wrong: for samples over the maximum, every one of them.
func TestBadFiles(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(t *testing.T, root string)
		error string
	}{
		{"rows over the maximum", func(t *testing.T, root string) {
			rows := []int{3, 600, 2, 512, 513, 7}
			src := writeTokens(t, rows)
			for _, f := range []string{"tokens.npy", "offsets.npy", "label.npy"} {
				copyFile(t, filepath.Join(src, f), filepath.Join(root, f))
			}
		}, "offsets.npy: 2 samples have more rows than key \"tokens\" allows (512): sample 1 (600 rows), sample 4 (513 rows); " +
			"set overflow: truncate on the key to keep the first 512 rows of such samples"},
		{"offsets decrease", func(t *testing.T, root string) {
			writeNpy(t, filepath.Join(root, "offsets.npy"), runtime.Int64, []int64{0, 5, 3, 9, 12})
		}, "offsets.npy"},
		{"labels for fewer samples", func(t *testing.T, root string) {
			writeNpy(t, filepath.Join(root, "label.npy"), runtime.Int64, []int64{0, 1})
		}, "label.npy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := writeTokens(t, []int{5, 4, 3, 2})
			c.edit(t, root)
			files, err := OpenTokensFiles(root)
			if err == nil {
				files.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), c.error) {
				t.Errorf("error %q does not say %q", err, c.error)
			}
		})
	}
}

func writeNpy[T runtime.Element](t *testing.T, path string, d runtime.DType, v []T) {
	t.Helper()
	if err := npy.Write(path, d, []int{len(v)}, runtime.Bytes(v)); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOverflowFromSource: a source whose Read appends more rows than the
// maximum fails the epoch with a ReadError naming the key, the sample and
// both numbers; nothing is truncated.
func TestOverflowFromSource(t *testing.T) {
	files := openFiles(t, writeTokens(t, []int{5, 4, 3, 2}))
	l, err := NewTokensLoader(tooLong{readOnly{files}}, runtime.Options{Logger: goldentest.Quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, err := range l.Epoch(context.Background(), 0) {
		var re *runtime.ReadError
		if !errors.As(err, &re) {
			t.Fatalf("error %v, want a ReadError", err)
		}
		if re.Key != "tokens" || re.Index != 2 || !strings.Contains(err.Error(), "513 rows, more than the maximum 512") {
			t.Fatalf("error %q (key %q, index %d), want key tokens, sample 2, 513 rows over 512", err, re.Key, re.Index)
		}
		return
	}
	t.Fatal("the epoch ended without an error")
}

// tooLong reads the files, but sample 2 gets 513 tokens.
type tooLong struct{ readOnly }

func (s tooLong) Read(smp *TokensSample) error {
	if smp.Index != 2 {
		return s.readOnly.Read(smp)
	}
	for range 513 {
		smp.Tokens = append(smp.Tokens, 7)
	}
	return nil
}

// benchSamples is the size of the benchmark's dataset: 50,000 token rows,
// 200 tokens on average (40 MB), in the page cache after the first epoch.
const benchSamples = 50_000

// BenchmarkTokens compares, in one run, the loader's samples/s (bucketed,
// from the CSR files, through the generated gather loop, padding each
// sample to 512 tokens) with one goroutine writing the same padded batches
// in the same order: each sample's rows copied out of the mapped file, the
// rest of its 512 cleared, its length and label stored.
func BenchmarkTokens(b *testing.B) {
	root := writeTokens(b, lengths(benchSamples))
	b.Run("loader", func(b *testing.B) {
		_, l := open(b, root, runtime.Options{})
		b.ReportAllocs()
		for e := 0; b.Loop(); e++ {
			for _, err := range l.Epoch(context.Background(), e) {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N*benchSamples)/b.Elapsed().Seconds(), "samples/s")
		b.ReportMetric(l.Stats().Padding(), "padding")
	})
	b.Run("copy", func(b *testing.B) {
		files := openFiles(b, root)
		s := loaderimpl.Sampler{N: benchSamples, Shuffle: true, Seed: tokensPlan.Loader.Seed, WorldSize: 1}
		order := make([]int, 2*benchSamples)
		lens := make([]int32, benchSamples)
		offsets := make([]int, benchSamples) // the CSR offsets, summed from the lengths
		for i := range lens {
			lens[i] = int32(files.TokensRows(i))
			if i > 0 {
				offsets[i] = offsets[i-1] + int(lens[i-1])
			}
		}
		var scratch loaderimpl.GroupScratch
		toks := make([]int32, TokensBatchSize*512)
		batchLens := make([]int32, TokensBatchSize)
		labels := make([]int64, TokensBatchSize)
		data := runtime.View[int32](files.tokens.Data())
		label := runtime.View[int64](files.label.Data())
		for e := 0; b.Loop(); e++ {
			o, err := s.Order(e, order)
			if err != nil {
				b.Fatal(err)
			}
			loaderimpl.GroupBuckets(tokensPlan.Loader.Bucket, o, lens, TokensBatchSize, tokensPlan.Loader.Seed, e, 0, &scratch)
			for start := 0; start < len(o); start += TokensBatchSize {
				for p, i := range o[start:min(start+TokensBatchSize, len(o))] {
					from := offsets[i]
					n := copy(toks[p*512:(p+1)*512], data[from:from+int(lens[i])])
					clear(toks[p*512+n : (p+1)*512])
					batchLens[p] = lens[i]
					labels[p] = label[i]
				}
			}
		}
		b.ReportMetric(float64(b.N*benchSamples)/b.Elapsed().Seconds(), "samples/s")
	})
}
