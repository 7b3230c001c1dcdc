// Command peer-bench is the Go side of make peer (examples/peer/run.sh):
//
//	peer-bench write -compressor zstd6|blosc-lz4 [-shape Z,Y,X] DIR   write the store
//	peer-bench crops DIR JSON BIN K                     the epoch's crops in the loader's order, and the bytes of the first K
//	peer-bench epoch [-crops N] [-costs] DIR            one cold epoch of the loader (its first N crops): crops/s;
//	                                                    -costs: then the chunk cache's measured costs, on stderr
//	peer-bench boxes DIR [BUFFERS]                      the same boxes read cold, unaugmented: crops/s
//	peer-bench whole ARRAY                              the whole array decoded on one goroutine: MB/s
//	peer-bench locality [-cache MiB] [-windows W] DIR   chunk-cache hit rates with and without crop locality
//	peer-bench rows DIR EPOCHS                          golden/rows' loader over DIR's .npy files: the best epoch's rows/s
//	peer-bench turned-crops DIR JSON BIN K              the rotated case's crops (examples/peer/turned), and the bytes of the first K
//	peer-bench turned-epoch DIR turned|flat|augmented   one cold epoch of one of the rotated case's loaders: crops/s
//	peer-bench warm DIR                                 the loader's second epoch of crops (cached chunks): crops/s
//	peer-bench tiles DIR                                two passes of the loader over the tiles: cold and warm tiles/s
//	peer-bench predict [-dtype D] [-codec C] DIR OUT    predictions of every tile written: MB/s, partial and RSS peaks in MiB
//
// boxes reads each box into one buffer per goroutine, or into BUFFERS
// buffers shared out among the goroutines, each using its share in turn
// (72, with batch 8 and prefetch 2, as many box-sized
// places as the loader's staging ring has), which shows what writing into
// memory that is no longer cached costs.
//
// Each timing runs in a process of its own, so every cache starts empty.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/loadergen/loadergen/examples/peer"
	"github.com/loadergen/loadergen/golden/rows"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/loaderimpl"
	"github.com/loadergen/loadergen/runtime/zarr"

	// The stores it opens with zarr directly, as the loaders do, may be
	// s3:// or https:// URLs (make remote-bench).
	_ "github.com/loadergen/loadergen/runtime/storage/https"
	_ "github.com/loadergen/loadergen/runtime/storage/s3"
)

// shape is the volume's: 64 MiB of uint8 per array, 128 chunks of 1 MiB.
var (
	shape  = []int{256, 512, 512}
	chunks = []int{64, 128, 128}
)

