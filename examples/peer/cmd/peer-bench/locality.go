package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// locality measures crop locality (crops.locality): for each window, runs
// cold epochs of the loader over the store at dir (written by write, or
// by -write at another shape), each in a process of its own with a chunk
// cache of -cache MiB, the windows in turn -runs times, and prints the
// cache's hit rate (hits over hits and loads), its loads and the crops
// per second, medians, with their ratios to the runs without grouping:
//
//	peer-bench locality [-cache MiB] [-windows off,8,32,64] [-runs 3] [-write 256,1024,1024] DIR
//
// -one WINDOW runs one cold epoch and prints "hits loads crops seconds"
// (what the parent runs in each process).
func locality(args []string) error {
	fs := flag.NewFlagSet("locality", flag.ExitOnError)
	cache := fs.Int("cache", 0, "chunk cache in MiB (0: 4% of the store's decoded bytes, at least 1)")
	windows := fs.String("windows", "off,8,32,64", "locality windows in batches, comma-separated; off: no grouping")
	runs := fs.Int("runs", 3, "cold epochs (processes) per window; the median is kept")
	one := fs.String("one", "", "run one cold epoch with this window and print hits, loads, crops and seconds")
	shapeFlag := fs.String("write", "", "write a zstd-6 store of this shape (z,y,x; chunks [64, 128, 128]) at DIR first, unless DIR exists")
	fs.Parse(args)
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: peer-bench locality [-cache MiB] [-windows off,8,32,64] [-runs 3] [-write Z,Y,X] DIR")
	}
	dir := fs.Arg(0)
	if *one != "" {
		return localityRun(dir, *one, *cache)
	}
	if *shapeFlag != "" {
		if _, err := os.Stat(dir); err != nil {
			if shape, err = parseShape(*shapeFlag); err != nil {
				return err
			}
			if err := write(dir, "zstd6"); err != nil {
				return err
			}
		}
	}
	if *cache == 0 {
		a, err := zarr.Open(dir + "/raw")
		if err != nil {
			return err
		}
		n := 3 // raw and the two classes
		for _, d := range a.Shape() {
			n *= d
		}
		*cache = max(1, n*4/100>>20)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ws := strings.Split(*windows, ",")
	hits, loads, speed := make([][]float64, len(ws)), make([][]float64, len(ws)), make([][]float64, len(ws))
	for range *runs {
		for i, w := range ws { // alternating, so that the machine's drift touches every window alike
			cmd := exec.Command(self, "locality", "-one", w, "-cache", strconv.Itoa(*cache), dir)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, os.Stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("window %s: %w", w, err)
			}
			var h, l, crops, secs float64
			if _, err := fmt.Sscan(out.String(), &h, &l, &crops, &secs); err != nil {
				return fmt.Errorf("window %s: %q: %w", w, out.String(), err)
			}
			hits[i], loads[i], speed[i] = append(hits[i], h/(h+l)), append(loads[i], l), append(speed[i], crops/secs)
		}
	}
	fmt.Printf("%-8s %9s %10s %10s %9s %10s\n", "window", "hit_rate", "loads", "crops/s", "hit/off", "speed/off")
	off := slices.Index(ws, "off")
	ratio := func(x [][]float64, i int) string {
		if off < 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", median(x[i])/median(x[off]))
	}
	for i, w := range ws {
		fmt.Printf("%-8s %9.3f %10.0f %10.1f %9s %10s\n", w, median(hits[i]), median(loads[i]), median(speed[i]), ratio(hits, i), ratio(speed, i))
	}
	fmt.Printf("(cache %d MiB, %d workers; medians of %d cold epochs, each in a process of its own, the windows alternating)\n", *cache, goruntime.GOMAXPROCS(0), *runs)
	return nil
}

// localityRun runs epoch 0 of the loader over dir with a chunk cache of
// cacheMiB and the locality window w ("off" or a count of batches), and
// prints the cache's hits and loads, the crops and the epoch's seconds,
// from opening the source to the last batch.
func localityRun(dir, w string, cacheMiB int) error {
	window := runtime.LocalityOff
	if w != "off" {
		n, err := strconv.Atoi(w)
		if err != nil || n < 1 {
			return fmt.Errorf("window %q is not off or a count of batches", w)
		}
		window = n
	}
	os.Setenv(zarr.CacheEnv, strconv.Itoa(cacheMiB)) // before the shared cache is made
	cache, err := zarr.SharedCache()
	if err != nil {
		return err
	}
	n, d, err := runEpoch(dir, runtime.Options{Locality: window}, 0)
	if err != nil {
		return err
	}
	st := cache.Stats()
	fmt.Printf("%d %d %d %.4f\n", st.Hits, st.Loads, n, d.Seconds())
	return nil
}

func parseShape(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("shape %q: want three sizes, z,y,x", s)
		}
		out = append(out, n)
	}
	if len(out) != 3 {
		return nil, fmt.Errorf("shape %q: want three sizes, z,y,x", s)
	}
	return out, nil
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2]
}
