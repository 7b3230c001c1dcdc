package fashionmnist

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"

	lgomlx "github.com/loadergen/loadergen/contrib/gomlx"
	"github.com/loadergen/loadergen/runtime"
)

// BenchmarkEpoch measures one epoch of the training set (Debian's
// dataset-fashion-mnist), read by the generated loader alone and through
// the GoMLX dataset (loader plus one copy per key into simplego buffers),
// with the schema's one worker: what the trainer could be fed at most.
func BenchmarkEpoch(b *testing.B) {
	images, _ := splits[0].idxFiles(DebianDir)
	if _, err := os.Stat(images); err != nil {
		b.Skipf("%v (apt-get install dataset-fashion-mnist)", err)
	}
	root := b.TempDir()
	if _, err := Ensure(DebianDir, root, 0); err != nil {
		b.Fatal(err)
	}
	files, err := OpenFashionMNISTFiles(filepath.Join(root, "train"))
	if err != nil {
		b.Fatal(err)
	}
	defer files.Close()
	opts := runtime.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	newLoader := func(b *testing.B) *FashionMNISTLoader {
		l, err := NewFashionMNISTLoader(files, opts)
		if err != nil {
			b.Fatal(err)
		}
		return l
	}

	b.Run("loader", func(b *testing.B) {
		l := newLoader(b)
		defer l.Close()
		samples := 0
		for i := 0; b.Loop(); i++ {
			for batch, err := range l.Epoch(context.Background(), i) {
				if err != nil {
					b.Fatal(err)
				}
				samples += len(batch.Indices)
			}
		}
		b.ReportMetric(float64(samples)/b.Elapsed().Seconds(), "samples/s")
	})

	b.Run("dataset", func(b *testing.B) {
		ds, err := lgomlx.NewDataset(newBackend(b), newLoader(b), lgomlx.Config[*FashionMNISTBatch]{Split: Split})
		if err != nil {
			b.Fatal(err)
		}
		defer ds.Close()
		samples := 0
		for b.Loop() {
			for {
				_, inputs, labels, err := ds.Yield()
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				samples += inputs[0].Shape().Dimensions[0]
				finalizeAll(inputs, labels)
			}
			ds.Reset()
		}
		b.ReportMetric(float64(samples)/b.Elapsed().Seconds(), "samples/s")
	})
}

// finalizeAll releases a step's tensors, as train.Loop does.
func finalizeAll(groups ...[]*tensors.Tensor) {
	for _, ts := range groups {
		for _, t := range ts {
			t.MustFinalizeAll()
		}
	}
}
