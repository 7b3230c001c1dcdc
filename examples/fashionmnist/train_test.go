package fashionmnist

import (
	"log/slog"
	"os"
	"testing"
)

// shortRun is the size of the CI training run: samples of each split, and
// epochs.
const (
	shortSamples = 1024
	shortEpochs  = 3
)

// TestTrainShort trains for a few epochs on the first samples of
// Fashion-MNIST, when Debian's dataset-fashion-mnist is installed, and on
// generated images, and checks that the model learns: the training and
// test losses fall, and the test accuracy is far above chance (0.1).
func TestTrainShort(t *testing.T) {
	tests := []struct {
		name string
		src  func(t *testing.T) string
	}{
		{"fashion-mnist", func(t *testing.T) string {
			images, _ := splits[0].idxFiles(DebianDir)
			if _, err := os.Stat(images); err != nil {
				t.Skipf("%v (apt-get install dataset-fashion-mnist)", err)
			}
			return DebianDir
		}},
		{"generated", func(t *testing.T) string {
			dir := t.TempDir()
			writeSynthetic(t, dir, shortSamples, shortSamples/4)
			return dir
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if _, err := Ensure(tt.src(t), root, shortSamples); err != nil {
				t.Fatal(err)
			}
			checkLearns(t, root)
		})
	}
}

// checkLearns trains on the data under root for shortEpochs epochs and
// checks that the losses fall and the accuracy is well above chance.
func checkLearns(t *testing.T, root string) {
	t.Helper()
	results, err := Train(newBackend(t), root, Options{
		Epochs: shortEpochs,
		Seed:   1,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != shortEpochs {
		t.Fatalf("%d epochs measured, want %d", len(results), shortEpochs)
	}
	for i, r := range results {
		t.Log(r)
		if want := shortSamples / FashionMNISTBatchSize * FashionMNISTBatchSize; r.Samples != want {
			t.Errorf("epoch %d trained on %d samples, want %d", r.Epoch, r.Samples, want)
		}
		if i > 0 && r.TrainLoss >= results[i-1].TrainLoss {
			t.Errorf("epoch %d: training loss %.4f did not fall from %.4f", r.Epoch, r.TrainLoss, results[i-1].TrainLoss)
		}
	}
	first, last := results[0], results[len(results)-1]
	if last.TestLoss >= first.TestLoss {
		t.Errorf("test loss %.4f after epoch %d did not fall from %.4f after epoch 1", last.TestLoss, last.Epoch, first.TestLoss)
	}
	if last.TestAccuracy < 0.6 {
		t.Errorf("test accuracy %.4f after %d epochs, want at least 0.6", last.TestAccuracy, last.Epoch)
	}
}
