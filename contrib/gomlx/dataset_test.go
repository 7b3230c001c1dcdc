package gomlx_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/x448/float16"
	"go.uber.org/goleak"

	lgomlx "github.com/loadergen/loadergen/contrib/gomlx"
	"github.com/loadergen/loadergen/contrib/gomlx/internal/alltypes"
	"github.com/loadergen/loadergen/golden/small"
	"github.com/loadergen/loadergen/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// quietOptions keeps the loaders' start-up lines out of the test output.
var quietOptions = runtime.Options{Logger: slog.New(slog.DiscardHandler)}

// every fills each element j of sample i with i*10+j in its key's dtype:
// float16 and bfloat16 hold i*10+j+0.5, bool is (i+j)%2, and the scalar
// label is i.
type every struct{ n int }

func (s every) Len() int { return s.n }

func (every) Read(smp *alltypes.AllTypesSample) error {
	i := smp.Index
	for j := range 2 {
		v := i*10 + j
		smp.U8[j], smp.I8[j] = uint8(v), int8(-v)
		smp.U16[j], smp.I16[j] = uint16(v), int16(-v)
		smp.U32[j], smp.I32[j] = uint32(v), int32(-v)
		smp.U64[j], smp.F64[j] = uint64(v), float64(v)
		smp.F16[j] = float16.Fromfloat32(float32(v) + 0.5).Bits()
		smp.Bf16[j] = uint16(bfloat16.FromFloat32(float32(v) + 0.5))
		smp.Ok[j] = uint8((i + j) % 2)
	}
	for j := range smp.F32 {
		smp.F32[j] = float32(i*10 + j)
	}
	smp.Label[0] = int64(i)
	return nil
}

// indexed is a source of the small golden schema whose label is the
// dataset index, so a batch's labels show its order; reading index fail
// in epoch 0 fails, naming the key.
type indexed struct{ n, fail int }

func (s indexed) Len() int { return s.n }

func (s indexed) Read(smp *small.SmallSample) error {
	if smp.Index == s.fail && smp.Epoch == 0 {
		return &runtime.KeyError{Key: "label", Err: errors.New("disk on fire")}
	}
	for j := range smp.Image {
		smp.Image[j] = float32(smp.Index)
	}
	clear(smp.Mask)
	smp.Label[0] = int64(smp.Index)
	return nil
}

func newAllTypes(t *testing.T, n int) *alltypes.AllTypesLoader {
	t.Helper()
	l, err := alltypes.NewAllTypesLoader(every{n}, quietOptions)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func newSmall(t *testing.T, src indexed) *small.SmallLoader {
	t.Helper()
	l, err := small.NewSmallLoader(src, quietOptions)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func newDataset[B lgomlx.Batch](t *testing.T, l lgomlx.Loader[B], cfg lgomlx.Config[B]) *lgomlx.Dataset[B] {
	t.Helper()
	ds, err := lgomlx.NewDataset(newBackend(t), l, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ds.Close(); err != nil {
			t.Error(err)
		}
	})
	return ds
}

// yield calls ds.Yield and fails the test on an error other than io.EOF.
func yield(t *testing.T, ds interface {
	Yield() (any, []*tensors.Tensor, []*tensors.Tensor, error)
}) (inputs, labels []*tensors.Tensor, eof bool) {
	t.Helper()
	_, inputs, labels, err := ds.Yield()
	if err == io.EOF {
		return nil, nil, true
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, gt := range slices.Concat(inputs, labels) {
			gt.MustFinalizeAll()
		}
	})
	return inputs, labels, false
}

// stagedEpoch runs epoch 0 of the loader itself and returns, per batch,
// every key's staged tensor with its bytes cloned.
func stagedEpoch(t *testing.T, l *alltypes.AllTypesLoader) [][]runtime.Tensor {
	t.Helper()
	var out [][]runtime.Tensor
	for b, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		var ts []runtime.Tensor
		for _, st := range b.Staged().Tensors {
			st.Data = bytes.Clone(st.Data)
			ts = append(ts, st)
		}
		out = append(out, ts)
	}
	return out
}

