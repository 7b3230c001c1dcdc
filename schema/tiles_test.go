package schema

import (
	"reflect"
	"testing"

	"github.com/loadergen/loadergen/runtime/volume/volumespec"
)

// TestTiles parses tiles sections, alone and beside crops.
func TestTiles(t *testing.T) {
	const keys = `version: 1
package: demo
name: Demo
batch_size: 2
inputs:
  raw: {shape: [16, 16, 16], dtype: uint8, zarr: em/raw, scale: [8, 8, 8]}
targets:
  labels: {shape: [4, 4, 4], dtype: float32, zarr: "labels/{class}", scale: [16, 16, 16]}
  fine: {shape: [8, 8, 8], dtype: uint8, zarr: "fine/{class}", scale: [8, 8, 8]}
classes: [mito]
`
	for _, tt := range []struct {
		name, text string
		crops      bool
		want       Tiles
	}{
		{"defaults", keys + "tiles: {}\n", false, Tiles{Outputs: []int{1, 2}}},
		{"all", keys + "tiles:\n  bounds: {x: [0, 512], z: [-8, 1e3], y: [1.5, 2]}\n  step: [2, 4, 1]\n  blend: last\n", false,
			Tiles{Outputs: []int{1, 2}, Bounds: [][2]float64{{-8, 1000}, {1.5, 2}, {0, 512}}, Step: []int{2, 4, 1}, Blend: volumespec.BlendLast}},
		{"beside crops", keys + "crops: {per_epoch: 3}\ntiles: {step: [4, 4, 2]}\n", true, Tiles{Outputs: []int{1, 2}, Step: []int{4, 4, 2}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := Parse("tiles.yaml", []byte(tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if ds.Tiles == nil || (ds.Crops != nil) != tt.crops {
				t.Fatalf("tiles %+v, crops %+v", ds.Tiles, ds.Crops)
			}
			if !reflect.DeepEqual(*ds.Tiles, tt.want) {
				t.Fatalf("tiles %+v, want %+v", *ds.Tiles, tt.want)
			}
		})
	}
}
