// Package schema reads version-1 dataset schemas (YAML) into a validated
// Dataset. Every error names the file, line and column of the offending node.
package schema

import (
	"slices"
	"strconv"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/images/imagespec"
	"github.com/loadergen/loadergen/runtime/volume/volumespec"
	"github.com/loadergen/loadergen/runtime/zarr/zarrspec"
)

// Version is the only schema version this loadergen reads.
const Version = 1

// Dataset is a parsed and validated schema.
type Dataset struct {
	File      string   // path the schema was read from, as given
	Package   string   // Go package clause of the generated file
	Name      string   // exported prefix of generated identifiers
	BatchSize int      // samples per batch, >= 1
	Device    Device   // cpu, cuda or cuda:N
	Classes   []string // optional; targets get a leading class axis
	Keys      []Key    // inputs then targets, in file order
	Crops     *Crops   // how samples are cut from volumes; nil unless the keys read zarr arrays and say so
	Tiles     *Tiles   // how volumes are tiled to predict over; nil unless the keys read zarr arrays and say so
	Records   *Records // where record keys' samples come from; nil unless the keys read members
	Loader    runtime.LoaderDefaults
	Streams   Streams
	// At is where each field is written, by its path: "batch_size",
	// "streams.max_streams", "inputs.raw.shape", ... -> line and column of
	// its value. Fields the schema leaves out are absent.
	At map[string]Pos
}

// Defaults returns the Dataset of a schema that writes no optional
// setting: what Parse fills in, and what a Dataset built in code starts
// from, as the generator checks each setting (Settings) with its rule.
func Defaults() Dataset {
	return Dataset{
		Device: Device{}, // cpu
		Loader: runtime.LoaderDefaults{
			Prefetch:     runtime.PrefetchAuto,
			MaxStagingMB: 16 << 10, // 16 GiB
		},
		// One stream: on an H100 four streams copied a 256 MiB batch to the
		// device at 34-36 GB/s, one at 36-38 GB/s (docs/PERFORMANCE.md).
		Streams: Streams{MinBatchSize: 8, MinBatchMemoryMB: 100, MaxStreams: 1, Assign: RoundRobin},
	}
}

// SampleShape is the shape of one sample of key k: [C, S...] when the key
// has a class axis (C = len(Classes)), else S; empty for a scalar.
func (ds *Dataset) SampleShape(k Key) []int {
	if k.ClassAxis {
		return append([]int{len(ds.Classes)}, k.Shape...)
	}
	return slices.Clone(k.Shape)
}

// Where returns "FILE:LINE:COL" of the field at path, or FILE when the
// schema does not write it.
func (ds *Dataset) Where(path string) string {
	if pos, ok := ds.At[path]; ok {
		return where(ds.File, pos)
	}
	return ds.File
}

// Paths of the fields that the generator's messages point at (Where).
const (
	PathBatchSize    = "batch_size"
	PathPrefetch     = "loader.prefetch"
	PathMaxStagingMB = "loader.max_staging_mb"
)

// Device is where batches go: the CPU, or a CUDA device.
type Device struct {
	CUDA bool
	// Ordinal is the CUDA device ordinal, or -1 for "cuda" without one:
	// the GPU of the process's local rank. Meaningful only when CUDA is set.
	Ordinal int
}

// String returns "cpu", "cuda" or "cuda:N".
func (d Device) String() string {
	switch {
	case !d.CUDA:
		return "cpu"
	case d.Ordinal < 0:
		return "cuda"
	default:
		return "cuda:" + strconv.Itoa(d.Ordinal)
	}
}

// Key is one named array of a sample.
type Key struct {
	Name      string               // as written in the schema
	GoName    string               // CamelCase form: em_raw -> EmRaw
	Role      runtime.Role         // input or target
	Shape     []int                // sample shape S, without the class axis; empty for a scalar
	ClassAxis bool                 // the sample has a leading axis of len(classes): [C, S...]
	DType     runtime.DType        // element type
	File      string               // optional .npy path, relative to the data root
	Zarr      string               // optional zarr path, relative to a volume's root; may hold {class}
	Scale     []float64            // a zarr key's voxel size along each spatial axis; nil when not given
	Fill      float64              // a zarr key's value outside its array or for a missing class (NaN for nan), of DType, not normalised
	Missing   volumespec.Missing   // a zarr key's missing: what a chunk that is not stored reads as
	Ragged    bool                 // the first axis of Shape is a maximum: samples have up to Shape[0] rows
	Pad       float64              // a ragged key's value for the rows past a sample's own (NaN for nan)
	Offsets   string               // a ragged file key's .npy of int64 row offsets (CSR, N+1 entries)
	Overflow  runtime.Overflow     // what a ragged key does with a sample of more rows than Shape[0]
	Member    string               // a record key's member: jpg, jpeg, png, cls or npy, all but cls also as NAME.EXT (lower case)
	Image     *imagespec.Transform // an image key's layout, crop, flip and normalisation; nil for others
	Geometry  string               // a mask key's image key, whose crop and flip it takes (nearest)
	Priority  runtime.Priority     // stream priority from streams.priority
	Pos       Pos                  // where the key is declared
	// ArrayDType is the dtype of a zarr key's arrays: DType unless
	// array_dtype names another, which is converted to DType as crops are
	// read (zarrspec.CheckConversion's rule); 0 for other keys.
	ArrayDType runtime.DType
	// Normalize is the map a zarr key's normalize makes of its arrays'
	// values; nil when it has none (an image key's is in Image).
	Normalize *zarrspec.Affine
	// Linear says a zarr key's turned crops (crops.augment.rotate) are
	// interpolated, not read nearest: its interpolation, linear for inputs
	// and nearest for targets unless given.
	Linear bool
	// Values are a zarr key's value augmentations: its augment's in the
	// order written, then its binarize.
	Values []volumespec.ValueOp
}

// Streams are the settings of the stream decision (streams:), each a
// Setting that flags and the environment may override.
type Streams struct {
	MinBatchSize     int     // smallest batch size that uses several streams
	MinBatchMemoryMB float64 // smallest batch memory, in MiB, that uses several streams
	MaxStreams       int     // most streams, 1 to MaxStreams
	Assign           Assign  // how keys are spread over the streams
}

// Pos is a position in a schema file.
type Pos struct {
	Line, Col int
}
