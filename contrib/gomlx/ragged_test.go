package gomlx_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/layers"

	lgomlx "github.com/loadergen/loadergen/contrib/gomlx"
	"github.com/loadergen/loadergen/contrib/gomlx/internal/ragged"
)

// maxTokens is the ragged schema's maximum: tokens is up to [6] int32.
const maxTokens = 6

// tokenRows is the number of tokens of sample i: 0 to 6, the maximum.
func tokenRows(i int) int { return i % (maxTokens + 1) }

// tokenSource appends tokenRows(i) tokens i*10+j to sample i, as the
// generated Sample's comment shows, and labels it i.
type tokenSource struct{ n int }

func (s tokenSource) Len() int { return s.n }

func (tokenSource) Read(smp *ragged.RaggedSample) error {
	i := smp.Index
	for j := range tokenRows(i) {
		smp.Tokens = append(smp.Tokens, int32(i*10+j))
	}
	smp.Label[0] = int64(i)
	return nil
}

func newRagged(t *testing.T, n int) *ragged.RaggedLoader {
	t.Helper()
	l, err := ragged.NewRaggedLoader(tokenSource{n}, quietOptions)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestDatasetRagged checks what a variable-length key becomes: the padded
// tokens [4, 6] and their int32 lengths [4] as the inputs, in that order,
// and the label as the label; and that Mask over the yielded lengths marks
// exactly the tokens that are not padding.
func TestDatasetRagged(t *testing.T) {
	l := newRagged(t, 8) // two batches: samples 0-3 and 4-7, in file order
	if keys := l.Plan().Keys; len(keys) != 3 || keys[1].Name != "tokens.lengths" || keys[1].LengthsOf != "tokens" {
		t.Fatalf("plan keys %v: want tokens, tokens.lengths, label", keys)
	}
	backend := newBackend(t)
	ds, err := lgomlx.NewDataset(backend, l, lgomlx.Config[*ragged.RaggedBatch]{})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	maskExec := graph.MustNewExec(backend, func(lengths *graph.Node) *graph.Node {
		return lgomlx.Mask(lengths, maxTokens)
	})
	defer maskExec.Finalize()
	for b := range 2 {
		inputs, labels, eof := yield(t, ds)
		if eof {
			t.Fatalf("io.EOF at batch %d", b)
		}
		if len(inputs) != 2 || len(labels) != 1 {
			t.Fatalf("batch %d: %d inputs and %d labels, want 2 and 1", b, len(inputs), len(labels))
		}
		for _, c := range []struct {
			name string
			gt   *tensors.Tensor
			want shapes.Shape
		}{
			{"tokens", inputs[0], shapes.Make(dtypes.Int32, 4, maxTokens)},
			{"tokens.lengths", inputs[1], shapes.Make(dtypes.Int32, 4)},
			{"label", labels[0], shapes.Make(dtypes.Int64, 4)},
		} {
			if !c.gt.Shape().Equal(c.want) {
				t.Fatalf("batch %d %s: shape %s, want %s", b, c.name, c.gt.Shape(), c.want)
			}
		}
		var wantTokens, wantLengths []int32
		var wantLabels []int64
		var wantMask []bool
		for p := range 4 {
			i := b*4 + p
			for j := range maxTokens {
				tok := int32(-1)
				if j < tokenRows(i) {
					tok = int32(i*10 + j)
				}
				wantTokens = append(wantTokens, tok)
				wantMask = append(wantMask, j < tokenRows(i))
			}
			wantLengths = append(wantLengths, int32(tokenRows(i)))
			wantLabels = append(wantLabels, int64(i))
		}
		if got := tensors.MustCopyFlatData[int32](inputs[0]); !slices.Equal(got, wantTokens) {
			t.Errorf("batch %d tokens %v, want %v", b, got, wantTokens)
		}
		if got := tensors.MustCopyFlatData[int32](inputs[1]); !slices.Equal(got, wantLengths) {
			t.Errorf("batch %d lengths %v, want %v", b, got, wantLengths)
		}
		if got := tensors.MustCopyFlatData[int64](labels[0]); !slices.Equal(got, wantLabels) {
			t.Errorf("batch %d labels %v, want %v", b, got, wantLabels)
		}
		mask := maskExec.MustExec(inputs[1])[0]
		if got := tensors.MustCopyFlatData[bool](mask); !slices.Equal(got, wantMask) {
			t.Errorf("batch %d Mask(lengths) %v, want %v", b, got, wantMask)
		}
		mask.MustFinalizeAll()
	}
	if _, _, eof := yield(t, ds); !eof {
		t.Error("a third batch of 8 samples: want io.EOF")
	}
}

// tokenModel is the README's model of the tokens: an embedding of the real
// tokens, attention that sees only them, and their mean, [n, 8].
func tokenModel(ctx *mlctx.Context, inputs []*graph.Node) *graph.Node {
	tokens, lengths := inputs[0], inputs[1]                   // int32 [n, 6] padded with -1, int32 [n]
	mask := lgomlx.Mask(lengths, maxTokens)                   // bool [n, 6]: true on the real tokens
	ids := graph.Where(mask, tokens, graph.ZerosLike(tokens)) // the pad -1 indexes no embedding
	x := layers.Embedding(ctx.In("embed"), ids, dtypes.Float32, 100, 8)
	x = layers.MultiHeadAttention(ctx.In("attention"), x, x, x, 2, 4).
		SetKeyMask(mask).SetQueryMask(mask).Done()
	return graph.MaskedReduceMean(x, mask, 1) // [n, 8]; 0 for a sample without tokens
}

// TestMaskModel runs tokenModel on a yielded batch: a [4, 8] result,
// finite everywhere, and 0 for sample 0, which has no tokens.
func TestMaskModel(t *testing.T) {
	backend := newBackend(t)
	ds, err := lgomlx.NewDataset(backend, newRagged(t, 4), lgomlx.Config[*ragged.RaggedBatch]{})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	inputs, _, _ := yield(t, ds)
	out := mlctx.MustExecOnce(backend, mlctx.New(), func(ctx *mlctx.Context, tokens, lengths *graph.Node) *graph.Node {
		return tokenModel(ctx, []*graph.Node{tokens, lengths})
	}, inputs[0], inputs[1])
	defer out.MustFinalizeAll()
	if want := shapes.Make(dtypes.Float32, 4, 8); !out.Shape().Equal(want) {
		t.Fatalf("shape %s, want %s", out.Shape(), want)
	}
	flat := tensors.MustCopyFlatData[float32](out)
	for k, v := range flat {
		if v != v || (k < 8 && v != 0) {
			t.Fatalf("output %v: want finite values, and 0 for sample 0 (no tokens)", flat)
		}
	}
}

// TestMask runs Mask on the backend for lengths of both ends of the range
// and past it, and reports lengths or a maximum it cannot take.
func TestMask(t *testing.T) {
	backend := newBackend(t)
	const T, F = true, false
	tests := []struct {
		name    string
		lengths any // the Go slice Exec converts to the lengths tensor
		maxRows int
		want    []bool // [n, maxRows], flat
	}{
		{"int32 0 2 6 of 6", []int32{0, 2, 6}, 6, []bool{
			F, F, F, F, F, F,
			T, T, F, F, F, F,
			T, T, T, T, T, T,
		}},
		{"int64", []int64{1, 3}, 4, []bool{
			T, F, F, F,
			T, T, T, F,
		}},
		{"past the maximum and negative", []int32{7, -1}, 3, []bool{
			T, T, T,
			F, F, F,
		}},
		{"one row", []int32{1, 0}, 1, []bool{T, F}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := graph.MustExecOnce(backend, func(lengths *graph.Node) *graph.Node {
				return lgomlx.Mask(lengths, tt.maxRows)
			}, tt.lengths)
			defer got.MustFinalizeAll()
			n := len(tt.want) / tt.maxRows
			if want := shapes.Make(dtypes.Bool, n, tt.maxRows); !got.Shape().Equal(want) {
				t.Fatalf("shape %s, want %s", got.Shape(), want)
			}
			if flat := tensors.MustCopyFlatData[bool](got); !slices.Equal(flat, tt.want) {
				t.Errorf("mask %v, want %v", flat, tt.want)
			}
		})
	}
}

func TestMaskErrors(t *testing.T) {
	backend := newBackend(t)
	tests := []struct {
		name    string
		lengths any
		maxRows int
		want    string
	}{
		{"not a vector", [][]int32{{1}, {2}}, 4, "gomlx: Mask: lengths must be an integer vector [n], got (Int32)[2 1]"},
		{"not integers", []float32{1, 2}, 4, "gomlx: Mask: lengths must be an integer vector [n], got (Float32)[2]"},
		{"no rows", []int32{1, 2}, 0, "gomlx: Mask: maxRows is 0, want 1 or more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := graph.ExecOnce(backend, func(lengths *graph.Node) *graph.Node {
				return lgomlx.Mask(lengths, tt.maxRows)
			}, tt.lengths)
			if err == nil {
				got.MustFinalizeAll()
				t.Fatal("no error")
			}
			if !strings.Contains(fmt.Sprint(err), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}