// TestDatasetBatches checks that each yielded batch holds the loader's
// batch, key by key (inputs then targets, with GoMLX dtypes, shapes and
// bytes), and that the short last batch is dropped unless KeepShort.
func TestDatasetBatches(t *testing.T) {
	want := stagedEpoch(t, newAllTypes(t, 10)) // batches of 4, 4 and 2
	tests := []struct {
		name      string
		keepShort bool
		batches   int
	}{
		{"drop short", false, 2},
		{"keep short", true, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDataset(t, newAllTypes(t, 10), lgomlx.Config[*alltypes.AllTypesBatch]{KeepShort: tt.keepShort})
			for b := range tt.batches {
				inputs, labels, eof := yield(t, ds)
				if eof {
					t.Fatalf("io.EOF at batch %d, want %d batches", b, tt.batches)
				}
				if len(inputs) != 11 || len(labels) != 2 {
					t.Fatalf("batch %d: %d inputs and %d labels, want 11 and 2", b, len(inputs), len(labels))
				}
				for k, gt := range slices.Concat(inputs, labels) {
					st := want[b][k]
					dt, _ := lgomlx.DType(st.DType)
					if ws := shapes.Make(dt, st.Shape...); !gt.Shape().Equal(ws) {
						t.Errorf("batch %d key %d: shape %s, want %s", b, k, gt.Shape(), ws)
					}
					if got := tensorBytes(t, gt); !bytes.Equal(got, st.Data) {
						t.Errorf("batch %d key %d: bytes %v, want %v", b, k, got, st.Data)
					}
				}
			}
			for range 2 {
				if _, _, eof := yield(t, ds); !eof {
					t.Fatalf("batch after %d: want io.EOF", tt.batches)
				}
			}
			if e, b := ds.Position(); e != 0 || b != 3 {
				t.Errorf("Position() = %d, %d; want 0, 3", e, b)
			}
		})
	}
}

// TestDatasetValues reads the 16-bit floats, bools and scalar labels back
// as GoMLX values: the raw words the source wrote mean the same numbers
// in GoMLX.
func TestDatasetValues(t *testing.T) {
	ds := newDataset(t, newAllTypes(t, 4), lgomlx.Config[*alltypes.AllTypesBatch]{})
	inputs, labels, _ := yield(t, ds)
	f16 := tensors.MustCopyFlatData[float16.Float16](inputs[7])
	bf16 := tensors.MustCopyFlatData[bfloat16.BFloat16](inputs[8])
	label := tensors.MustCopyFlatData[int64](labels[0])
	ok := tensors.MustCopyFlatData[bool](labels[1])
	for i := range 4 {
		if label[i] != int64(i) {
			t.Errorf("label %d = %d, want %d", i, label[i], i)
		}
		for j := range 2 {
			want := float32(i*10+j) + 0.5
			if got := f16[i*2+j].Float32(); got != want {
				t.Errorf("f16[%d][%d] = %v, want %v", i, j, got, want)
			}
			if got := bf16[i*2+j].Float32(); got != want {
				t.Errorf("bf16[%d][%d] = %v, want %v", i, j, got, want)
			}
			if got := ok[i*2+j]; got != ((i+j)%2 == 1) {
				t.Errorf("ok[%d][%d] = %v", i, j, got)
			}
		}
	}
}

// order yields the rest of the epoch and returns the labels (the dataset
// indices) batch by batch.
func order(t *testing.T, ds *lgomlx.Dataset[*small.SmallBatch]) [][]int64 {
	t.Helper()
	var out [][]int64
	for {
		_, labels, eof := yield(t, ds)
		if eof {
			return out
		}
		out = append(out, tensors.MustCopyFlatData[int64](labels[0]))
	}
}

