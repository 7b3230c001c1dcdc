package schema

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/images/imagespec"
	"github.com/loadergen/loadergen/runtime/volume/volumespec"
	"github.com/loadergen/loadergen/runtime/zarr/zarrspec"
)

// designSchema is testdata/design.yaml, an example schema with a comment
// on each field, which the CLI's tests use too.
var designSchema = func() string {
	b, err := os.ReadFile("../testdata/design.yaml")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// What Parse fills in for the settings a schema leaves out (Defaults).
var (
	defaultLoader  = runtime.LoaderDefaults{Prefetch: runtime.PrefetchAuto, MaxStagingMB: 16384}
	defaultStreams = Streams{MinBatchSize: 8, MinBatchMemoryMB: 100, MaxStreams: 1, Assign: RoundRobin}
)

// ignoreAt leaves Dataset.At to TestPositions.
var ignoreAt = cmpopts.IgnoreFields(Dataset{}, "At")

// TestPositions: Dataset.At holds the position of every field written, and
// Where formats it.
func TestPositions(t *testing.T) {
	ds, err := Parse("d.yaml", []byte(designSchema))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"batch_size":            "d.yaml:4:13",
		"streams.max_streams":   "d.yaml:20:16",
		"inputs.raw.shape":      "d.yaml:8:19",
		"loader.prefetch":       "d.yaml:12:13",
		"loader.max_staging_mb": "d.yaml",
	} {
		if got := ds.Where(path); got != want {
			t.Errorf("Where(%q) = %s, want %s", path, got, want)
		}
	}
}

// TestRaggedPositions: the ragged fields and loader.bucket's are in
// Dataset.At, for the stages after Parse to point at.
func TestRaggedPositions(t *testing.T) {
	const schema = "version: 1\npackage: demo\nname: Demo\nbatch_size: 2\ninputs:\n" +
		"  tokens: {shape: [512], dtype: int32, ragged: true, pad: -1, file: t.npy, offsets: o.npy, overflow: truncate}\n" +
		"loader:\n  bucket: {key: tokens, window: 3}\n"
	ds, err := Parse("r.yaml", []byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"inputs.tokens.ragged":   "r.yaml:6:48",
		"inputs.tokens.pad":      "r.yaml:6:59",
		"inputs.tokens.offsets":  "r.yaml:6:85",
		"inputs.tokens.overflow": "r.yaml:6:102",
		"loader.bucket":          "r.yaml:8:11",
		"loader.bucket.key":      "r.yaml:8:17",
		"loader.bucket.window":   "r.yaml:8:33",
	} {
		if got := ds.Where(path); got != want {
			t.Errorf("Where(%q) = %s, want %s", path, got, want)
		}
	}
}

func designDataset(file string) *Dataset {
	return &Dataset{
		File:      file,
		Package:   "cellmap",
		Name:      "CellMap",
		BatchSize: 16,
		Device:    Device{CUDA: true, Ordinal: -1},
		Classes:   []string{"mito", "er", "nucleus"},
		Keys: []Key{
			{Name: "raw", GoName: "Raw", Role: runtime.Input, Shape: []int{64, 64, 64}, DType: runtime.Uint8,
				File: "raw.npy", Priority: runtime.High, Pos: Pos{Line: 8, Col: 3}},
			{Name: "labels", GoName: "Labels", Role: runtime.Target, Shape: []int{64, 64, 64}, ClassAxis: true,
				DType: runtime.Float32, File: "labels.npy", Priority: runtime.Normal, Pos: Pos{Line: 10, Col: 3}},
		},
		Loader:  runtime.LoaderDefaults{Prefetch: 2, Shuffle: true, MaxStagingMB: 16384},
		Streams: Streams{MinBatchSize: 8, MinBatchMemoryMB: 100, MaxStreams: 4, Assign: RoundRobin},
	}
}

const minimalSchema = "version: 1\npackage: demo\nname: Demo\nbatch_size: 4\ninputs:\n  raw: {shape: [8, 8], dtype: uint8}\n"

