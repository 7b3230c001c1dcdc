// Package emvolume writes synthetic electron-microscopy volumes laid out as
// CellMap publishes its data: an OME-NGFF pyramid of the raw volume under
// em/raw, and labelled crops, each holding, for every class annotated in
// it, an OME-NGFF pyramid under labels/<class>. The demo and the tests of
// volume sources read them; the same Volume gives the same bytes.
package emvolume

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// Volume describes one synthetic volume.
type Volume struct {
	Shape      []int           // the raw volume at level s0, in voxels (z, y, x)
	VoxelNM    float64         // the voxel size of s0, in nanometres
	Levels     int             // levels of every pyramid; each halves the last
	Chunks     []int           // chunk shape of the raw arrays
	Compressor zarr.Compressor // of every array
	Crops      []Crop          // the labelled crops
	AllClasses []string        // every class of the dataset, for each class's intensity band
	Seed       uint64
	// LabelDType is the dtype of the label arrays: runtime.Float32 (0 means
	// it) or runtime.Uint8, as CellMap publishes them; their values are 0
	// and 1 either way.
	LabelDType runtime.DType
}

// Crop is a labelled region of a volume, as CellMap annotates them: a
// pyramid per class annotated there, covering the region only.
type Crop struct {
	Dir          string   // the crop's directory, relative to the volume's root ("" for the root)
	Start, Shape []int    // the region, in s0 voxels
	Classes      []string // the classes annotated in this crop
	Chunks       []int    // chunk shape of its arrays
}

// RawPath and LabelPath are where the pyramids lie under a volume's root.
const (
	RawPath   = "em/raw"
	LabelPath = "labels/" // then the class name
)

// Write writes the volume under root.
func (v Volume) Write(root string) error {
	raw := v.raw()
	axes := []zarr.Axis{{Name: "z", Type: "space", Unit: "nanometer"}, {Name: "y", Type: "space", Unit: "nanometer"}, {Name: "x", Type: "space", Unit: "nanometer"}}
	if err := v.pyramid(filepath.Join(root, RawPath), runtime.Uint8, false, raw, v.Shape, make([]int, 3), v.Chunks, axes); err != nil {
		return err
	}
	ld := v.LabelDType
	switch ld {
	case 0:
		ld = runtime.Float32
	case runtime.Float32, runtime.Uint8:
	default:
		return fmt.Errorf("emvolume: labels of %v (float32 or uint8 are written)", ld)
	}
	for _, crop := range v.Crops {
		for _, class := range crop.Classes {
			c := slices.Index(v.AllClasses, class)
			if c < 0 {
				return fmt.Errorf("emvolume: class %q is not in AllClasses %v", class, v.AllClasses)
			}
			labels := v.labels(raw, crop, c, ld)
			if err := v.pyramid(filepath.Join(root, crop.Dir, LabelPath+class), ld, true, labels, crop.Shape, crop.Start, crop.Chunks, axes); err != nil {
				return err
			}
		}
	}
	return nil
}

// raw returns the s0 volume: bright blobs over a dim background, with
// noise.
func (v Volume) raw() []byte {
	rng := rand.New(rand.NewPCG(v.Seed, 0x656d))
	nz, ny, nx := v.Shape[0], v.Shape[1], v.Shape[2]
	type blob struct{ z, y, x, r float64 }
	blobs := make([]blob, 8)
	for i := range blobs {
		blobs[i] = blob{rng.Float64() * float64(nz), rng.Float64() * float64(ny), rng.Float64() * float64(nx), 4 + rng.Float64()*float64(min(nz, ny, nx))/4}
	}
	out := make([]byte, nz*ny*nx)
	for z := range nz {
		for y := range ny {
			for x := range nx {
				level := 40.0
				for _, b := range blobs {
					d := math.Sqrt((float64(z)-b.z)*(float64(z)-b.z)+(float64(y)-b.y)*(float64(y)-b.y)+(float64(x)-b.x)*(float64(x)-b.x)) / b.r
					level = max(level, 255*(1-d*d))
				}
				out[(z*ny+y)*nx+x] = byte(max(0, min(255, level+float64(rng.IntN(24))-12)))
			}
		}
	}
	return out
}