// loaderOrder returns the batches startBatch.. of epoch as the loader
// itself orders them, short batch dropped.
func loaderOrder(t *testing.T, epoch, startBatch int) [][]int64 {
	t.Helper()
	var out [][]int64
	for b, err := range newSmall(t, indexed{n: 10, fail: -1}).EpochFrom(context.Background(), epoch, startBatch) {
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Indices) == small.SmallBatchSize {
			out = append(out, slices.Clone(b.LabelData()))
		}
	}
	return out
}

// TestDatasetEpochs checks that Reset moves to the next epoch (shuffled
// anew) only once the epoch has been read from, and that Config's start
// resumes exactly, with Position telling where the dataset stands.
func TestDatasetEpochs(t *testing.T) {
	ds := newDataset(t, newSmall(t, indexed{n: 10, fail: -1}), lgomlx.Config[*small.SmallBatch]{})
	ds.Reset() // before any Yield: still epoch 0
	e0 := order(t, ds)
	if want := loaderOrder(t, 0, 0); fmt.Sprint(e0) != fmt.Sprint(want) {
		t.Fatalf("epoch 0: %v, want %v", e0, want)
	}
	ds.Reset()
	ds.Reset() // a second Reset does not skip epoch 1
	if e, b := ds.Position(); e != 1 || b != 0 {
		t.Fatalf("after Reset: Position() = %d, %d; want 1, 0", e, b)
	}
	e1 := order(t, ds)
	if want := loaderOrder(t, 1, 0); fmt.Sprint(e1) != fmt.Sprint(want) {
		t.Fatalf("epoch 1: %v, want %v", e1, want)
	}
	if fmt.Sprint(e0) == fmt.Sprint(e1) {
		t.Errorf("epochs 0 and 1 in the same order %v: shuffle not advanced", e0)
	}

	resumed := newDataset(t, newSmall(t, indexed{n: 10, fail: -1}), lgomlx.Config[*small.SmallBatch]{Epoch: 1, StartBatch: 1})
	resumed.Reset() // Eval's first Reset keeps the resume position
	if e, b := resumed.Position(); e != 1 || b != 1 {
		t.Fatalf("resumed: Position() = %d, %d; want 1, 1", e, b)
	}
	if got := order(t, resumed); fmt.Sprint(got) != fmt.Sprint(e1[1:]) {
		t.Errorf("resumed at epoch 1 batch 1: %v, want %v", got, e1[1:])
	}
}

// TestColumn checks that Column appends an axis of 1 over the same data,
// without writing into the spare capacity of the tensor's own shape.
func TestColumn(t *testing.T) {
	shape := make([]int, 1, 2)
	shape[0] = 3
	data := make([]byte, 24)
	in := runtime.Tensor{DType: runtime.Int64, Shape: shape, Data: data}
	out := lgomlx.Column(in)
	if !slices.Equal(out.Shape, []int{3, 1}) || out.DType != runtime.Int64 || &out.Data[0] != &data[0] || len(out.Data) != len(data) {
		t.Errorf("Column = %v %v over %d bytes; want int64 [3 1] over the same 24", out.DType, out.Shape, len(out.Data))
	}
	if !slices.Equal(in.Shape, []int{3}) || shape[:2][1] != 0 {
		t.Errorf("Column changed its argument's shape: %v, backing array %v", in.Shape, shape[:2])
	}
}

// TestDatasetSplit reshapes the scalar labels to [n, 1] through Split, and
// reports a Split whose shape does not fit the data.
func TestDatasetSplit(t *testing.T) {
	ds := newDataset(t, newSmall(t, indexed{n: 8, fail: -1}), lgomlx.Config[*small.SmallBatch]{Split: columnLabels})
	inputs, labels, _ := yield(t, ds)
	if len(inputs) != 1 || len(labels) != 1 {
		t.Fatalf("%d inputs and %d labels, want 1 and 1", len(inputs), len(labels))
	}
	if want := shapes.Make(labels[0].DType(), 4, 1); !labels[0].Shape().Equal(want) {
		t.Errorf("labels shape %s, want %s", labels[0].Shape(), want)
	}

	bad := func(b *small.SmallBatch) (inputs, labels []runtime.Tensor) {
		label := b.Label
		label.Shape = []int{len(b.Indices), 2}
		return []runtime.Tensor{b.Image}, []runtime.Tensor{label}
	}
	ds = newDataset(t, newSmall(t, indexed{n: 8, fail: -1}), lgomlx.Config[*small.SmallBatch]{Name: "bad", Split: bad})
	for range 2 { // the error stays until Reset
		_, _, _, err := ds.Yield()
		want := `dataset "bad": epoch 0 batch 0: tensor #0: int64 tensor: shape [4 2] needs 64 bytes, the data has 32`
		if err == nil || err.Error() != want {
			t.Fatalf("Yield error %v, want %q", err, want)
		}
	}
}

