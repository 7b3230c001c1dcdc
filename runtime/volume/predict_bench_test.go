package volume

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// BenchmarkPredictionsWrite times the prediction writer as peer-bench
// predict runs it (make predict-bench), on a smaller volume: one goroutine
// writing the predictions of every tile of 64^3, in order, into chunks of
// the tile grid, from CreatePredictions to Close, for each dtype and
// codec. The predictions (a tile's raw over 255 as float32, or raw > 128
// as uint8) are made before the timer starts, so that what is timed is
// the writer alone. B/s are of predictions written; cpu-ms/op is the
// process's CPU time a write (all goroutines, user and system).
func BenchmarkPredictionsWrite(b *testing.B) {
	const side = 64
	shape := []int{128, 256, 256}
	root := filepath.Join(b.TempDir(), "em.zarr")
	raw := emLikeRaw(shape, 1)
	spec := zarr.ArraySpec{Shape: shape, Chunks: []int{side, side, side}, DType: runtime.Uint8, Compressor: zarr.Zstd(1)}
	if err := zarr.WriteArray(filepath.Join(root, "raw"), spec, raw); err != nil {
		b.Fatal(err)
	}
	for _, d := range []runtime.DType{runtime.Float32, runtime.Uint8} {
		keys := Spec{Keys: []Key{
			{Name: "raw", Path: "raw", DType: runtime.Uint8, Shape: []int{side, side, side}},
			{Name: "pred", Path: "pred", DType: d, Shape: []int{side, side, side}},
		}}
		src, err := OpenTiles(keys, TileSpec{Outputs: []int{1}}, []Volume{{Roots: []string{root, ""}}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer src.Close()
		tiles := make([][]byte, src.Len())
		for i := range tiles {
			tiles[i] = predictTile(raw, shape, src.Crop(0, i).Origin[1], side, d)
		}
		for _, codec := range []string{"zstd", "blosc-lz4"} {
			b.Run(fmt.Sprintf("%v/%s", d, codec), func(b *testing.B) {
				b.SetBytes(int64(len(raw) * d.Size()))
				out := filepath.Join(b.TempDir(), "pred.zarr")
				cpu := cpuTime()
				for b.Loop() {
					w, err := CreatePredictions(out, src, PredictOptions{Codec: codec, Overwrite: true, Logger: slog.New(slog.DiscardHandler)})
					if err != nil {
						b.Fatal(err)
					}
					for i, tile := range tiles {
						if err := w.Write([]int{i}, runtime.Tensor{DType: d, Shape: []int{1, side, side, side}, Data: tile}); err != nil {
							b.Fatal(err)
						}
					}
					if err := w.Close(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// emLikeRaw returns a uint8 volume of shape with some of EM's texture:
// smooth blobs under voxel noise.
func emLikeRaw(shape []int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0))
	out := make([]byte, shape[0]*shape[1]*shape[2])
	i := 0
	for z := range shape[0] {
		for y := range shape[1] {
			for x := range shape[2] {
				v := 128 + 50*math.Sin(float64(x)/7)*math.Cos(float64(y)/9)*math.Sin(float64(z)/5) + r.NormFloat64()*15
				out[i] = uint8(min(max(v, 0), 255))
				i++
			}
		}
	}
	return out
}

// predictTile returns the stand-in prediction of the tile of side^3 at
// origin o of raw (shape): raw/255 as float32, or raw > 128 as uint8.
func predictTile(raw []byte, shape, o []int, side int, d runtime.DType) []byte {
	tile := make([]byte, side*side*side*d.Size())
	f := runtime.View[float32](tile)
	for z := range side {
		for y := range side {
			row := raw[((o[0]+z)*shape[1]+o[1]+y)*shape[2]+o[2]:][:side]
			for x, v := range row {
				at := (z*side+y)*side + x
				if d == runtime.Float32 {
					f[at] = float32(float64(v) / 255)
				} else if v > 128 {
					tile[at] = 1
				}
			}
		}
	}
	return tile
}
