package python_test

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loadergen/loadergen/examples/cellmap"
	"github.com/loadergen/loadergen/golden/photos"
	"github.com/loadergen/loadergen/golden/tokens"
	"github.com/loadergen/loadergen/internal/fixture/photoshards"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/npy"
	"github.com/loadergen/loadergen/runtime/python"
	"github.com/loadergen/loadergen/runtime/volume"
)

// python3 is Debian's interpreter, whose packages (numpy, torch, pytest)
// the tests import; a pyenv python3 may come first on PATH.
const python3 = "/usr/bin/python3"

// requireEnv makes a machine without the Python packages fail the tests
// instead of skipping them: make test sets it.
const requireEnv = "LOADERGEN_REQUIRE_PYTHON"

// TestPython builds the Python package of three generated loaders (token
// files, image records, volumes) with `loadergen python`,
// writes their data and the Go loaders' epochs, and runs the pytest suite
// in testdata against them: epochs equal Go's bytes, tensors point into the
// staging slots, kept tensors outlive the loop, errors, fork, Ctrl-C, logs,
// leaks, and the README's training loop.
func TestPython(t *testing.T) {
	if err := exec.Command(python3, "-c", "import numpy, torch, pytest").Run(); err != nil {
		if os.Getenv(requireEnv) != "" {
			t.Fatalf("%s needs Debian's python3-numpy, python3-torch and python3-pytest: %v", requireEnv, err)
		}
		t.Skipf("needs Debian's python3-numpy, python3-torch and python3-pytest (%s=1 makes this a failure): %v", requireEnv, err)
	}
	if testing.Short() {
		t.Skip("builds a shared library: not in -short")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dist := filepath.Join(dir, "dist")
	cmd := exec.Command("go", "run", "./cmd/loadergen", "python", "-o", dist, "./golden/tokens", "./golden/photos", "./examples/cellmap")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("loadergen python: %v\n%s", err, out)
	}
	fx := fixtures{Dist: dist, Datasets: map[string]dataset{}}
	fx.Datasets["tokens"] = tokensData(t, filepath.Join(dir, "tokens"))
	fx.Datasets["photos"] = photosData(t, filepath.Join(dir, "photos"))
	fx.Datasets["cellmap"] = cellmapData(t, filepath.Join(dir, "cellmap"))
	fx.BadRecords = badShards(t, filepath.Join(dir, "bad"))
	fx.SlowRecords = slowServer(t, filepath.Join(dir, "photos"))
	js, err := json.Marshal(fx)
	if err != nil {
		t.Fatal(err)
	}
	fixtureFile := filepath.Join(dir, "fixtures.json")
	if err := os.WriteFile(fixtureFile, js, 0o644); err != nil {
		t.Fatal(err)
	}
	pytest := exec.Command(python3, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "testdata")
	pytest.Env = append(os.Environ(), "LOADERGEN_FIXTURES="+fixtureFile, "LOADERGEN_REPO="+repo)
	out, err := pytest.CombinedOutput()
	t.Logf("pytest:\n%s", out)
	if err != nil {
		t.Fatalf("pytest: %v", err)
	}
}

// fixtures tell the pytest suite where everything is.
type fixtures struct {
	Dist        string             `json:"dist"`     // the written Python package
	Datasets    map[string]dataset `json:"datasets"` // by module
	BadRecords  string             `json:"bad_records"`
	SlowRecords string             `json:"slow_records"` // a URL of photos' shards; POST /delay?ms= slows each answer
}

// dataset is one dataset's data and the Go loader's epochs over it.
type dataset struct {
	Source   string          `json:"source"`   // the constructor's keyword
	Location string          `json:"location"` // its value
	Workers  int             `json:"workers"`
	Epochs   [][]goBatch     `json:"epochs"` // epochs 0 and 1
	Meta     json.RawMessage `json:"meta,omitempty"`
}

// goBatch is one batch of a Go epoch: indices, and each key's bytes' SHA-256.
type goBatch struct {
	Indices []int             `json:"indices"`
	Keys    map[string]string `json:"keys"`
}

// workers is the workers of the Go epochs and of the Python loaders that
// compare with them: the order and the bytes are the same with any.
const workers = 2

var quiet = slog.New(slog.DiscardHandler)

// epochs runs epochs 0 and 1 of l and describes every batch.
func epochs(t *testing.T, l python.Loader) [][]goBatch {
	t.Helper()
	defer l.Close()
	plan := l.Plan()
	var out [][]goBatch
	for e := range 2 {
		var batches []goBatch
		c, err := l.Start(context.Background(), e, 0)
		if err != nil {
			t.Fatal(err)
		}
		for {
			b, err := c.Next(0)
			if err != nil {
				t.Fatal(err)
			}
			if b == nil {
				break
			}
			gb := goBatch{Indices: append([]int(nil), b.Indices...), Keys: map[string]string{}}
			for k, tensor := range b.Tensors {
				sum := sha256.Sum256(tensor.Data)
				gb.Keys[plan.Keys[k].Name] = hex.EncodeToString(sum[:])
			}
			batches = append(batches, gb)
		}
		c.Close()
		out = append(out, batches)
	}
	return out
}

