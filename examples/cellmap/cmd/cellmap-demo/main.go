// Command cellmap-demo runs the generated CellMap loader over a synthetic
// CellMap-like zarr store (written on first use): random crops of an EM
// volume and its labelled crops, augmented alike, and reports throughput.
// With -predict it runs the predict step instead: a stand-in model
// (cellmap.Threshold) over the tiles of the whole volume, its predictions
// written as zarr beside the data.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/loadergen/loadergen/examples/cellmap"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/volume"
	"github.com/loadergen/loadergen/runtime/zarr"
)

func main() {
	data := flag.String("data", ".demo-data/cellmap", "directory of the zarr store and its manifest, "+cellmap.Manifest+" (written if absent)")
	epochs := flag.Int("epochs", 3, "epochs to run")
	workers := flag.Int("workers", 0, "loader workers (0: GOMAXPROCS)")
	trace := flag.String("trace", "", "write a Chrome trace-event JSON here (open it in Perfetto)")
	predict := flag.String("predict", "", "instead of training epochs, predict over the whole volume and write the predictions to this zarr store (replaced)")
	flag.Parse()
	log.SetFlags(0)
	// A progress bar only where someone watches: in a log it would be a
	// stream of carriage-return frames.
	bar := term.IsTerminal(int(os.Stderr.Fd()))
	var err error
	if *predict != "" {
		err = predictStep(*data, *predict, *workers, os.Stdout, os.Stderr)
	} else {
		err = run(*data, *epochs, *workers, *trace, os.Stdout, os.Stderr, bar)
	}
	if err != nil {
		log.Fatal("cellmap-demo: ", err)
	}
}

// predictStep predicts over the tiles of the dataset under root (written
// if absent) into out, writing a line of figures to stdout and the loader's
// log to stderr.
func predictStep(root, out string, workers int, stdout, stderr io.Writer) error {
	if _, err := cellmap.EnsureSynthetic(root, 1); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	slog.SetDefault(logger) // the tile source logs what it opened there
	opts := runtime.Options{Workers: workers, Logger: logger}
	if runtime.CUDAUsable() != nil {
		opts.Device = "cpu"
	}
	rep, err := cellmap.Predict(context.Background(), root, out, opts, volume.PredictOptions{Overwrite: true, Logger: logger})
	if err != nil {
		return err
	}
	w := rep.Writer
	fmt.Fprintf(stdout, "predicted %d tiles in %v (%.0f tiles/s); wrote %d chunks to %s; partial chunks peaked at %.1f MiB (bound %.0f MiB)\n",
		rep.Tiles, rep.Elapsed.Round(time.Millisecond), float64(rep.Tiles)/rep.Elapsed.Seconds(), w.Chunks, out,
		float64(w.PartialPeak)/(1<<20), float64(w.PartialBound)/(1<<20))
	return nil
}

// run loads epochs of the dataset under root, writing a line per epoch to
// stdout and the loader's log to stderr, with a progress bar there when bar
// is set.
func run(root string, epochs, workers int, tracePath string, stdout, stderr io.Writer, bar bool) (err error) {
	t0 := time.Now()
	wrote, err := cellmap.EnsureSynthetic(root, 1)
	if err != nil {
		return err
	}
	if wrote {
		fmt.Fprintf(stdout, "wrote a synthetic CellMap-like zarr store to %s in %v\n", root, time.Since(t0).Round(time.Millisecond))
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	slog.SetDefault(logger) // the volume source logs what it opened there
	vols, err := cellmap.LoadCellMapVolumes(filepath.Join(root, cellmap.Manifest))
	if err != nil {
		return err
	}
	src, err := cellmap.OpenCellMapVolumes(vols)
	if err != nil {
		return err
	}
	defer src.Close()
	opts := runtime.Options{Workers: workers, Logger: logger}
	if why := runtime.CUDAUsable(); why != nil {
		// The schema plans for CUDA; where it cannot run, the demo picks the
		// CPU backend on purpose rather than as a fallback to warn about.
		opts.Device = "cpu"
		fmt.Fprintf(stdout, "backend: cpu (%v)\n", why)
	} else {
		fmt.Fprintln(stdout, "backend: cuda")
	}
	if tracePath != "" {
		f, err := os.Create(tracePath)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				fmt.Fprintf(stdout, "trace written to %s: open it at https://ui.perfetto.dev\n", tracePath)
			}
		}()
		opts.Trace = f
	}
	l, err := cellmap.NewCellMapLoader(src, opts)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := l.Close(); err == nil {
			err = cerr
		}
	}()

	cache, err := zarr.SharedCache() // the volume source's
	if err != nil {
		return err
	}
	ctx := context.Background()
	var last zarr.CacheStats // before the last epoch
	for epoch := range epochs {
		before, cached := l.Stats(), cache.Stats()
		last = cached
		progress := io.Discard
		if bar {
			progress = stderr
		}
		pb := progressbar.NewOptions(l.Len(),
			progressbar.OptionSetWriter(progress),
			progressbar.OptionSetDescription(fmt.Sprintf("epoch %d/%d", epoch+1, epochs)),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionClearOnFinish(),
		)
		start := time.Now()
		for b, err := range l.Epoch(ctx, epoch) {
			if err != nil {
				return err
			}
			// A stand-in for a training step: look at the centre of a label.
			_ = b.LabelsData()[len(b.LabelsData())/2]
			pb.Add(1)
		}
		elapsed := time.Since(start)
		pb.Finish()
		fmt.Fprintf(stdout, "epoch %d: %v; %s\n", epoch+1, l.Stats().Since(before, elapsed), cacheNote(cached, cache.Stats()))
	}
	fmt.Fprintln(stdout, cacheSummary(cache, last))
	return nil
}

// cacheNote says where an epoch's chunks came from, from the chunk cache's
// counts before and after it: "chunk cache: 45 decoded, 1670 hits", with
// "(all from memory)" when nothing was decoded.
func cacheNote(before, after zarr.CacheStats) string {
	decoded := after.Loads + after.Extends - before.Loads - before.Extends
	s := fmt.Sprintf("chunk cache: %d decoded, %d hits", decoded, after.Hits-before.Hits)
	if decoded == 0 {
		s += " (all from memory)"
	}
	return s
}

// cacheSummary labels the epochs' figures: the demo's store is small
// enough for the chunk cache to hold it whole once it has grown, so the
// last epoch, which loads no chunk (last: the counts before it), cuts
// crops from decoded chunks in memory, its figures including no disk read
// and no decompression but for windows of chunks held in part.
func cacheSummary(cache *zarr.Cache, last zarr.CacheStats) string {
	st := cache.Stats()
	if loads := st.Loads - last.Loads; loads > 0 {
		return fmt.Sprintf("chunk cache %s: the last epoch loaded %d chunks, so its figures include disk reads and decompression", cache.Describe(), loads)
	}
	extended := ""
	if n := st.Extends - last.Extends; n > 0 {
		extended = fmt.Sprintf(", but for %d chunks held in part whose decoded windows it extended", n)
	}
	return fmt.Sprintf("chunk cache %s: it grew to hold every chunk read (%.1f MiB decoded) and the last epoch loaded none, so its figures are of a store in memory, without disk reads or decompression%s; a store larger than the cache reads and decodes chunks in every epoch",
		cache.Describe(), float64(st.Bytes)/(1<<20), extended)
}
