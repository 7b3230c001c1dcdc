package cellmap

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/volume"
)

// PredictManifest is the name of the manifest of the volumes to predict
// over: the raw volume whole, without labels.
const PredictManifest = "predict.csv"

// writePredictManifest writes root's PredictManifest.
func writePredictManifest(root string) error {
	return os.WriteFile(filepath.Join(root, PredictManifest), []byte("raw\nsynthetic.zarr\n"), 0o644)
}

// Threshold is the predict step's stand-in for a model: for each voxel of
// the labels' tile (16 nm), the sum s of the 2 x 2 x 2 raw voxels (8 nm)
// under it makes class c 1 when s >= 1024 (a mean of 128 or more) and
// (s - 1024)·3/1024 is c, as the synthetic labels band the intensities;
// else 0. raw is one tile's [64 64 64] uint8, labels its [3 32 32 32].
func Threshold(raw []uint8, labels []float32) {
	const n, classes = 32, 3
	clear(labels)
	for z := range n {
		for y := range n {
			for x := range n {
				s := 0
				for dz := range 2 {
					for dy := range 2 {
						at := ((2*z+dz)*2*n+2*y+dy)*2*n + 2*x
						s += int(raw[at]) + int(raw[at+1])
					}
				}
				if s >= 1024 {
					if c := (s - 1024) * classes / 1024; c < classes {
						labels[((c*n+z)*n+y)*n+x] = 1
					}
				}
			}
		}
	}
}

// PredictReport says what a predict step did.
type PredictReport struct {
	Tiles   int
	Elapsed time.Duration
	Writer  volume.PredictStats
}

// Predict runs the stand-in model (Threshold) over the tiles of the
// volumes of root's PredictManifest (written if absent) with the loader
// under opts, and writes its predictions to out through the writer under
// popts.
func Predict(ctx context.Context, root, out string, opts runtime.Options, popts volume.PredictOptions) (PredictReport, error) {
	var rep PredictReport
	manifest := filepath.Join(root, PredictManifest)
	if _, err := os.Stat(manifest); errors.Is(err, fs.ErrNotExist) {
		if err := writePredictManifest(root); err != nil {
			return rep, err
		}
	}
	tiles, err := OpenCellMapTiles(manifest)
	if err != nil {
		return rep, err
	}
	defer tiles.Close()
	w, err := CreateCellMapPredictions(out, tiles, popts) // before the loader: Resume narrows the tiles
	if err != nil {
		return rep, err
	}
	l, err := NewCellMapLoader(tiles, opts)
	if err != nil {
		return rep, errors.Join(err, w.Close())
	}
	defer l.Close()
	start := time.Now()
	preds := make([]float32, CellMapBatchSize*cellMapLabelsElems)
	for b, err := range l.Epoch(ctx, 0) {
		if err != nil {
			return rep, errors.Join(err, w.Close())
		}
		for i := range b.Indices {
			Threshold(b.RawData()[i*cellMapRawElems:][:cellMapRawElems], preds[i*cellMapLabelsElems:][:cellMapLabelsElems])
		}
		if err := w.Write(b.Indices, preds[:len(b.Indices)*cellMapLabelsElems]); err != nil {
			return rep, errors.Join(err, w.Close())
		}
		rep.Tiles += len(b.Indices)
	}
	if err := w.Close(); err != nil {
		return rep, fmt.Errorf("predictions: %w", err)
	}
	rep.Elapsed, rep.Writer = time.Since(start), w.Stats()
	return rep, nil
}