func main() {
	// The volume source's start-up line would mix with the figures on
	// stdout; the log package's default logger goes where slog's does, so
	// failures are told through a logger of their own.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	stderr := log.New(os.Stderr, "", 0)
	if len(os.Args) < 3 {
		stderr.Fatal("usage: peer-bench write|crops|epoch|boxes|whole|locality|rows|turned-crops|turned-epoch|warm|tiles|predict ...")
	}
	var err error
	switch os.Args[1] {
	case "write":
		fs := flag.NewFlagSet("write", flag.ExitOnError)
		comp := fs.String("compressor", "zstd6", "zstd6 or blosc-lz4")
		shapeFlag := fs.String("shape", "", "the volume's shape, z,y,x (default 256,512,512; chunks [64, 128, 128])")
		fs.Parse(os.Args[2:])
		if *shapeFlag != "" {
			if shape, err = parseShape(*shapeFlag); err != nil {
				break
			}
		}
		err = write(fs.Arg(0), *comp)
	case "crops", "turned-crops":
		if len(os.Args) != 6 {
			stderr.Fatalf("usage: peer-bench %s DIR JSON BIN K", os.Args[1])
		}
		k, kerr := strconv.Atoi(os.Args[5])
		if kerr != nil || k < 0 {
			stderr.Fatalf("peer-bench %s: K %q is not a count of crops", os.Args[1], os.Args[5])
		}
		if os.Args[1] == "crops" {
			err = crops(os.Args[2], os.Args[3], os.Args[4], k)
		} else {
			err = turnedCrops(os.Args[2], os.Args[3], os.Args[4], k)
		}
	case "epoch":
		fs := flag.NewFlagSet("epoch", flag.ExitOnError)
		n := fs.Int("crops", 0, "stop after the epoch's first N crops (whole batches); 0: the whole epoch")
		costs := fs.Bool("costs", false, "print the chunk cache's measured costs (decoding again, new memory) on stderr")
		fs.Parse(os.Args[2:])
		if fs.NArg() != 1 {
			stderr.Fatal("usage: peer-bench epoch [-crops N] [-costs] DIR")
		}
		err = epoch(fs.Arg(0), *n, *costs)
	case "whole":
		err = whole(os.Args[2])
	case "rows":
		if len(os.Args) != 4 {
			stderr.Fatal("usage: peer-bench rows DIR EPOCHS")
		}
		epochs, aerr := strconv.Atoi(os.Args[3])
		if aerr != nil {
			stderr.Fatalf("peer-bench rows: EPOCHS %q: %v", os.Args[3], aerr)
		}
		err = tableRows(os.Args[2], epochs)
	case "locality":
		err = locality(os.Args[2:])
	case "turned-epoch":
		if len(os.Args) != 4 {
			stderr.Fatal("usage: peer-bench turned-epoch DIR turned|flat|augmented")
		}
		err = turnedEpoch(os.Args[2], os.Args[3])
	case "tiles":
		err = tiles(os.Args[2])
	case "warm":
		err = warm(os.Args[2])
	case "predict":
		err = predict(os.Args[2:])
	case "boxes":
		buffers := goruntime.GOMAXPROCS(0)
		if len(os.Args) > 3 {
			n, nerr := strconv.Atoi(os.Args[3])
			if nerr != nil || n < buffers {
				stderr.Fatalf("peer-bench boxes: BUFFERS %q is not a count of at least %d (one a goroutine)", os.Args[3], buffers)
			}
			buffers = n
		}
		err = boxes(os.Args[2], buffers)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		stderr.Fatal("peer-bench: ", err)
	}
}

// write writes raw (sums of triangle waves with noise, mostly saturated:
// see triangle) and the class arrays a and b (bright and dim voxels) under
// dir.
func write(dir, comp string) error {
	var c zarr.Compressor
	switch comp {
	case "zstd6":
		c = zarr.Zstd(6)
	case "blosc-lz4":
		c = zarr.BloscLZ4()
	default:
		return fmt.Errorf("compressor %q (want zstd6 or blosc-lz4)", comp)
	}
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s exists", dir)
	}
	n := shape[0] * shape[1] * shape[2]
	raw, a, b := make([]byte, n), make([]byte, n), make([]byte, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for z := range shape[0] {
		for y := range shape[1] {
			for x := range shape[2] {
				i := (z*shape[1]+y)*shape[2] + x
				// Ramps of +-100 in all (weights 6:5:3) and noise of +-20:
				// values from about 8 to 248, as EM's, rarely clipped.
				v := 128 + (60*triangle(z, 37)+50*triangle(y, 53)+30*triangle(x, 29))/70 + rng.IntN(40) - 20
				raw[i] = byte(max(0, min(255, v)))
				a[i] = bool2(raw[i] > 200)
				b[i] = bool2(raw[i] < 60)
			}
		}
	}
	spec := func() zarr.ArraySpec {
		return zarr.ArraySpec{Shape: shape, Chunks: chunks, DType: runtime.Uint8, Compressor: c, Separator: "/"}
	}
	for path, data := range map[string][]byte{"raw": raw, "labels/a": a, "labels/b": b} {
		if err := zarr.WriteArray(filepath.Join(dir, path), spec(), data); err != nil {
			return err
		}
	}
	return nil
}

// triangle is a triangle wave of the given period in [-50, 50].
func triangle(i, period int) int {
	p := i % period
	if p < period/2 {
		return 2*p*100/period - 50
	}
	return 50 - 2*(p-period/2)*100/period
}

