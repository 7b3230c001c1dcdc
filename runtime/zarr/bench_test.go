package zarr

import (
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	lgruntime "github.com/loadergen/loadergen/runtime"
)

// The benchmark volume is laid out as CellMap's published EM volumes are:
// uint8, chunks of [64, 128, 128] (1 MiB). Its content is smooth with noise,
// so that it compresses poorly, as EM does: the cold benchmarks report
// stored/raw, the bytes of the chunk files over the array's.
var (
	benchShape  = []int{128, 512, 512}
	benchChunks = []int{64, 128, 128}
)

var benchCompressors = []struct {
	name string
	c    Compressor
}{
	{"blosc-lz4", BloscLZ4()},
	{"zstd6", Zstd(6)},
	{"gzip6", gzipLevel(6)},
}

// benchWritten records that benchVolumes ran, for TestMain to clean up.
var benchWritten atomic.Bool

// benchVolumes writes the volume once per process, under every compressor.
var benchVolumes = sync.OnceValues(func() (string, error) {
	benchWritten.Store(true)
	dir, err := os.MkdirTemp("", "zarr-bench-")
	if err != nil {
		return "", err
	}
	data := make([]byte, elems(benchShape))
	rng := rand.New(rand.NewPCG(3, 4))
	for z := range benchShape[0] {
		for y := range benchShape[1] {
			row := data[(z*benchShape[1]+y)*benchShape[2]:][:benchShape[2]]
			for x := range row {
				row[x] = byte((z+y+x)/4 + rng.IntN(24))
			}
		}
	}
	for _, c := range benchCompressors {
		spec := ArraySpec{Shape: benchShape, Chunks: benchChunks, DType: lgruntime.Uint8, Compressor: c.c, Separator: "/"}
		if err := WriteArray(filepath.Join(dir, c.name), spec, data); err != nil {
			return "", err
		}
	}
	return dir, nil
})

// benchBoxes returns n box origins for boxes of side edge, uniform over the
// volume, the same for every benchmark.
func benchBoxes(edge, n int) [][]int {
	rng := rand.New(rand.NewPCG(5, uint64(edge)))
	out := make([][]int, n)
	for i := range out {
		out[i] = []int{rng.IntN(benchShape[0] - edge + 1), rng.IntN(benchShape[1] - edge + 1), rng.IntN(benchShape[2] - edge + 1)}
	}
	return out
}

// BenchmarkBoxRead reads boxes of 64³ and 128³ on all processors. Per
// compressor and size:
//
//   - cold: a cache of 0 MiB, so every read decodes every chunk it touches;
//   - decode-loop: the ceiling for cold: the same chunks of the same boxes
//     read from their files and decoded by the same codec code, nothing else;
//   - warm: every chunk decoded once beforehand, reads copy out of the cache;
//   - memcpy: the ceiling for warm: one copy of a box's worth of bytes out of
//     the whole volume held in memory, from where the box starts;
//   - strided: the box copied out of that whole volume (its rows of edge
//     bytes, a plane apart), the same memory traffic as warm without chunks.
//
// Each reports the box bytes delivered (MB/s); make bench prints the ratios.
func BenchmarkBoxRead(b *testing.B) {
	root, err := benchVolumes()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range benchCompressors {
		for _, edge := range []int{64, 128} {
			boxes := benchBoxes(edge, 64)
			shape := []int{edge, edge, edge}
			size := elems(shape)
			open := func(cacheMiB int) *Array { return openDir(b, filepath.Join(root, c.name), cacheMiB) }
			read := func(b *testing.B, a *Array) {
				b.ReportAllocs()
				copyOut(b, boxes, size, func(dst []byte, origin []int) {
					if err := a.Read(dst, origin, shape); err != nil {
						b.Fatal(err)
					}
				})
			}
			name := fmt.Sprintf("%s/%d", c.name, edge)
			b.Run(name+"/cold", func(b *testing.B) {
				read(b, open(0))
				b.ReportMetric(storedRatio(b, filepath.Join(root, c.name)), "stored/raw")
			})
			b.Run(name+"/decode-loop", func(b *testing.B) { decodeLoop(b, open(0), boxes, edge, size) })
			b.Run(name+"/warm", func(b *testing.B) {
				a := open(256)
				if err := a.Read(make([]byte, elems(benchShape)), []int{0, 0, 0}, benchShape); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				read(b, a)
				if st := a.cache.Stats(); st.Loads != 32 || st.Evictions != 0 {
					b.Fatalf("the warm cache loaded %d chunks and evicted %d", st.Loads, st.Evictions)
				}
			})
			whole := make([]byte, elems(benchShape))
			if err := open(64).Read(whole, []int{0, 0, 0}, benchShape); err != nil {
				b.Fatal(err)
			}
			var wholeStrides [3]int
			cStrides(benchShape, wholeStrides[:])
			b.Run(name+"/memcpy", func(b *testing.B) {
				copyOut(b, boxes, size, func(dst []byte, origin []int) {
					at := origin[0]*wholeStrides[0] + origin[1]*wholeStrides[1] + origin[2]
					copy(dst, whole[at:at+size])
				})
			})
			b.Run(name+"/strided", func(b *testing.B) {
				var boxStrides [3]int
				cStrides(shape, boxStrides[:])
				copyOut(b, boxes, size, func(dst []byte, origin []int) {
					at := origin[0]*wholeStrides[0] + origin[1]*wholeStrides[1] + origin[2]
					to, from := mustRegion(b, dst, 1, 0, shape, boxStrides[:]), mustRegion(b, whole, 1, at, shape, wholeStrides[:])
					copyBox(&to, &from)
				})
			})
		}
	}
}

