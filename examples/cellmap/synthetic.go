package cellmap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/loadergen/loadergen/internal/fixture/emvolume"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// Manifest is the name of the synthetic dataset's manifest in its root.
const Manifest = "volumes.csv"

// synthetic is the demo's dataset: one EM-like volume of 192 x 256 x 256
// voxels at 8 nm (and 16 nm), chunked as CellMap's published volumes are
// and compressed with zstd at level 6, and three labelled crops of
// different sizes and chunkings, each annotating some of the classes.
func synthetic(seed uint64) emvolume.Volume {
	return emvolume.Volume{
		Shape: []int{192, 256, 256}, VoxelNM: 8, Levels: 2, Chunks: []int{64, 128, 128}, Compressor: zarr.Zstd(6),
		Crops: []emvolume.Crop{
			{Dir: "crops/crop1", Start: []int{16, 32, 32}, Shape: []int{96, 128, 128}, Classes: []string{"mito", "er", "nucleus"}, Chunks: []int{32, 64, 64}},
			{Dir: "crops/crop2", Start: []int{64, 96, 128}, Shape: []int{80, 96, 96}, Classes: []string{"mito", "er"}, Chunks: []int{40, 48, 48}},
			{Dir: "crops/crop3", Start: []int{100, 128, 40}, Shape: []int{64, 96, 96}, Classes: []string{"nucleus"}, Chunks: []int{64, 96, 96}},
		},
		AllClasses: cellMapVolumeSpec.Classes,
		Seed:       seed,
	}
}

// WriteSynthetic writes the synthetic dataset under root: the volume in
// root/synthetic.zarr, a manifest with one row per labelled crop, and one
// of the raw volume alone to predict over (PredictManifest). The
// same seed gives the same bytes.
func WriteSynthetic(root string, seed uint64) error {
	v := synthetic(seed)
	if err := v.Write(filepath.Join(root, "synthetic.zarr")); err != nil {
		return err
	}
	manifest := "raw,labels\n"
	for _, c := range v.Crops {
		manifest += fmt.Sprintf("synthetic.zarr,synthetic.zarr/%s\n", c.Dir)
	}
	if err := os.WriteFile(filepath.Join(root, Manifest), []byte(manifest), 0o644); err != nil {
		return err
	}
	return writePredictManifest(root)
}

// EnsureSynthetic makes sure root holds a dataset that OpenCellMapVolumes
// accepts, writing the synthetic one when root has no manifest. It reports
// whether it wrote.
func EnsureSynthetic(root string, seed uint64) (bool, error) {
	_, err := os.Stat(filepath.Join(root, Manifest))
	switch {
	case err == nil:
		return false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return false, err
	}
	if entries, err := os.ReadDir(root); err == nil && len(entries) > 0 {
		return false, fmt.Errorf("%s holds files but no %s: remove it to write the synthetic dataset", root, Manifest)
	}
	return true, WriteSynthetic(root, seed)
}
