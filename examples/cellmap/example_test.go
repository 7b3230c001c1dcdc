package cellmap_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/loadergen/loadergen/examples/cellmap"
	"github.com/loadergen/loadergen/runtime"
)

// train is the README's complete program for a volume source, less its
// main: open the volumes a manifest lists, make the loader, run epochs.
func train(root string) error {
	vols, err := cellmap.LoadCellMapVolumes(filepath.Join(root, "volumes.csv"))
	if err != nil {
		return err
	}
	src, err := cellmap.OpenCellMapVolumes(vols) // checks every array, logs what it opened
	if err != nil {
		return err
	}
	defer src.Close()
	l, err := cellmap.NewCellMapLoader(src, runtime.Options{Device: "cpu"})
	if err != nil {
		return err
	}
	defer l.Close()
	ctx := context.Background()
	for epoch := range 2 {
		batches, voxels := 0, 0
		for b, err := range l.Epoch(ctx, epoch) {
			if err != nil {
				return err // names the batch, the sample and the key
			}
			raw, labels := b.RawData(), b.LabelsData() // []uint8, []float32 in staging
			batches, voxels = batches+1, voxels+len(raw)
			_ = labels // train on them here
		}
		fmt.Printf("epoch %d: %d batches, %d raw voxels\n", epoch, batches, voxels)
	}
	return nil
}

// Example is the README's program for a volume source, run on the
// synthetic CellMap-like store that make demo writes.
func Example() {
	root, err := os.MkdirTemp("", "cellmap-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	if _, err := cellmap.EnsureSynthetic(root, 1); err != nil {
		log.Fatal(err)
	}
	if err := train(root); err != nil {
		log.Fatal(err)
	}
	// Output:
	// epoch 0: 32 batches, 67108864 raw voxels
	// epoch 1: 32 batches, 67108864 raw voxels
}