func bool2(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func open(dir string) (*peer.PeerVolumes, error) {
	return peer.OpenPeerVolumes([]peer.PeerVolume{{Raw: dir, Labels: dir}})
}

// plan returns the generated loader's plan over src: dataset.yaml's seed
// and keys' shapes, which the loader reads crops with.
func plan(src *peer.PeerVolumes) (runtime.Plan, error) {
	l, err := peer.NewPeerLoader(src, runtime.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return runtime.Plan{}, err
	}
	defer l.Close()
	return l.Plan(), nil
}

// crops writes the epoch's crops (as runtime.Crop JSON, by index) and the
// bytes the loader's source reads for the first k of them, seeded as the
// loader seeds them.
func crops(dir, jsonFile, binFile string, k int) error {
	src, err := open(dir)
	if err != nil {
		return err
	}
	p, err := plan(src)
	if err != nil {
		return err
	}
	order, err := epochOrder(src)
	if err != nil {
		return err
	}
	if err := writeCrops(jsonFile, order, src.Crop); err != nil {
		return err
	}
	var out []byte
	for _, i := range order[:min(k, len(order))] {
		s := peer.PeerSample{Index: i, Epoch: 0, Raw: make([]uint8, p.Keys[0].SampleElems()), Labels: make([]uint8, p.Keys[1].SampleElems())}
		var pcg rand.PCG
		loaderimpl.SeedSample(&pcg, loaderimpl.EpochSeed(p.Loader.Seed, 0), i)
		s.Rand = rand.New(&pcg)
		if err := src.Read(&s); err != nil {
			return err
		}
		out = append(append(out, s.Raw...), s.Labels...)
	}
	return os.WriteFile(binFile, out, 0o644)
}

// writeCrops writes the crops of epoch 0's samples order, as crop gives
// them, to jsonFile as runtime.Crop JSON, in that order.
func writeCrops(jsonFile string, order []int, crop func(epoch, index int) runtime.Crop) error {
	list := make([]runtime.Crop, len(order))
	for k, i := range order {
		list[k] = crop(0, i)
	}
	js, err := json.Marshal(list)
	if err != nil {
		return err
	}
	return os.WriteFile(jsonFile, js, 0o644)
}

// epoch runs epoch 0 of a loader with GOMAXPROCS workers and prints its
// crops per second, from opening the source to the last batch; with costs,
// the chunk cache's measured costs per MiB after it, on stderr.
func epoch(dir string, crops int, costs bool) error {
	n, d, err := runEpoch(dir, runtime.Options{}, crops)
	if err != nil {
		return err
	}
	fmt.Printf("%.1f\n", float64(n)/d.Seconds())
	if costs {
		cache, err := zarr.SharedCache()
		if err != nil {
			return err
		}
		st := cache.Stats()
		fmt.Fprintf(os.Stderr, "chunk cache: decoding costs %v a MiB, new memory %v a MiB; %d misses on evicted chunks, %d grew it, to %d MiB\n",
			st.DecodeCost.Round(time.Microsecond), st.FreshCost.Round(time.Microsecond), st.Ghosts, st.Grows, st.Target>>20)
	}
	return nil
}

// epochOrder returns the dataset indices of epoch 0 in the order the
// loader over src yields them (its shuffle, then its crop locality).
func epochOrder(src *peer.PeerVolumes) ([]int, error) {
	l, err := peer.NewPeerLoader(src, runtime.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	var order []int
	for b, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			return nil, err
		}
		order = append(order, b.Indices...)
	}
	return order, nil
}

// tableRows runs epochs of golden/rows' loader over the .npy files in dir
// (make peer-python writes them) and prints the best epoch's rows/s: the
// Go side of the tabular case.
func tableRows(dir string, epochs int) error {
	src, err := rows.OpenRowsFiles(dir)
	if err != nil {
		return err
	}
	defer src.Close()
	l, err := rows.NewRowsLoader(src, runtime.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer l.Close()
	best := 0.0
	for e := range epochs {
		t0, n := time.Now(), 0
		for b, err := range l.Epoch(context.Background(), e) {
			if err != nil {
				return err
			}
			n += len(b.Indices)
		}
		best = max(best, float64(n)/time.Since(t0).Seconds())
	}
	fmt.Printf("%.0f\n", best)
	return nil
}

// runEpoch runs epoch 0 of a loader over the store at dir with o (its
// logger discarded), or its batches up to crops (0: all), and returns the
// crops it yielded and the time from opening the source to the last batch.
func runEpoch(dir string, o runtime.Options, crops int) (int, time.Duration, error) {
	start := time.Now()
	src, err := open(dir)
	if err != nil {
		return 0, 0, err
	}
	o.Logger = slog.New(slog.DiscardHandler)
	l, err := peer.NewPeerLoader(src, o)
	if err != nil {
		return 0, 0, err
	}
	defer l.Close()
	n := 0
	for b, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			return 0, 0, err
		}
		if n += len(b.Indices); crops > 0 && n >= crops {
			break
		}
	}
	return n, time.Since(start), nil
}

