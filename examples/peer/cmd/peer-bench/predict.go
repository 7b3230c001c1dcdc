package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/loadergen/loadergen/examples/peer"
	"github.com/loadergen/loadergen/internal/fixture/emlike"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/volume"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// tiles runs the loader over the tiles of the store at dir (dataset.yaml's
// tiles: the crops' boxes, abutting, over the whole volume) twice and
// prints tiles per second: the first pass's from opening the source to
// the last batch (cold, as epoch prints crops per second), then the
// second's (warm: the chunks cached, as warm's crops).
func tiles(dir string) error {
	dir, err := filepath.Abs(dir) // the manifest lies elsewhere
	if err != nil {
		return err
	}
	manifest := filepath.Join(os.TempDir(), fmt.Sprintf("peer-tiles-%d.csv", os.Getpid()))
	if err := os.WriteFile(manifest, []byte("raw,labels\n"+dir+","+dir+"\n"), 0o644); err != nil {
		return err
	}
	defer os.Remove(manifest)
	start := time.Now()
	src, err := peer.OpenPeerTiles(manifest)
	if err != nil {
		return err
	}
	defer src.Close()
	return passes(src, start)
}

// warm runs epochs 0 and 1 of the loader over the crops of the store at
// dir and prints epoch 1's crops per second: the chunks it reads are
// cached by then.
func warm(dir string) error {
	src, err := open(dir)
	if err != nil {
		return err
	}
	defer src.Close()
	l, err := peer.NewPeerLoader(src, runtime.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer l.Close()
	var rate float64
	for e := range 2 {
		t0, n := time.Now(), 0
		for b, err := range l.Epoch(context.Background(), e) {
			if err != nil {
				return err
			}
			n += len(b.Indices)
		}
		rate = float64(n) / time.Since(t0).Seconds()
	}
	fmt.Printf("%.1f\n", rate)
	return nil
}

// passes runs two epochs of a loader over src, opened at start, and prints
// each one's samples per second, the first's from start.
func passes(src peer.PeerSource, start time.Time) error {
	l, err := peer.NewPeerLoader(src, runtime.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer l.Close()
	for e := range 2 {
		n := 0
		for b, err := range l.Epoch(context.Background(), e) {
			if err != nil {
				return err
			}
			n += len(b.Indices)
		}
		fmt.Printf("%.1f ", float64(n)/time.Since(start).Seconds())
		start = time.Now()
	}
	fmt.Println()
	return nil
}

// predict writes predictions for every tile of the raw array of the store
// at dir (tiles of 64^3, the chunks of the output) to out, with the codec
// and dtype given, as predict_peer.py writes the same ones with
// zarr-python: a tile's prediction is its raw voxels over 255 (float32)
// or above 128 (uint8). The raw is read and every tile's prediction made
// first, as a model's outputs; what is timed is the writer alone, from
// CreatePredictions to Close, with one goroutine writing tiles in order.
// It prints the predictions' MB/s, then the peak of the chunks the writer
// held partly written (its PartialPeak) and the growth of the process's
// peak resident memory over the write, in MiB.
func predict(args []string) error {
	fs := flag.NewFlagSet("predict", flag.ExitOnError)
	dtype := fs.String("dtype", "float32", "float32 or uint8")
	codec := fs.String("codec", "zstd6", "zstd6 or blosc-lz4")
	fs.Parse(args)
	if fs.NArg() != 2 {
		return fmt.Errorf("usage: peer-bench predict [-dtype float32|uint8] [-codec zstd6|blosc-lz4] DIR OUT")
	}
	dir, out := fs.Arg(0), fs.Arg(1)
	d, err := runtime.ParseDType(*dtype)
	if err != nil || d != runtime.Float32 && d != runtime.Uint8 {
		return fmt.Errorf("dtype %q (want float32 or uint8)", *dtype)
	}
	opts := volume.PredictOptions{Overwrite: true, Logger: slog.New(slog.DiscardHandler)}
	switch *codec {
	case "zstd6":
	case "blosc-lz4":
		opts.Codec = "blosc-lz4"
	default:
		return fmt.Errorf("codec %q (want zstd6 or blosc-lz4)", *codec)
	}
	raw, err := zarr.Open(filepath.Join(dir, "raw"))
	if err != nil {
		return err
	}
	shape := raw.Shape()
	voxels := make([]byte, shape[0]*shape[1]*shape[2])
	if err := raw.Read(voxels, []int{0, 0, 0}, shape); err != nil {
		return err
	}
	const side = 64
	spec := volume.Spec{Keys: []volume.Key{
		{Name: "raw", Path: "raw", DType: runtime.Uint8, Shape: []int{side, side, side}},
		{Name: "pred", Path: "pred", DType: d, Shape: []int{side, side, side}},
	}}
	src, err := volume.OpenTiles(spec, volume.TileSpec{Outputs: []int{1}}, []volume.Volume{{Roots: []string{dir, ""}}}, nil)
	if err != nil {
		return err
	}
	defer src.Close()
	preds := make([][]byte, src.Len())
	for i := range preds {
		preds[i] = make([]byte, side*side*side*d.Size())
		emlike.Predict(preds[i], d, voxels, shape, src.Crop(0, i).Origin[1], side)
	}
	before := resetPeak()
	start := time.Now()
	w, err := volume.CreatePredictions(out, src, opts)
	if err != nil {
		return err
	}
	for i, p := range preds {
		if err := w.Write([]int{i}, runtime.Tensor{DType: d, Shape: []int{1, side, side, side}, Data: p}); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	elapsed := time.Since(start)
	st := w.Stats()
	bytes := float64(shape[0] * shape[1] * shape[2] * d.Size())
	fmt.Printf("%.1f %.1f %.1f\n", bytes/1e6/elapsed.Seconds(), float64(st.PartialPeak)/(1<<20), float64(peakRSS()-before)/(1<<20))
	return nil
}

// resetPeak returns the memory the Go runtime freed to the system, resets
// the process's peak resident memory to what it holds now (Linux's
// clear_refs), and returns that: the baseline of peakRSS.
func resetPeak() int64 {
	debug.FreeOSMemory()
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	return status("VmRSS:")
}

// peakRSS returns the process's peak resident memory since the last
// resetPeak (VmHWM), in bytes; 0 where /proc does not say.
func peakRSS() int64 { return status("VmHWM:") }

// status returns the field of /proc/self/status that starts with name, a
// size in kB, in bytes; 0 where it is not there.
func status(name string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), name); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
