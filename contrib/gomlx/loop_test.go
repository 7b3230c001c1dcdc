package gomlx_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/graph"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/layers"
	"github.com/gomlx/gomlx/pkg/ml/train"
	"github.com/gomlx/gomlx/pkg/ml/train/losses"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"

	lgomlx "github.com/loadergen/loadergen/contrib/gomlx"
	"github.com/loadergen/loadergen/golden/small"
	"github.com/loadergen/loadergen/runtime"
)

// columnLabels yields the image as the input and the scalar label as
// [n, 1], the shape GoMLX's sparse categorical loss takes.
func columnLabels(b *small.SmallBatch) (inputs, labels []runtime.Tensor) {
	return []runtime.Tensor{b.Image}, []runtime.Tensor{lgomlx.Column(b.Label)}
}

// newTrainer returns a fresh simplego backend and a trainer on it of a
// linear classifier of the small schema's images into 10 classes.
func newTrainer(t *testing.T) (backends.Backend, *train.Trainer) {
	t.Helper()
	backend := newBackend(t)
	model := func(ctx *mlctx.Context, _ any, inputs []*graph.Node) []*graph.Node {
		x := graph.Reshape(inputs[0], inputs[0].Shape().Dimensions[0], -1)
		return []*graph.Node{layers.Dense(ctx.In("logits"), x, true, 10)}
	}
	return backend, train.NewTrainer(backend, mlctx.New(), model, losses.SparseCategoricalCrossEntropyLogits,
		optimizers.StochasticGradientDescent().Done(), nil, nil)
}

// TestLoop runs train.Loop and Trainer.Eval over datasets of a generated
// loader: Loop finalizes every yielded tensor and resets after each epoch,
// Eval resets first; both see the batches the policy promises.
func TestLoop(t *testing.T) {
	backend, trainer := newTrainer(t)
	l := newSmall(t, indexed{n: 10, fail: -1})
	ds, err := lgomlx.NewDataset(backend, l, lgomlx.Config[*small.SmallBatch]{Split: columnLabels})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	loop := train.NewLoop(trainer)
	if _, err := loop.RunEpochs(ds, 3); err != nil {
		t.Fatal(err)
	}
	if loop.LoopStep != 6 {
		t.Errorf("3 epochs took %d steps, want 6 (2 full batches each, the short one dropped)", loop.LoopStep)
	}
	if e, b := ds.Position(); e != 3 || b != 0 {
		t.Errorf("after 3 epochs Position() = %d, %d; want 3, 0", e, b)
	}

	eval, err := lgomlx.NewDataset(backend, newSmall(t, indexed{n: 10, fail: -1}),
		lgomlx.Config[*small.SmallBatch]{Split: columnLabels, KeepShort: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eval.Close()
	for pass := range 2 {
		if _, err := trainer.Eval(eval); err != nil {
			t.Fatal(err)
		}
		if e, b := eval.Position(); e != pass || b != 3 {
			t.Errorf("after Eval %d: Position() = %d, %d; want %d, 3 (the short batch counted)", pass, e, b, pass)
		}
	}
}

// TestLoopError checks that a failing read surfaces from Loop.RunEpochs
// with the loader's message intact and the *runtime.ReadError reachable.
func TestLoopError(t *testing.T) {
	backend, trainer := newTrainer(t)
	l := newSmall(t, indexed{n: 10, fail: 6})
	ds, err := lgomlx.NewDataset(backend, l, lgomlx.Config[*small.SmallBatch]{Name: "train", Split: columnLabels})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	_, err = train.NewLoop(trainer).RunEpochs(ds, 1)
	var re *runtime.ReadError
	if !errors.As(err, &re) || re.Index != 6 {
		t.Fatalf("RunEpochs error %v: want a *runtime.ReadError of index 6", err)
	}
	if want := `dataset "train": epoch 0: ` + re.Error(); !strings.Contains(err.Error(), want) {
		t.Errorf("RunEpochs error %q does not contain %q", err, want)
	}
}