// TestDatasetReadError checks that a failing read ends the epoch with the
// loader's error, message intact and reachable with errors.As, until Reset.
func TestDatasetReadError(t *testing.T) {
	l := newSmall(t, indexed{n: 10, fail: 6})
	var wantMsg string
	for _, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			wantMsg = err.Error()
		}
	}
	if wantMsg == "" {
		t.Fatal("the loader itself reported no error")
	}
	ds := newDataset(t, l, lgomlx.Config[*small.SmallBatch]{Name: "train"})
	var err error
	for err == nil {
		_, _, _, err = ds.Yield()
	}
	for range 2 {
		var re *runtime.ReadError
		if !errors.As(err, &re) || re.Index != 6 || re.Key != "label" {
			t.Fatalf("error %v: want a *runtime.ReadError of index 6, key label", err)
		}
		if want := `dataset "train": epoch 0: ` + wantMsg; err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
		_, _, _, err = ds.Yield()
	}
	ds.Reset() // epoch 1 reads index 6 fine
	if got := order(t, ds); len(got) != 2 {
		t.Errorf("epoch 1 after the failed one: %d batches, want 2", len(got))
	}
}

// TestDatasetStop checks that cancelling the context ends the epoch with
// the context's error, and that Close closes the loader mid-epoch and is
// idempotent (goleak checks that nothing is left running).
func TestDatasetStop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ds := newDataset(t, newSmall(t, indexed{n: 40, fail: -1}), lgomlx.Config[*small.SmallBatch]{Context: ctx})
	yield(t, ds)
	cancel()
	var err error
	for err == nil {
		_, _, _, err = ds.Yield()
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: %v, want context.Canceled", err)
	}

	l := newSmall(t, indexed{n: 40, fail: -1})
	ds = newDataset(t, l, lgomlx.Config[*small.SmallBatch]{Name: "closing"})
	yield(t, ds)
	for range 2 {
		if err := ds.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, _, err := ds.Yield(); !errors.Is(err, runtime.ErrClosed) || !strings.HasPrefix(err.Error(), `dataset "closing": `) {
		t.Errorf("Yield after Close: %v, want runtime.ErrClosed", err)
	}
	for _, err := range l.Epoch(context.Background(), 0) {
		if !errors.Is(err, runtime.ErrClosed) {
			t.Errorf("loader after the dataset's Close: %v, want runtime.ErrClosed", err)
		}
	}
}

func TestNewDatasetErrors(t *testing.T) {
	l := newSmall(t, indexed{n: 8, fail: -1})
	tests := []struct {
		name string
		cfg  lgomlx.Config[*small.SmallBatch]
		want string
	}{
		{"negative epoch", lgomlx.Config[*small.SmallBatch]{Epoch: -1}, "gomlx: NewDataset: negative start (epoch -1, batch 0)"},
		{"negative batch", lgomlx.Config[*small.SmallBatch]{StartBatch: -2}, "gomlx: NewDataset: negative start (epoch 0, batch -2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := lgomlx.NewDataset(newBackend(t), l, tt.cfg); err == nil || err.Error() != tt.want {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
	if _, err := lgomlx.NewDataset[*small.SmallBatch](nil, l, lgomlx.Config[*small.SmallBatch]{}); err == nil {
		t.Error("nil backend: no error")
	}
}
