package fashionmnist

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/layers"

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
	opts := runtime.Options{Logger: slog.New(slog.DiscardHandler)}
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

// BenchmarkTrainStep measures Train's training step on one batch of random
// images, with Model's layers built by the example's dense ("dense") and by
// GoMLX's layers.Dense ("layers.Dense"), on the simplego backend as
// cmd/fashionmnist configures it ("go"). The loader is not in it: this is
// the rate the trainer consumes samples at.
func BenchmarkTrainStep(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	images := make([]uint8, FashionMNISTBatchSize*Side*Side)
	for i := range images {
		images[i] = uint8(rng.IntN(256))
	}
	labels := make([]int64, FashionMNISTBatchSize)
	for i := range labels {
		labels[i] = int64(rng.IntN(NumClasses))
	}
	stock := func(ctx *mlctx.Context, x *graph.Node, out int) *graph.Node {
		return layers.Dense(ctx, x, true, out)
	}
	for _, bm := range []struct {
		name  string
		layer layerFunc
	}{{"dense", dense}, {"layers.Dense", stock}} {
		b.Run(bm.name, func(b *testing.B) {
			backend, err := backends.NewWithConfig("go")
			if err != nil {
				b.Fatal(err)
			}
			defer backend.Finalize()
			model := func(ctx *mlctx.Context, _ any, inputs []*graph.Node) []*graph.Node {
				return perceptron(ctx, inputs[0], bm.layer)
			}
			trainer, err := newTrainer(backend, model, Options{Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			x := tensors.FromFlatDataAndDimensions(images, FashionMNISTBatchSize, Side, Side)
			y := tensors.FromFlatDataAndDimensions(labels, FashionMNISTBatchSize, 1)
			defer finalizeAll([]*tensors.Tensor{x, y})
			step := func() {
				m, err := trainer.TrainStep(nil, []*tensors.Tensor{x}, []*tensors.Tensor{y})
				if err != nil {
					b.Fatal(err)
				}
				finalizeAll(m)
			}
			step() // compiles the graph
			steps := 0
			for b.Loop() {
				step()
				steps++
			}
			b.ReportMetric(float64(steps*FashionMNISTBatchSize)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

// finalizeAll releases a step's tensors, as train.Loop does.
func finalizeAll(groups ...[]*tensors.Tensor) {
	for _, ts := range groups {
		for _, t := range ts {
			t.MustFinalizeAll()
		}
	}
}