func minimalDataset(file string) *Dataset {
	return &Dataset{
		File:      file,
		Package:   "demo",
		Name:      "Demo",
		BatchSize: 4,
		Keys: []Key{
			{Name: "raw", GoName: "Raw", Role: runtime.Input, Shape: []int{8, 8}, DType: runtime.Uint8, Pos: Pos{Line: 6, Col: 3}},
		},
		Loader:  defaultLoader,
		Streams: defaultStreams,
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   *Dataset
	}{
		{"design", designSchema, designDataset("design.yaml")},
		{"crlf", strings.ReplaceAll(designSchema, "\n", "\r\n"), designDataset("crlf.yaml")},
		{"bom", "\ufeff" + designSchema, designDataset("bom.yaml")},
		{"minimal", minimalSchema, minimalDataset("minimal.yaml")},
		// A fixed depth, then auto written out: the default's value.
		{"prefetch_fixed", minimalSchema + "loader: {prefetch: 5}\n", func() *Dataset {
			d := minimalDataset("prefetch_fixed.yaml")
			d.Loader.Prefetch = 5
			return d
		}()},
		{"prefetch_auto", minimalSchema + "loader: {prefetch: auto}\n", minimalDataset("prefetch_auto.yaml")},
		{"document_markers", "---\n" + minimalSchema + "...\n", func() *Dataset {
			ds := minimalDataset("document_markers.yaml")
			ds.Keys[0].Pos.Line++
			return ds
		}()},
		{
			name: "aliases",
			schema: `version: 1
package: demo
name: Demo
batch_size: &four 4
inputs:
  em_raw: &key {shape: &shape [8, 8], dtype: uint8}
  em_raw2: *key
targets:
  mask: {shape: *shape, dtype: bool}
streams:
  min_batch_size: *four
  priority: {em_raw2: low, mask: normal}
`,
			want: &Dataset{
				File: "aliases.yaml", Package: "demo", Name: "Demo", BatchSize: 4,
				Keys: []Key{
					{Name: "em_raw", GoName: "EmRaw", Role: runtime.Input, Shape: []int{8, 8}, DType: runtime.Uint8, Pos: Pos{Line: 6, Col: 3}},
					{Name: "em_raw2", GoName: "EmRaw2", Role: runtime.Input, Shape: []int{8, 8}, DType: runtime.Uint8, Priority: runtime.Low, Pos: Pos{Line: 7, Col: 3}},
					{Name: "mask", GoName: "Mask", Role: runtime.Target, Shape: []int{8, 8}, DType: runtime.Bool, Pos: Pos{Line: 9, Col: 3}},
				},
				Loader:  defaultLoader,
				Streams: Streams{MinBatchSize: 4, MinBatchMemoryMB: 100, MaxStreams: 1},
			},
		},
		{
			name: "json_targets_first",
			schema: `{"version": 1, "package": "p", "name": "É", "batch_size": 1, "device": "cuda:3",
"targets": {"y": {"shape": [2], "dtype": "bfloat16"}},
"inputs": {"__x__": {"shape": [0x10, 1_000], "dtype": "float16", "file": "a/b/x.npy"}},
"loader": {"prefetch": 1, "workers": 8, "seed": 18446744073709551615, "drop_last": true},
"streams": {"min_batch_memory_mb": 0.5, "max_streams": 64, "assign": "balanced"}}
`,
			want: &Dataset{
				File: "json_targets_first.yaml", Package: "p", Name: "É", BatchSize: 1,
				Device: Device{CUDA: true, Ordinal: 3},
				Keys: []Key{
					{Name: "__x__", GoName: "X", Role: runtime.Input, Shape: []int{16, 1000}, DType: runtime.Float16, File: "a/b/x.npy", Pos: Pos{Line: 3, Col: 12}},
					{Name: "y", GoName: "Y", Role: runtime.Target, Shape: []int{2}, DType: runtime.BFloat16, Pos: Pos{Line: 2, Col: 13}},
				},
				Loader:  runtime.LoaderDefaults{Prefetch: 1, Workers: 8, Seed: 18446744073709551615, DropLast: true, MaxStagingMB: 16384},
				Streams: Streams{MinBatchSize: 8, MinBatchMemoryMB: 0.5, MaxStreams: 64, Assign: Balanced},
			},
		},
		{
			name:   "cuda0_camel_keys",
			schema: "version: 1\npackage: demo\nname: Demo\nbatch_size: 2\ndevice: cuda:0\ninputs:\n  rawData: {shape: [3], dtype: int64}\n  éclair_x: {shape: [3], dtype: int8}\n",
			want: &Dataset{
				File: "cuda0_camel_keys.yaml", Package: "demo", Name: "Demo", BatchSize: 2,
				Device: Device{CUDA: true},
				Keys: []Key{
					{Name: "rawData", GoName: "RawData", Role: runtime.Input, Shape: []int{3}, DType: runtime.Int64, Pos: Pos{Line: 7, Col: 3}},
					{Name: "éclair_x", GoName: "ÉclairX", Role: runtime.Input, Shape: []int{3}, DType: runtime.Int8, Pos: Pos{Line: 8, Col: 3}},
				},
				Loader:  defaultLoader,
				Streams: defaultStreams,
			},
		},
		{
			name: "scalars_and_class_axis",
			schema: `version: 1
package: demo
name: Demo
batch_size: 2
classes: [a, b]
inputs:
  weight: {shape: [], dtype: float32}
targets:
  label: {shape: [], dtype: int64, class_axis: false}
  masks: {shape: [4], dtype: bool}
  score: {shape: [], dtype: float32, class_axis: true}
`,
			want: &Dataset{
				File: "scalars_and_class_axis.yaml", Package: "demo", Name: "Demo", BatchSize: 2,
				Classes: []string{"a", "b"},
				Keys: []Key{
					{Name: "weight", GoName: "Weight", Role: runtime.Input, Shape: []int{}, DType: runtime.Float32, Pos: Pos{Line: 7, Col: 3}},
					{Name: "label", GoName: "Label", Role: runtime.Target, Shape: []int{}, DType: runtime.Int64, Pos: Pos{Line: 9, Col: 3}},
					{Name: "masks", GoName: "Masks", Role: runtime.Target, Shape: []int{4}, ClassAxis: true, DType: runtime.Bool, Pos: Pos{Line: 10, Col: 3}},
					{Name: "score", GoName: "Score", Role: runtime.Target, Shape: []int{}, ClassAxis: true, DType: runtime.Float32, Pos: Pos{Line: 11, Col: 3}},
				},
				Loader:  defaultLoader,
				Streams: defaultStreams,
			},
		},
		{
			name: "ragged_bucket",
			schema: `version: 1
package: demo
name: Demo
batch_size: 8
classes: [cat, dog]
inputs:
  tokens: {shape: [512], dtype: int32, ragged: true, pad: -1, file: tokens.npy, offsets: tokens_offsets.npy}
  image: {shape: [3, 32, 32], dtype: uint8, file: image.npy}
targets:
  boxes: {shape: [100, 4], dtype: float32, class_axis: false, ragged: true, pad: nan, file: boxes.npy, offsets: boxes_offsets.npy, overflow: truncate}
loader:
  shuffle: true
  bucket: {key: tokens, window: 20}
`,
			want: &Dataset{
				File: "ragged_bucket.yaml", Package: "demo", Name: "Demo", BatchSize: 8,
				Classes: []string{"cat", "dog"},
				Keys: []Key{
					{Name: "tokens", GoName: "Tokens", Role: runtime.Input, Shape: []int{512}, DType: runtime.Int32,
						File: "tokens.npy", Ragged: true, Pad: -1, Offsets: "tokens_offsets.npy", Pos: Pos{Line: 7, Col: 3}},
					{Name: "image", GoName: "Image", Role: runtime.Input, Shape: []int{3, 32, 32}, DType: runtime.Uint8,
						File: "image.npy", Pos: Pos{Line: 8, Col: 3}},
					{Name: "boxes", GoName: "Boxes", Role: runtime.Target, Shape: []int{100, 4}, DType: runtime.Float32,
						File: "boxes.npy", Ragged: true, Pad: math.NaN(), Offsets: "boxes_offsets.npy", Overflow: runtime.OverflowTruncate, Pos: Pos{Line: 10, Col: 3}},
				},
				Loader:  runtime.LoaderDefaults{Prefetch: runtime.PrefetchAuto, Shuffle: true, MaxStagingMB: 16384, Bucket: runtime.Bucket{Key: "tokens", Window: 20}},
				Streams: defaultStreams,
			},
		},
		{
			name: "ragged_defaults",
			schema: `version: 1
package: demo
name: Demo
batch_size: 8
inputs:
  tokens: {shape: [512], dtype: int32, ragged: true}
  mask: {shape: [512], dtype: bool, ragged: false}
targets:
  boxes: {shape: [100, 4], dtype: float16, ragged: true, pad: .nan}
loader:
  bucket: {key: boxes}
`,
			want: &Dataset{
				File: "ragged_defaults.yaml", Package: "demo", Name: "Demo", BatchSize: 8,
				Keys: []Key{
					{Name: "tokens", GoName: "Tokens", Role: runtime.Input, Shape: []int{512}, DType: runtime.Int32, Ragged: true, Pos: Pos{Line: 6, Col: 3}},
					{Name: "mask", GoName: "Mask", Role: runtime.Input, Shape: []int{512}, DType: runtime.Bool, Pos: Pos{Line: 7, Col: 3}},
					{Name: "boxes", GoName: "Boxes", Role: runtime.Target, Shape: []int{100, 4}, DType: runtime.Float16,
						Ragged: true, Pad: math.NaN(), Pos: Pos{Line: 9, Col: 3}},
				},
				Loader:  runtime.LoaderDefaults{Prefetch: runtime.PrefetchAuto, MaxStagingMB: 16384, Bucket: runtime.Bucket{Key: "boxes", Window: 50}},
				Streams: defaultStreams,
			},
		},
		{
			name: "records_shards",
			schema: `version: 1
package: imgs
name: Imgs
batch_size: 4
records: {shards: "train-{00..02}.tar"}
inputs:
  image:
    shape: [3, 16, 16]
    dtype: float32
    member: JPG
    resize: {crop: random_resized, scale: [0.25, 1], ratio: [0.5, 2]}
    flip: 0.5
    normalize: {mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225]}
targets:
  mask: {shape: [16, 16], dtype: int64, member: png, geometry: image}
  label: {shape: [], dtype: int32, member: cls}
`,
			want: &Dataset{
				File: "records_shards.yaml", Package: "imgs", Name: "Imgs", BatchSize: 4,
				Records: &Records{Shards: "train-{00..02}.tar"},
				Keys: []Key{
					{Name: "image", GoName: "Image", Role: runtime.Input, Shape: []int{3, 16, 16}, DType: runtime.Float32, Member: "jpg",
						Image: &imagespec.Transform{Crop: imagespec.RandomResized, Scale: [2]float64{0.25, 1}, Ratio: [2]float64{0.5, 2}, Flip: 0.5,
							Mean: []float64{0.485, 0.456, 0.406}, Std: []float64{0.229, 0.224, 0.225}},
						Pos: Pos{Line: 7, Col: 3}},
					{Name: "mask", GoName: "Mask", Role: runtime.Target, Shape: []int{16, 16}, DType: runtime.Int64, Member: "png", Geometry: "image", Pos: Pos{Line: 15, Col: 3}},
					{Name: "label", GoName: "Label", Role: runtime.Target, Shape: []int{}, DType: runtime.Int32, Member: "cls", Pos: Pos{Line: 16, Col: 3}},
				},
				Loader: defaultLoader, Streams: defaultStreams,
			},
		},
		{
			name: "records_arrays",
			schema: `version: 1
package: scenes
name: Scenes
batch_size: 4
records: {shards: "scenes-{0..1}.tar"}
inputs:
  image: {shape: [3, 16, 16], dtype: uint8, member: "jpg;JPEG;png"}
  depth: {shape: [6, 8], dtype: float32, member: Depth.NPY}
targets:
  pose: {shape: [3], dtype: int16, member: npy}
`,
			want: &Dataset{
				File: "records_arrays.yaml", Package: "scenes", Name: "Scenes", BatchSize: 4,
				Records: &Records{Shards: "scenes-{0..1}.tar"},
				Keys: []Key{
					{Name: "image", GoName: "Image", Role: runtime.Input, Shape: []int{3, 16, 16}, DType: runtime.Uint8, Member: "jpg;jpeg;png",
						Image: &imagespec.Transform{}, Pos: Pos{Line: 7, Col: 3}},
					{Name: "depth", GoName: "Depth", Role: runtime.Input, Shape: []int{6, 8}, DType: runtime.Float32, Member: "depth.npy", Pos: Pos{Line: 8, Col: 3}},
					{Name: "pose", GoName: "Pose", Role: runtime.Target, Shape: []int{3}, DType: runtime.Int16, Member: "npy", Pos: Pos{Line: 10, Col: 3}},
				},
				Loader: defaultLoader, Streams: defaultStreams,
			},
		},
		{
			name: "records_named_images",
			schema: `version: 1
package: stereo
name: Stereo
batch_size: 4
records: {shards: "pairs-{0..1}.tar"}
inputs:
  left: {shape: [3, 16, 16], dtype: uint8, member: left.jpg, resize: {crop: center}}
  right: {shape: [3, 16, 16], dtype: uint8, member: Right.JPEG, resize: {crop: center}}
targets:
  disparity: {shape: [16, 16], dtype: uint8, member: disparity.png, geometry: left}
`,
			want: &Dataset{
				File: "records_named_images.yaml", Package: "stereo", Name: "Stereo", BatchSize: 4,
				Records: &Records{Shards: "pairs-{0..1}.tar"},
				Keys: []Key{
					{Name: "left", GoName: "Left", Role: runtime.Input, Shape: []int{3, 16, 16}, DType: runtime.Uint8, Member: "left.jpg",
						Image: &imagespec.Transform{Crop: imagespec.Center, Size: 16}, Pos: Pos{Line: 7, Col: 3}},
					{Name: "right", GoName: "Right", Role: runtime.Input, Shape: []int{3, 16, 16}, DType: runtime.Uint8, Member: "right.jpeg",
						Image: &imagespec.Transform{Crop: imagespec.Center, Size: 16}, Pos: Pos{Line: 8, Col: 3}},
					{Name: "disparity", GoName: "Disparity", Role: runtime.Target, Shape: []int{16, 16}, DType: runtime.Uint8, Member: "disparity.png", Geometry: "left", Pos: Pos{Line: 10, Col: 3}},
				},
				Loader: defaultLoader, Streams: defaultStreams,
			},
		},
		{
			name: "records_folder",
			schema: `version: 1
package: imgs
name: Imgs
batch_size: 4
records: {folder: val, skip_unknown: true}
inputs:
  image: {shape: [24, 32, 1], dtype: uint8, member: jpeg, layout: hwc, resize: {crop: center}}
  default_crop: {shape: [], dtype: uint8, member: cls}
`,
			want: &Dataset{
				File: "records_folder.yaml", Package: "imgs", Name: "Imgs", BatchSize: 4,
				Records: &Records{Folder: "val", SkipUnknown: true},
				Keys: []Key{
					{Name: "image", GoName: "Image", Role: runtime.Input, Shape: []int{24, 32, 1}, DType: runtime.Uint8, Member: "jpeg",
						Image: &imagespec.Transform{Layout: imagespec.HWC, Crop: imagespec.Center, Size: 32}, Pos: Pos{Line: 7, Col: 3}},
					{Name: "default_crop", GoName: "DefaultCrop", Role: runtime.Input, Shape: []int{}, DType: runtime.Uint8, Member: "cls", Pos: Pos{Line: 8, Col: 3}},
				},
				Loader: defaultLoader, Streams: defaultStreams,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.name+".yaml", []byte(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, ignoreAt, cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("Parse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGoName(t *testing.T) {
	for in, want := range map[string]string{
		"raw": "Raw", "em_raw": "EmRaw", "rawData": "RawData", "_a__b_": "AB", "x2_3d": "X23d", "é": "É", "_": "",
	} {
		if got := GoName(in); got != want {
			t.Errorf("GoName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestViewName: views lower the leading initialism of the Go name, and a
// Go keyword gets a trailing underscore.
func TestViewName(t *testing.T) {
	for in, want := range map[string]string{
		"Raw": "raw", "EmRaw": "emRaw", "URLSet": "urlSet", "UrlSet": "urlSet", "ID": "id", "STAGED": "staged",
		"X2": "x2", "ÉclairX": "éclairX", "Type": "type_", "FUNC": "func_", "Range": "range_",
	} {
		if got := ViewName(in); got != want {
			t.Errorf("ViewName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := LengthsName("Tokens"); got != "TokensLengths" {
		t.Errorf("LengthsName(%q) = %q, want %q", "Tokens", got, "TokensLengths")
	}
	if got := Unexport("CellMap"); got != "cellMap" {
		t.Errorf("Unexport(%q) = %q, want %q", "CellMap", got, "cellMap")
	}
}

func TestAlternatives(t *testing.T) {
	for _, tt := range []struct {
		in   []string
		want string
	}{
		{nil, ""}, {[]string{"a"}, "a"}, {[]string{"a", "b"}, "a or b"}, {[]string{"a", "b", "c"}, "a, b or c"},
	} {
		if got := alternatives(tt.in); got != tt.want {
			t.Errorf("alternatives(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestErrorString(t *testing.T) {
	e := &Error{File: "s.yaml", Line: 3, Col: 7, Msg: "bad"}
	if got, want := e.Error(), "s.yaml:3:7: bad"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte(minimalSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(minimalDataset(good), got, ignoreAt); diff != "" {
		t.Errorf("Load mismatch (-want +got):\n%s", diff)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad)
	var se *Error
	if !errors.As(err, &se) || se.File != bad || se.Line != 1 || se.Col != 10 {
		t.Errorf("Load(bad) = %v, want an *Error at %s:1:10", err, bad)
	}

	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want an os.ErrNotExist error", err)
	}

	big := filepath.Join(dir, "big.yaml")
	padding := strings.Repeat("# padding\n", MaxFileSize/10+1)
	if err := os.WriteFile(big, []byte(minimalSchema+padding), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Load(big) = %v, want a size error", err)
	}
}

func TestHint(t *testing.T) {
	many := make([]string, maxListed+2)
	for i := range many {
		many[i] = fmt.Sprintf("field%02d", i)
	}
	if got, want := hint("colour", many), " (expected one of: "+strings.Join(many[:maxListed], ", ")+", and 2 more)"; got != want {
		t.Errorf("hint among %d = %q, want %q", len(many), got, want)
	}
	known := []string{"prefetch", "workers", "seed"}
	for name, want := range map[string]string{
		"prefech": ` (did you mean "prefetch"?)`,
		"WORKERS": ` (did you mean "workers"?)`,
		"sed":     ` (did you mean "seed"?)`,
		"s":       ` (expected one of: prefetch, workers, seed)`,
		"colour":  ` (expected one of: prefetch, workers, seed)`,
	} {
		if got := hint(name, known); got != want {
			t.Errorf("hint(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestCropsLocality: crops.locality is on by default, with the default
// window; a mapping sets the window (or takes the default), "off" turns it
// off.
func TestCropsLocality(t *testing.T) {
	const schema = "version: 1\npackage: demo\nname: Demo\nbatch_size: 2\ninputs:\n" +
		"  raw: {shape: [8, 8], dtype: uint8, zarr: em/raw}\ncrops:\n  per_epoch: 10\n"
	for _, c := range []struct {
		name, line string
		want       int
	}{
		{"default", "", DefaultLocalityWindow},
		{"window", "  locality: {window: 8}\n", 8},
		{"mapping without window", "  locality: {}\n", DefaultLocalityWindow},
		{"off", "  locality: off\n", 0},
		{"quoted off", "  locality: \"off\"\n", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ds, err := Parse("d.yaml", []byte(schema+c.line))
			if err != nil {
				t.Fatal(err)
			}
			if ds.Crops.Locality != c.want {
				t.Errorf("locality %d, want %d", ds.Crops.Locality, c.want)
			}
		})
	}
}

// TestOnError: a source's on_error (records.on_error, crops.on_error) is
// error unless it says skip.
func TestOnError(t *testing.T) {
	const head = "version: 1\npackage: demo\nname: Demo\nbatch_size: 2\ninputs:\n"
	const crops = head + "  raw: {shape: [8, 8], dtype: uint8, zarr: em/raw}\ncrops: {per_epoch: 10"
	const records = head + "  image: {shape: [3, 8, 8], dtype: uint8, member: jpg}\nrecords: {folder: train"
	for _, c := range []struct {
		schema string
		want   runtime.OnError
	}{
		{crops + "}\n", runtime.OnErrorFail},
		{crops + ", on_error: error}\n", runtime.OnErrorFail},
		{crops + ", on_error: skip}\n", runtime.OnErrorSkip},
		{records + "}\n", runtime.OnErrorFail},
		{records + ", on_error: skip}\n", runtime.OnErrorSkip},
	} {
		ds, err := Parse("d.yaml", []byte(c.schema))
		if err != nil {
			t.Fatal(err)
		}
		got := runtime.OnError(255)
		switch {
		case ds.Crops != nil:
			got = ds.Crops.OnError
		case ds.Records != nil:
			got = ds.Records.OnError
		}
		if got != c.want {
			t.Errorf("%q: on_error %v, want %v", c.schema, got, c.want)
		}
	}
}

// TestCropsAlign: crops.align is exact unless the schema says nearest.
func TestCropsAlign(t *testing.T) {
	const schema = "version: 1\npackage: demo\nname: Demo\nbatch_size: 2\ninputs:\n" +
		"  raw: {shape: [8, 8], dtype: uint8, zarr: em/raw}\ncrops:\n  per_epoch: 10\n"
	for _, c := range []struct {
		line string
		want volumespec.Align
	}{
		{"", volumespec.AlignExact},
		{"  align: exact\n", volumespec.AlignExact},
		{"  align: nearest\n", volumespec.AlignNearest},
	} {
		ds, err := Parse("d.yaml", []byte(schema+c.line))
		if err != nil {
			t.Fatal(err)
		}
		if ds.Crops.Align != c.want {
			t.Errorf("%q: align %v, want %v", c.line, ds.Crops.Align, c.want)
		}
	}
}

// TestZarrMissing: a zarr key's missing: is fill unless it says error,
// key by key.
func TestZarrMissing(t *testing.T) {
	const schema = "version: 1\npackage: demo\nname: Demo\nbatch_size: 2\ninputs:\n" +
		"  raw: {shape: [8, 8], dtype: uint8, zarr: em/raw, missing: error}\n" +
		"  mask: {shape: [8, 8], dtype: uint8, zarr: em/mask}\n" +
		"  labels: {shape: [8, 8], dtype: uint8, zarr: em/labels, missing: fill}\n" +
		"crops:\n  per_epoch: 10\n"
	ds, err := Parse("d.yaml", []byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	want := []volumespec.Missing{volumespec.MissingError, volumespec.MissingFill, volumespec.MissingFill}
	for i, k := range ds.Keys {
		if k.Missing != want[i] {
			t.Errorf("key %s: missing %v, want %v", k.Name, k.Missing, want[i])
		}
	}
}

// TestConversion: a zarr key's array dtype is its own unless array_dtype
// names another, and normalize makes the map its form says: [min, max]
// onto [0, 1] or onto to, or (x - mean) / std. A file key has neither.
func TestConversion(t *testing.T) {
	const head = "version: 1\npackage: demo\nname: Demo\nbatch_size: 2\nclasses: [mito]\n"
	const crops = "crops: {per_epoch: 10}\n"
	for _, c := range []struct {
		name, keys string
		array      runtime.DType
		m          *zarrspec.Affine
	}{
		{"same dtype", "inputs:\n  raw: {shape: [8], dtype: uint8, zarr: em/raw}\n" + crops, runtime.Uint8, nil},
		{"uint8 into float32", "inputs:\n  raw: {shape: [8], dtype: float32, zarr: em/raw, array_dtype: uint8}\n" + crops, runtime.Uint8, nil},
		{"min max", "inputs:\n  raw: {shape: [8], dtype: float32, zarr: em/raw, array_dtype: uint8, normalize: {min: 0, max: 255}}\n" + crops,
			runtime.Uint8, &zarrspec.Affine{Sub: 0, Div: 255, Mul: 1}},
		{"min max to", "inputs:\n  raw: {shape: [8], dtype: float16, zarr: em/raw, array_dtype: uint16, normalize: {min: 1000, max: 3000, to: [-1, 1]}}\n" + crops,
			runtime.Uint16, &zarrspec.Affine{Sub: 1000, Div: 2000, Mul: 2, Add: -1}},
		{"reversed", "inputs:\n  raw: {shape: [8], dtype: float32, zarr: em/raw, array_dtype: uint8, normalize: {min: 0, max: 255, to: [1, 0]}}\n" + crops,
			runtime.Uint8, &zarrspec.Affine{Sub: 0, Div: 255, Mul: -1, Add: 1}},
		{"mean std", "inputs:\n  raw: {shape: [8], dtype: float32, zarr: em/raw, array_dtype: int16, normalize: {mean: 128.5, std: 40}}\n" + crops,
			runtime.Int16, &zarrspec.Affine{Sub: 128.5, Div: 40, Mul: 1}},
		{"float in place", "inputs:\n  raw: {shape: [8], dtype: float32, zarr: em/raw, normalize: {mean: 0.5, std: 0.25}}\n" + crops,
			runtime.Float32, &zarrspec.Affine{Sub: 0.5, Div: 0.25, Mul: 1}},
		{"labels", "targets:\n  labels: {shape: [8], dtype: float32, zarr: \"labels/{class}\", array_dtype: uint8, fill: nan}\n" + crops, runtime.Uint8, nil},
		{"widening", "targets:\n  labels: {shape: [8], dtype: int16, zarr: \"labels/{class}\", array_dtype: uint8, fill: -1}\n" + crops, runtime.Uint8, nil},
		{"file key", "inputs:\n  raw: {shape: [8], dtype: uint8, file: raw.npy}\n", 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ds, err := Parse("d.yaml", []byte(head+c.keys))
			if err != nil {
				t.Fatal(err)
			}
			k := ds.Keys[0]
			if k.ArrayDType != c.array || !cmp.Equal(k.Normalize, c.m) {
				t.Errorf("array dtype %v, normalize %+v; want %v, %+v", k.ArrayDType, k.Normalize, c.array, c.m)
			}
		})
	}
}

// TestRotateAndValues: crops.augment.rotate keeps the axes in the order
// written, each turning the plane of the other two (z alone in 2D, the
// plane y, x), m meaning [-m, m], and allows a plane of two sizes; inputs
// interpolate unless they say nearest, targets take the nearest unless
// they say linear; a key's value augmentations keep their order, binarize
// last; crops.balance: classes sets Balance.
func TestRotateAndValues(t *testing.T) {
	const head = "version: 1\npackage: demo\nname: Demo\nbatch_size: 2\nclasses: [mito]\n"
	ds, err := Parse("d.yaml", []byte(head+"inputs:\n"+
		"  raw: {shape: [8, 16, 12], dtype: float32, zarr: em/raw, augment: {gamma: [0.8, 1.2], noise: {std: 0.1}, contrast: [0.5, 1.5], blur: {sigma: [0, 1]}}}\n"+
		"  mask: {shape: [8, 16, 12], dtype: uint8, zarr: em/mask, interpolation: nearest}\n"+
		"targets:\n"+
		"  labels: {shape: [4, 8, 6], dtype: float32, zarr: \"labels/{class}\", class_axis: true, binarize: 0.5, augment: {noise: {std: 0.2, mean: 1}}}\n"+
		"  dist: {shape: [4, 8, 6], dtype: float32, zarr: em/dist, class_axis: false, interpolation: linear}\n"+
		"crops:\n  per_epoch: 10\n  balance: classes\n  augment: {rotate: {y: [-10, 20], z: 180, x: 0}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []volumespec.Rotation{{Plane: [2]int{0, 2}, Min: -10, Max: 20}, {Plane: [2]int{1, 2}, Min: -180, Max: 180}, {Plane: [2]int{0, 1}, Min: 0, Max: 0}}
	if !slices.Equal(ds.Crops.Rotate, want) || !ds.Crops.Balance {
		t.Errorf("rotate %+v, balance %v; want %+v and true", ds.Crops.Rotate, ds.Crops.Balance, want)
	}
	for i, linear := range []bool{true, false, false, true} {
		if ds.Keys[i].Linear != linear {
			t.Errorf("key %s: linear %v, want %v", ds.Keys[i].Name, ds.Keys[i].Linear, linear)
		}
	}
	raw := []volumespec.ValueOp{
		{Kind: volumespec.Gamma, Range: [2]float64{0.8, 1.2}}, {Kind: volumespec.Noise, Std: 0.1},
		{Kind: volumespec.Contrast, Range: [2]float64{0.5, 1.5}}, {Kind: volumespec.Blur, Range: [2]float64{0, 1}},
	}
	labels := []volumespec.ValueOp{{Kind: volumespec.Noise, Std: 0.2, Mean: 1}, {Kind: volumespec.Binarize, Threshold: 0.5}}
	if !slices.Equal(ds.Keys[0].Values, raw) || !slices.Equal(ds.Keys[2].Values, labels) || ds.Keys[1].Values != nil {
		t.Errorf("values %+v, %+v, %+v", ds.Keys[0].Values, ds.Keys[1].Values, ds.Keys[2].Values)
	}
	flat, err := Parse("d.yaml", []byte(head+"inputs:\n  raw: {shape: [16, 12], dtype: float32, zarr: em/raw}\ncrops:\n  per_epoch: 10\n  augment: {rotate: {z: 30}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []volumespec.Rotation{{Plane: [2]int{0, 1}, Min: -30, Max: 30}}; !slices.Equal(flat.Crops.Rotate, want) {
		t.Errorf("2D rotate %+v, want %+v", flat.Crops.Rotate, want)
	}
}
