package runtime

// Crop says where a sample of a volume source comes from. It is a pure
// function of the schema's seed, the epoch and the sample's index: a
// generated volume source's Crop(epoch, index) recomputes it, to validate,
// to stitch predictions back, or to debug.
type Crop struct {
	Volume int `json:"volume"` // the volume's index in the list the source was opened with
	// Origin holds, per key in plan order, the voxel index at the key's
	// level of the box's first corner, before augmentation. It is negative
	// or past the array's end only with crops.pad.
	Origin [][]int `json:"origin"`
	// Foreground says the centre was drawn from the labelled voxels of the
	// schema's crops.foreground key.
	Foreground bool `json:"foreground"`

	// The augmentation, applied to every key alike, in this order:
	Mirror    []bool `json:"mirror"`    // flip each spatial axis (z, y, x) marked true,
	Transpose []int  `json:"transpose"` // then let output axis j take axis Transpose[j],
	Rot90     int    `json:"rot90"`     // then turn this many quarter turns in the rot90 plane.

	// Under crops.augment.rotate, the volume is turned about the box's
	// centre before the augmentation above, alike for every key in
	// physical space: Rotate holds the angles drawn, in degrees, one per
	// axis the schema's rotate lists, in its order, and Rotation the matrix
	// they compose (rows and columns z, y, x, as many as the keys' spatial
	// axes). The value at offset d from a key's box centre (physical units)
	// comes from offset Rotation^T·d in the volume. Both are nil without
	// rotate.
	Rotate   []float64   `json:"rotate,omitempty"`
	Rotation [][]float64 `json:"rotation,omitempty"`
}

// spatialAxes names the spatial axes of a volume key of the most axes.
var spatialAxes = [...]string{"z", "y", "x"}

// MaxSpatialRank is the most spatial axes a volume key has: z, y and x.
const MaxSpatialRank = len(spatialAxes)

// ClassPlaceholder in a volume key's zarr path stands for each class name:
// a key with a class axis reads one array per class.
const ClassPlaceholder = "{class}"

// SpatialAxes names the spatial axes of volume keys of the given rank (1
// to MaxSpatialRank): z, y, x, the last ones for lower ranks.
func SpatialAxes(rank int) []string {
	all := spatialAxes // a copy, which the caller may change
	return all[MaxSpatialRank-min(max(rank, 0), MaxSpatialRank):]
}
