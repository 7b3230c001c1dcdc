package cellmap

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/npy"
)

// EnsureSynthetic makes sure root holds a dataset of n samples that
// OpenCellMapFiles accepts, writing a seeded synthetic one when it does not
// (missing files, or another N). It reports whether it wrote.
func EnsureSynthetic(root string, n int, seed uint64) (bool, error) {
	if f, err := OpenCellMapFiles(root); err == nil {
		same := f.Len() == n
		if err := f.Close(); err != nil {
			return false, err
		}
		if same {
			return false, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("existing data in %s: %w (remove it to regenerate)", root, err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return false, err
	}
	return true, WriteSynthetic(root, n, seed)
}

// WriteSynthetic writes n samples: raw volumes of noisy blobs and, per
// class, a label volume marking the voxels whose intensity falls in that
// class's band. The same seed gives the same bytes.
func WriteSynthetic(root string, n int, seed uint64) error {
	const side = 64
	vox := side * side * side
	nc := cellMapFileSpecs[1].Sample[0] // the class axis of labels
	raw := make([]byte, n*vox)
	labels := make([]float32, n*nc*vox)
	rng := rand.New(rand.NewPCG(seed, 0x63656c6c))
	for s := range n {
		cx, cy, cz := rng.IntN(side), rng.IntN(side), rng.IntN(side)
		for z := range side {
			for y := range side {
				for x := range side {
					d := (x-cx)*(x-cx) + (y-cy)*(y-cy) + (z-cz)*(z-cz)
					v := max(0, min(255-d/8+rng.IntN(32)-16, 255))
					i := (z*side+y)*side + x
					raw[s*vox+i] = byte(v)
					class := min(v*nc/256, nc-1) // intensity band of the voxel
					labels[(s*nc+class)*vox+i] = 1
				}
			}
		}
	}
	if err := npy.Write(filepath.Join(root, "raw.npy"), runtime.Uint8, []int{n, side, side, side}, raw); err != nil {
		return err
	}
	return npy.Write(filepath.Join(root, "labels.npy"), runtime.Float32, []int{n, nc, side, side, side}, runtime.Bytes(labels))
}