// BenchmarkBoxReadConvert is BenchmarkBoxRead's warm read of the
// blosc-lz4 volume with its uint8 elements converted to float32 and
// normalised onto [-1, 1] as they are copied (Layout.Convert), in C order
// and with y and x swapped and x mirrored. It reports the float32 bytes
// delivered, four times warm's for the same boxes.
func BenchmarkBoxReadConvert(b *testing.B) {
	root, err := benchVolumes()
	if err != nil {
		b.Fatal(err)
	}
	conv, err := NewConversion(lgruntime.Uint8, lgruntime.Float32, &Affine{Sub: 0, Div: 255, Mul: 2, Add: -1})
	if err != nil {
		b.Fatal(err)
	}
	for _, edge := range []int{64, 128} {
		boxes := benchBoxes(edge, 64)
		shape := []int{edge, edge, edge}
		a := openDir(b, filepath.Join(root, benchCompressors[0].name), 256)
		if err := a.Read(make([]byte, elems(benchShape)), []int{0, 0, 0}, benchShape); err != nil {
			b.Fatal(err)
		}
		plain := Layout{Strides: CStrides(shape), Convert: conv}
		turned := Layout{Start: (edge - 1) * edge, Strides: []int{edge * edge, 1, -edge}, Convert: conv}
		for _, l := range []struct {
			name string
			l    Layout
		}{{"plain", plain}, {"transposed-mirrored", turned}} {
			b.Run(fmt.Sprintf("%d/warm-float32/%s", edge, l.name), func(b *testing.B) {
				b.ReportAllocs()
				copyOut(b, boxes, 4*elems(shape), func(dst []byte, origin []int) {
					if err := a.ReadLayout(bg, dst, origin, shape, l.l); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}

// copyOut runs copy for each box in turn, on all processors.
func copyOut(b *testing.B, boxes [][]int, size int, copy func(dst []byte, origin []int)) {
	b.SetBytes(int64(size))
	var next sync.Mutex
	i := 0
	b.RunParallel(func(pb *testing.PB) {
		dst := make([]byte, size)
		for pb.Next() {
			next.Lock()
			origin := boxes[i%len(boxes)]
			i++
			next.Unlock()
			copy(dst, origin)
		}
	})
}

// decodeLoop reads and decodes, on all processors, the chunks each box
// touches, with the chain and buffers the array itself uses, and copies
// nothing out: the work of a cold read with the box assembly taken away.
func decodeLoop(b *testing.B, a *Array, boxes [][]int, edge, size int) {
	b.SetBytes(int64(size))
	b.ReportAllocs()
	var next sync.Mutex
	i := 0
	b.RunParallel(func(pb *testing.PB) {
		out := make([]byte, a.unitBytes)
		var raw []byte
		d := new(decoder)
		for pb.Next() {
			next.Lock()
			origin := boxes[i%len(boxes)]
			i++
			next.Unlock()
			for z := origin[0] / 64; z <= (origin[0]+edge-1)/64; z++ {
				for y := origin[1] / 128; y <= (origin[1]+edge-1)/128; y++ {
					for x := origin[2] / 128; x <= (origin[2]+edge-1)/128; x++ {
						var err error
						raw, err = readWhole(filepath.Join(a.dir, fmt.Sprintf("%d/%d/%d", z, y, x)), raw)
						if err == nil {
							err = a.chain.decode(d, out, raw, a.unit, 1)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				}
			}
		}
	})
}

// TestMain removes the benchmark volumes, when a benchmark wrote them, and
// fails when decode memory is still held once every test is done: a load
// or an entry that never gave its charge back.
func TestMain(m *testing.M) {
	code := m.Run()
	decoding.mu.Lock()
	if held := decoding.used; held != 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "decode memory still held after the tests: %d bytes\n", held)
		code = 1
	}
	decoding.mu.Unlock()
	if benchWritten.Load() {
		if dir, err := benchVolumes(); err == nil {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

// readWhole reads file into buf (grown as needed), as the decode loop's
// plain read of a chunk file.
func readWhole(file string, buf []byte) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return buf, err
	}
	return readAt(f, buf, 0, st.Size())
}

// storedRatio is the bytes of the chunk files of the benchmark array at dir
// over the bytes of its data.
func storedRatio(b *testing.B, dir string) float64 {
	var stored int64
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || strings.HasPrefix(e.Name(), ".z") {
			return err
		}
		info, err := e.Info()
		if err == nil {
			stored += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return float64(stored) / float64(elems(benchShape))
}

// BenchmarkBoxReadSampled is BenchmarkBoxReadConvert's plain warm read of
// 64³ boxes of the blosc-lz4 volume into float32 (plain, ReadLayout),
// against ReadSampled of the same boxes: on their voxels (on-voxels, the
// sampler's floor), and turned about their centres by a different angle
// each (z in [-180, 180], y and x in [-15, 15] degrees), interpolated
// (turned-linear) and nearest (turned-nearest). It reports the float32
// bytes delivered; turned over plain is what turning costs a warm read.
func BenchmarkBoxReadSampled(b *testing.B) {
	root, err := benchVolumes()
	if err != nil {
		b.Fatal(err)
	}
	conv, err := NewConversion(lgruntime.Uint8, lgruntime.Float32, &Affine{Div: 255, Mul: 1})
	if err != nil {
		b.Fatal(err)
	}
	const edge = 64
	boxes := benchBoxes(edge, 64)
	shape := []int{edge, edge, edge}
	a := openDir(b, filepath.Join(root, benchCompressors[0].name), 256)
	if err := a.Read(make([]byte, elems(benchShape)), []int{0, 0, 0}, benchShape); err != nil {
		b.Fatal(err)
	}
	l := Layout{Strides: CStrides(shape), Convert: conv}
	rng := rand.New(rand.NewPCG(9, 9))
	deg := math.Pi / 180
	turns := make([][3][3]float64, len(boxes))
	for i := range turns {
		turns[i] = turn((rng.Float64()*2-1)*180*deg, (rng.Float64()*2-1)*15*deg, (rng.Float64()*2-1)*15*deg)
	}
	sampled := func(linear, rotate bool) func(dst []byte, origin []int) {
		return func(dst []byte, origin []int) {
			r := [3][3]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
			if rotate {
				r = turns[(origin[0]+origin[1]+origin[2])%len(turns)]
			}
			if err := a.ReadSampled(bg, dst, shape, turned(origin, shape, r, linear), l); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name string
		read func(dst []byte, origin []int)
	}{
		{"plain", func(dst []byte, origin []int) {
			if err := a.ReadLayout(bg, dst, origin, shape, l); err != nil {
				b.Fatal(err)
			}
		}},
		{"on-voxels", sampled(true, false)},
		{"turned-linear", sampled(true, true)},
		{"turned-nearest", sampled(false, true)},
	} {
		b.Run("64/warm-float32/"+c.name, func(b *testing.B) {
			copyOut(b, boxes, 4*elems(shape), c.read)
		})
	}
}
