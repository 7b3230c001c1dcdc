package fashionmnist

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train"
	"github.com/gomlx/gomlx/pkg/ml/train/losses"
	"github.com/gomlx/gomlx/pkg/ml/train/metrics"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"

	lgomlx "github.com/loadergen/loadergen/contrib/gomlx"
	"github.com/loadergen/loadergen/runtime"
)

// Options are the choices of a training run.
type Options struct {
	Epochs       int          // epochs to train
	LearningRate float64      // Adam's; 0 means 0.001
	Seed         int64        // seeds the initial weights (the schema's seed shuffles)
	Logger       *slog.Logger // the loaders' start-up lines; nil means slog.Default()
	Out          io.Writer    // a line per epoch; nil means none
}

// Epoch is what one epoch of training measured.
type Epoch struct {
	Epoch        int           // from 1
	TrainLoss    float64       // mean of the epoch's batch losses
	TestLoss     float64       // mean over the test set, after the epoch
	TestAccuracy float64       // fraction of the test set classified right
	Samples      int           // samples trained on
	Took         time.Duration // the epoch's training steps, evaluation excluded
}

// SamplesPerSecond is the training throughput of the epoch.
func (e Epoch) SamplesPerSecond() float64 { return float64(e.Samples) / e.Took.Seconds() }

// String reads "epoch 1: train loss 0.5321, test loss 0.4412, test
// accuracy 0.8401, 2950 samples/s (59904 samples in 20.3s)".
func (e Epoch) String() string {
	return fmt.Sprintf("epoch %d: train loss %.4f, test loss %.4f, test accuracy %.4f, %.0f samples/s (%d samples in %.1fs)",
		e.Epoch, e.TrainLoss, e.TestLoss, e.TestAccuracy, e.SamplesPerSecond(), e.Samples, e.Took.Seconds())
}

// Train trains Model with Adam on the .npy files of root/train for
// o.Epochs epochs on backend, evaluating on root/test after each, and
// returns what each epoch measured. The training set is fed by the
// generated loader through the GoMLX adapter, shuffled anew each epoch
// with the schema's seed; its short last batch is dropped, while the test
// set keeps it, so that every test sample counts.
func Train(backend backends.Backend, root string, o Options) (results []Epoch, err error) {
	opts := runtime.Options{Logger: o.Logger}
	trainDS, closeTrain, err := open(backend, filepath.Join(root, "train"), opts, lgomlx.Config[*FashionMNISTBatch]{Name: "train", Split: Split})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, closeTrain()) }()
	testDS, closeTest, err := open(backend, filepath.Join(root, "test"), opts, lgomlx.Config[*FashionMNISTBatch]{Name: "test", Split: Split, KeepShort: true})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, closeTest()) }()

	trainer, err := newTrainer(backend, Model, o)
	if err != nil {
		return nil, err
	}
	loop := train.NewLoop(trainer)
	var lossSum float64
	var steps int
	loop.OnStep("epoch loss", 0, func(_ *train.Loop, m []*tensors.Tensor) error {
		lossSum += float64(tensors.ToScalar[float32](m[0])) // the batch loss
		steps++
		return nil
	})

	for e := range o.Epochs {
		lossSum, steps = 0, 0
		start := time.Now()
		if _, err := loop.RunEpochs(trainDS, 1); err != nil {
			return results, fmt.Errorf("training epoch %d: %w", e+1, err)
		}
		took := time.Since(start)
		m, err := trainer.Eval(testDS)
		if err != nil {
			return results, fmt.Errorf("evaluating after epoch %d: %w", e+1, err)
		}
		// Eval's results: mean loss with regularization, mean loss, accuracy.
		r := Epoch{
			Epoch:        e + 1,
			TrainLoss:    lossSum / float64(steps),
			TestLoss:     float64(tensors.ToScalar[float32](m[1])),
			TestAccuracy: float64(tensors.ToScalar[float32](m[2])),
			Samples:      steps * FashionMNISTBatchSize,
			Took:         took,
		}
		results = append(results, r)
		if o.Out != nil {
			fmt.Fprintln(o.Out, r)
		}
	}
	return results, nil
}

// newTrainer returns Train's trainer of model on backend: Adam at
// o.LearningRate (0 means 0.001) on the sparse categorical cross-entropy of
// the logits, evaluating the accuracy too, with the initial weights seeded
// from o.Seed.
func newTrainer(backend backends.Backend, model train.ModelFn, o Options) (*train.Trainer, error) {
	lr := o.LearningRate
	if lr == 0 {
		lr = 0.001
	}
	ctx := context.New()
	if err := ctx.SetRNGStateFromSeed(o.Seed); err != nil {
		return nil, fmt.Errorf("seeding the weights: %w", err)
	}
	return train.NewTrainer(backend, ctx, model, losses.SparseCategoricalCrossEntropyLogits,
		optimizers.Adam().LearningRate(lr).Done(), nil,
		[]metrics.Interface{metrics.NewSparseCategoricalAccuracy("Accuracy", "acc")}), nil
}

// open returns a dataset over the .npy files in dir, and a function that
// closes the dataset (and so its loader) and the files.
func open(backend backends.Backend, dir string, opts runtime.Options, cfg lgomlx.Config[*FashionMNISTBatch]) (*lgomlx.Dataset[*FashionMNISTBatch], func() error, error) {
	files, err := OpenFashionMNISTFiles(dir)
	if err != nil {
		return nil, nil, err
	}
	l, err := NewFashionMNISTLoader(files, opts)
	if err != nil {
		return nil, nil, errors.Join(err, files.Close())
	}
	ds, err := lgomlx.NewDataset(backend, l, cfg)
	if err != nil {
		return nil, nil, errors.Join(err, l.Close(), files.Close())
	}
	return ds, func() error { return errors.Join(ds.Close(), files.Close()) }, nil
}
