// Package volumespec holds the words of a volume source's spec that a
// schema writes and the generator checks before any volume is opened:
// what a missing chunk reads as (Missing), how keys off the common voxel
// grid are placed (Align), the value augmentations (ValueOp) and turns
// (Rotation) of crops, how overlapping tiles blend (Blend), and the
// weight column of a manifest of volumes (WeightColumn). It does no
// I/O: the generator imports it, and runtime/volume, which reads volumes,
// names its types (volume.Missing, volume.ValueOp, ...) as aliases of
// these.
package volumespec

import "fmt"

// Missing says what a key makes of a chunk inside its array that is not
// stored (no file, or marked empty in its shard's index): the schema's
// missing: of a zarr key. Either way the source counts such chunks
// (runtime/volume's Source.MissingChunks).
type Missing int

const (
	// MissingFill reads the chunk as the array's fill value, as the zarr
	// spec says of chunks never written, and logs the first such chunk of
	// each array.
	MissingFill Missing = iota
	// MissingError fails the sample's read with runtime/volume's
	// ErrMissingChunk, naming the array, the chunk and the crop.
	MissingError
)

// MissingModes lists the values of Missing, in the order the schema's
// errors offer their names.
var MissingModes = []Missing{MissingFill, MissingError}

// String returns the schema's name of m: "fill" or "error".
func (m Missing) String() string {
	if m == MissingError {
		return "error"
	}
	return "fill"
}

// WeightColumn is the optional column of sampling weights in a manifest
// of volumes (runtime/volume's LoadManifest).
const WeightColumn = "weight"

// Align is what a volume source does with a key whose array's voxel grid
// (OME-NGFF scale and translation) is off the common grid, so that its box
// cannot start on a whole voxel at the centre the keys share
// (crops.align). The common grid is the coarsest key's (the first of
// several at one voxel size); the other keys' boxes are placed on it.
type Align uint8

// The alignments. The zero value is AlignExact.
const (
	// AlignExact refuses such a key: the source's Open gives the numbers.
	AlignExact Align = iota
	// AlignNearest starts the key's box at its nearest voxel, the lower
	// one when two are as near, at most half a voxel from its exact place;
	// the source's Open logs the largest such offset.
	AlignNearest
)

// alignNames are the rules as a schema writes them, by value.
var alignNames = [...]string{AlignExact: "exact", AlignNearest: "nearest"}

// String returns "exact" or "nearest", as the schema spells the rule.
func (a Align) String() string {
	if int(a) < len(alignNames) {
		return alignNames[a]
	}
	return fmt.Sprintf("Align(%d)", uint8(a))
}

// ValueKind names a value augmentation (ValueOp).
type ValueKind uint8

// The value augmentations, each cellmap-data's formula (docs/VOLUMES.md,
// "Value augmentations"). All but Binarize need a float dtype.
const (
	// Noise adds Gaussian noise of mean Mean and deviation Std to each
	// value (GaussianNoise).
	Noise ValueKind = iota + 1
	// Contrast maps x to r·x + (1-r)·m, clamped to [0, 1] (NaN to 0): r
	// drawn from Range, m the mean of the values along the sample's first
	// axis at x's place on the others (RandomContrast).
	Contrast
	// Gamma maps x to x^g, clamped to [0, 1] (NaN, and so negative x, to
	// 0): g drawn from Range (RandomGamma).
	Gamma
	// Blur convolves the sample with a Gaussian of deviation s voxels, s
	// drawn from Range, separable, truncated at 3s (radius ⌊3s⌋ voxels),
	// normalised to sum 1, the edges' voxels repeated past them
	// (GaussianBlur).
	Blur
	// Binarize maps x to 1 where x > Threshold, else 0; NaN stays NaN
	// (Binarize).
	Binarize
)

// valueNames are the kinds as a schema spells them, by value.
var valueNames = [...]string{Noise: "noise", Contrast: "contrast", Gamma: "gamma", Blur: "blur", Binarize: "binarize"}

// String returns the schema's name of k: "noise", "contrast", "gamma",
// "blur" or "binarize".
func (k ValueKind) String() string {
	if int(k) < len(valueNames) && valueNames[k] != "" {
		return valueNames[k]
	}
	return fmt.Sprintf("ValueKind(%d)", uint8(k))
}

// ValueOp is one value augmentation of a key.
type ValueOp struct {
	Kind ValueKind
	// Range is what Contrast's ratio, Gamma's exponent (> 0) and Blur's
	// deviation (in voxels, 0 to MaxBlurSigma) are drawn from, uniformly:
	// Range[0] + u·(Range[1] - Range[0]).
	Range [2]float64
	// Mean and Std are Noise's.
	Mean, Std float64
	// Threshold is Binarize's.
	Threshold float64
}

// MaxBlurSigma bounds Blur's deviation, in voxels: its kernel then spans
// at most 193 voxels.
const MaxBlurSigma = 32

// Rotation is one turn of crops.augment.rotate: by an angle in degrees
// drawn uniformly from [Min, Max], in the plane of spatial axes Plane[0]
// and Plane[1] (Plane[0] < Plane[1]), turning the first toward the second:
// the rotation about the axis the schema names (z, y or x), as
// cellmap-data builds it for that axis, rotating the plane of the other
// two. In 2D the only plane is (y, x), the turn about z.
type Rotation struct {
	Plane    [2]int
	Min, Max float64
}

// Blend says what a voxel that several overlapping tiles predict becomes
// (tiles.blend).
type Blend uint8

const (
	// BlendAverage averages the tiles' values (rounded to nearest, ties
	// to even, for integer dtypes).
	BlendAverage Blend = iota
	// BlendLast takes the value of the last tile in the grid's order along
	// every axis: each tile keeps its first Step voxels, the last along
	// an axis all of them.
	BlendLast
)

// String returns the schema's name of b: "average" or "last".
func (b Blend) String() string { return [...]string{BlendAverage: "average", BlendLast: "last"}[b&1] }
