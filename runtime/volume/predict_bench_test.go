package volume

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/emlike"
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
	raw := emlike.Raw(shape, 1)
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
			tiles[i] = make([]byte, side*side*side*d.Size())
			emlike.Predict(tiles[i], d, raw, shape, src.Crop(0, i).Origin[1], side)
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
