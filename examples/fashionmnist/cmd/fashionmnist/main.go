// Command fashionmnist trains a perceptron on Fashion-MNIST with GoMLX on
// its pure-Go backend (simplego), fed by the loader loadergen generated,
// and prints each epoch's training loss, test loss and accuracy, and
// training samples/s. It converts Debian's IDX files to .npy on first use.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego" // registers the "go" backend

	"github.com/loadergen/loadergen/examples/fashionmnist"
)

func main() {
	src := flag.String("src", fashionmnist.DebianDir, "directory of the gzipped IDX files (apt-get install dataset-fashion-mnist)")
	data := flag.String("data", ".demo-data/fashion-mnist", "directory of the .npy files (converted from -src when absent)")
	limit := flag.Int("limit", 0, "samples of each split to convert (0: all)")
	epochs := flag.Int("epochs", 10, "epochs to train")
	lr := flag.Float64("lr", 0.001, "Adam's learning rate")
	seed := flag.Int64("seed", 1, "seed of the initial weights (the schema's seed shuffles)")
	backend := flag.String("backend", "go", "GoMLX backend configuration")
	flag.Parse()
	log.SetFlags(0)
	if err := run(*src, *data, *limit, *backend, fashionmnist.Options{
		Epochs:       *epochs,
		LearningRate: *lr,
		Seed:         *seed,
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, nil)),
		Out:          os.Stdout,
	}, os.Stdout); err != nil {
		log.Fatal("fashionmnist: ", err)
	}
}

// run converts the data if needed, trains, and prints a summary to out.
func run(src, data string, limit int, backendConfig string, o fashionmnist.Options, out io.Writer) error {
	start := time.Now()
	wrote, err := fashionmnist.Ensure(src, data, limit)
	if err != nil {
		return err
	}
	if wrote {
		fmt.Fprintf(out, "converted %s to .npy in %s (%v)\n", src, data, time.Since(start).Round(time.Millisecond))
	}
	backend, err := backends.NewWithConfig(backendConfig)
	if err != nil {
		return err
	}
	defer backend.Finalize()
	fmt.Fprintf(out, "training a %d-%d-%d perceptron for %d epochs on %s, batch %d\n",
		fashionmnist.Side*fashionmnist.Side, fashionmnist.Hidden, fashionmnist.NumClasses, o.Epochs, backend.Description(), fashionmnist.FashionMNISTBatchSize)
	results, err := fashionmnist.Train(backend, data, o)
	if err != nil {
		return err
	}
	if len(results) > 0 {
		last := results[len(results)-1]
		fmt.Fprintf(out, "test accuracy %.4f after %d epochs; wall time %v\n", last.TestAccuracy, last.Epoch, time.Since(start).Round(time.Second))
	}
	return nil
}