// boxes reads the boxes of the epoch's crops, unaugmented, straight from
// fresh arrays on GOMAXPROCS goroutines, each into its share of buffers
// in turn, and prints crops per second: the box-read ceiling of the
// loader's epoch.
func boxes(dir string, buffers int) error {
	src, err := open(dir) // for the crops and the plan only: its arrays are not used
	if err != nil {
		return err
	}
	p, err := plan(src)
	if err != nil {
		return err
	}
	box := p.Keys[0].Shape // raw's, and each class's of labels
	list := make([]runtime.Crop, src.Len())
	for i := range list {
		list[i] = src.Crop(0, i)
	}
	start := time.Now()
	cache, err := zarr.SharedCache() // LOADERGEN_ZARR_CACHE_MB, as the loader's
	if err != nil {
		return err
	}
	store, err := zarr.OpenStore(dir, cache)
	if err != nil {
		return err
	}
	var arrays []*zarr.Array
	for _, p := range []string{"raw", "labels/a", "labels/b"} {
		a, err := store.Array(p)
		if err != nil {
			return err
		}
		arrays = append(arrays, a)
	}
	g := goruntime.GOMAXPROCS(0)
	errs := make([]error, g)
	var wg sync.WaitGroup
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bufs := make([][]byte, buffers/g)
			for b := range bufs {
				bufs[b] = make([]byte, p.Keys[0].SampleBytes)
			}
			n := 0
			for i := w; i < len(list) && errs[w] == nil; i += g {
				for k, a := range arrays {
					buf := bufs[n%len(bufs)]
					n++
					if errs[w] = a.Read(buf, list[i].Origin[min(k, 1)], box); errs[w] != nil {
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Printf("%.1f\n", float64(len(list))/time.Since(start).Seconds())
	return nil
}

// whole reads the array at dir whole into one buffer on one goroutine, as
// zarr-python's a[:] does with numcodecs on one thread (codecs.sh), and
// prints the decoded MB/s, from opening the array to the last chunk. Like
// zarr-python it keeps no chunk once copied (a cache of 0 MiB, whose
// buffers are decoded into again), and it allocates the array as numpy
// does (hugeBytes), so that what is timed is reading, decoding and
// copying, not filling a cache or faulting in 4 KiB pages.
func whole(dir string) error {
	goruntime.GOMAXPROCS(1)
	start := time.Now()
	store, err := zarr.OpenStore(dir, zarr.NewCache(0))
	if err != nil {
		return err
	}
	a, err := store.Array("")
	if err != nil {
		return err
	}
	shape := a.Shape()
	n := a.DType().Size()
	for _, d := range shape {
		n *= d
	}
	if err := a.Read(hugeBytes(n), make([]int, len(shape)), shape); err != nil {
		return err
	}
	fmt.Printf("%.1f\n", float64(n)/1e6/time.Since(start).Seconds())
	return nil
}

// hugeBytes returns n bytes that the kernel backs with transparent huge
// pages where it can, as numpy asks for arrays of 4 MiB or more
// (madvise(MADV_HUGEPAGE) on 2 MiB-aligned memory); a kernel that refuses
// leaves ordinary pages.
func hugeBytes(n int) []byte {
	const huge = 2 << 20
	b := make([]byte, n+huge)
	off := int(uintptr(huge)-uintptr(unsafe.Pointer(unsafe.SliceData(b)))%huge) % huge
	b = b[off : off+n : off+n]
	_ = syscall.Madvise(b[:n/huge*huge], syscall.MADV_HUGEPAGE)
	return b
}