// tokensData writes token files of 100 samples (1 to 512 tokens each).
func tokensData(t *testing.T, root string) dataset {
	t.Helper()
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 100
	offsets := []int64{0}
	var toks []int32
	labels := make([]int64, n)
	for i := range n {
		for j := range 1 + (i*37)%512 {
			toks = append(toks, int32(i*1000+j))
		}
		offsets = append(offsets, int64(len(toks)))
		labels[i] = int64(i % 7)
	}
	for _, f := range []struct {
		name  string
		dtype runtime.DType
		data  []byte
	}{
		{"tokens.npy", runtime.Int32, runtime.Bytes(toks)},
		{"offsets.npy", runtime.Int64, runtime.Bytes(offsets)},
		{"label.npy", runtime.Int64, runtime.Bytes(labels)},
	} {
		n := len(f.data) / f.dtype.Size()
		if err := npy.Write(filepath.Join(root, f.name), f.dtype, []int{n}, f.data); err != nil {
			t.Fatal(err)
		}
	}
	src, err := tokens.OpenTokensFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tokens.NewTokensLoader(src, runtime.Options{Workers: workers, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return dataset{Source: "files", Location: root, Workers: workers, Epochs: epochs(t, python.Wrap(l, src, nil))}
}

// photoSet is the image records' data: photos' golden set.
var photoSet = photoshards.Set{Samples: 22, Shards: 2, Width: 40, Height: 30, Classes: 5, Quality: 90, Seed: 1}

// photosData writes photos' shards.
func photosData(t *testing.T, root string) dataset {
	t.Helper()
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := photoSet.WriteShards(root, "photos-%d.tar"); err != nil {
		t.Fatal(err)
	}
	src, err := photos.OpenPhotosRecords(root)
	if err != nil {
		t.Fatal(err)
	}
	l, err := photos.NewPhotosLoader(src, runtime.Options{Workers: workers, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return dataset{Source: "records", Location: root, Workers: workers, Epochs: epochs(t, python.Wrap(l, src, nil))}
}

// cellmapData writes the example's synthetic volumes and records their
// first crops (Crop, which Python's crop must equal).
func cellmapData(t *testing.T, root string) dataset {
	t.Helper()
	if err := cellmap.WriteSynthetic(root, 1); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(root, cellmap.Manifest)
	vols, err := cellmap.LoadCellMapVolumes(manifest)
	if err != nil {
		t.Fatal(err)
	}
	src, err := cellmap.OpenCellMapVolumes(vols)
	if err != nil {
		t.Fatal(err)
	}
	crops := make([]runtime.Crop, 3)
	for i := range crops {
		crops[i] = src.Crop(1, i)
	}
	// The Go side's predictions, which Python's must equal.
	predictions := filepath.Join(root, "go-predictions.zarr")
	if _, err := cellmap.Predict(context.Background(), root, predictions, runtime.Options{Workers: workers, Logger: quiet}, volume.PredictOptions{Logger: quiet}); err != nil {
		t.Fatal(err)
	}
	meta, err := json.Marshal(map[string]any{"crops_epoch_1": crops, "go_predictions": predictions, "predict_manifest": filepath.Join(root, cellmap.PredictManifest)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := cellmap.NewCellMapLoader(src, runtime.Options{Workers: workers, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return dataset{Source: "volumes", Location: manifest, Workers: workers, Epochs: epochs(t, python.Wrap(l, src, nil)), Meta: meta}
}

// badShards writes photos' shards with sample 5's JPEG cut in half.
func badShards(t *testing.T, root string) string {
	t.Helper()
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for s := range photoSet.Shards {
		f, err := os.Create(filepath.Join(root, fmt.Sprintf("photos-%d.tar", s)))
		if err != nil {
			t.Fatal(err)
		}
		w := tar.NewWriter(f)
		per := (photoSet.Samples + photoSet.Shards - 1) / photoSet.Shards
		for i := s * per; i < min((s+1)*per, photoSet.Samples); i++ {
			key, jpg, mask, cls, err := photoSet.Members(i)
			if err != nil {
				t.Fatal(err)
			}
			if i == 5 {
				jpg = jpg[:len(jpg)/2]
			}
			for _, m := range []struct {
				ext  string
				data []byte
			}{{"jpg", jpg}, {"png", mask}, {"cls", cls}} {
				if err := w.WriteHeader(&tar.Header{Name: key + "." + m.ext, Mode: 0o644, Size: int64(len(m.data))}); err != nil {
					t.Fatal(err)
				}
				if _, err := w.Write(m.data); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := errors.Join(w.Close(), f.Close()); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// slowServer serves root over HTTP; a POST to /delay?ms=N makes every
// later answer wait N milliseconds first, so that Python can wait long in
// a fill (the Ctrl-C test).
func slowServer(t *testing.T, root string) string {
	t.Helper()
	var delay atomic.Int64
	files := http.FileServer(http.Dir(root))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/delay" {
			ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			delay.Store(int64(ms))
			return
		}
		time.Sleep(time.Duration(delay.Load()) * time.Millisecond)
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimSuffix(srv.URL, "/")
}