// labels returns class c's labels over crop, elements of d (float32 or
// uint8) as bytes: 1 where the raw voxel is bright (>= 128) and its
// intensity falls in class c's band of [128, 256), else 0.
func (v Volume) labels(raw []byte, crop Crop, c int, d runtime.DType) []byte {
	s, n := crop.Start, crop.Shape
	out := make([]byte, n[0]*n[1]*n[2]*d.Size())
	one := d.Encode(1)
	bands := len(v.AllClasses)
	for z := range n[0] {
		for y := range n[1] {
			for x := range n[2] {
				r := int(raw[((s[0]+z)*v.Shape[1]+s[1]+y)*v.Shape[2]+s[2]+x])
				if r >= 128 && (r-128)*bands/128 == c {
					copy(out[((z*n[1]+y)*n[2]+x)*d.Size():], one)
				}
			}
		}
	}
	return out
}

// pyramid writes data (s0, of shape, starting at voxel start of the raw
// grid) in chunks of the given shape, and its coarser levels, each the
// mean (raw) or the maximum (labels) of 2x2x2 voxels, as an OME-NGFF 0.4
// multiscale at dir.
func (v Volume) pyramid(dir string, d runtime.DType, labels bool, data []byte, shape, start, chunks []int, axes []zarr.Axis) error {
	ms := zarr.Multiscale{Name: filepath.Base(dir), Axes: axes}
	for l := range v.Levels {
		f := math.Ldexp(1, l) // this level's voxel, in s0 voxels
		vox := v.VoxelNM * f
		// Voxel 0 of level l covers s0 voxels [0, 2^l) of its start: its
		// centre lies (2^l - 1)/2 s0 voxels past start's.
		shift := (f - 1) / 2 * v.VoxelNM
		spec := zarr.ArraySpec{Shape: shape, Chunks: chunks, DType: d, Compressor: v.Compressor, Separator: "/"}
		name := fmt.Sprintf("s%d", l)
		if err := zarr.WriteArray(filepath.Join(dir, name), spec, data); err != nil {
			return err
		}
		ms.Levels = append(ms.Levels, zarr.Level{
			Path:        name,
			Scale:       []float64{vox, vox, vox},
			Translation: []float64{float64(start[0])*v.VoxelNM + shift, float64(start[1])*v.VoxelNM + shift, float64(start[2])*v.VoxelNM + shift},
		})
		data, shape = halve(d, labels, data, shape)
	}
	return zarr.WriteMultiscale(dir, ms)
}

// halve pools 2x2x2 voxels of d (uint8 or float32; data holds their bytes)
// into one: the maximum of labels, the mean of raw. An odd last voxel is
// dropped.
func halve(d runtime.DType, labels bool, data []byte, shape []int) ([]byte, []int) {
	if labels && d == runtime.Uint8 {
		return pool(data, shape, func(v [8]uint8) uint8 { return max(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]) })
	}
	if d == runtime.Uint8 {
		return pool(data, shape, func(v [8]uint8) uint8 {
			var sum float64
			for _, x := range v {
				sum += float64(x)
			}
			return byte(math.Round(sum / 8))
		})
	}
	res, out := pool(runtime.View[float32](data), shape, func(v [8]float32) float32 {
		var peak float32
		for _, x := range v {
			peak = max(peak, x)
		}
		return peak
	})
	return runtime.Bytes(res), out
}

// pool returns the volume of half the shape whose every voxel is f of the
// 2x2x2 voxels of data it covers, and that shape.
func pool[T uint8 | float32](data []T, shape []int, f func([8]T) T) ([]T, []int) {
	out := []int{shape[0] / 2, shape[1] / 2, shape[2] / 2}
	res := make([]T, out[0]*out[1]*out[2])
	var v [8]T
	for z := range out[0] {
		for y := range out[1] {
			for x := range out[2] {
				for i := range v {
					v[i] = data[((2*z+i>>2)*shape[1]+2*y+i>>1&1)*shape[2]+2*x+i&1]
				}
				res[(z*out[1]+y)*out[2]+x] = f(v)
			}
		}
	}
	return res, out
}
