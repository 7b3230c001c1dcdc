package zarr

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	lgruntime "github.com/loadergen/loadergen/runtime"
)

var update = flag.Bool("update", false, "rewrite the expected messages of testdata/zarr/errors")

// TestMetadataErrors opens every array of testdata/zarr/errors, one per
// failure, and compares the error with the exact message in <case>.err
// (paths relative to that directory). go test ./runtime/zarr -update
// rewrites the messages; read the diff before committing it.
func TestMetadataErrors(t *testing.T) {
	dir := filepath.Join(fixtures, "errors")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		t.Run(e.Name(), func(t *testing.T) {
			s, err := OpenStore(filepath.Join(dir, e.Name()), NewCache(1))
			if err == nil {
				_, err = s.Array("")
			}
			if err == nil {
				t.Fatal("opened without an error")
			}
			got := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "") + "\n"
			errFile := filepath.Join(dir, e.Name()+".err")
			if *update {
				if err := os.WriteFile(errFile, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(errFile)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("error:\n got %s want %s", got, want)
			}
		})
	}
	errFiles, _ := filepath.Glob(filepath.Join(dir, "*.err"))
	if n < 25 || len(errFiles) != n {
		t.Fatalf("%d error cases and %d .err files: want at least 25, one file per case", n, len(errFiles))
	}
}

// TestCheckPath pins the paths a Store opens; the schema accepts a zarr
// key's path only when CheckPath does, so the two cannot drift apart.
func TestCheckPath(t *testing.T) {
	for _, p := range []string{"", "/", "raw", "em/raw", "/em/raw/", "labels/mito"} {
		if err := CheckPath(p); err != nil {
			t.Errorf("CheckPath(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range []string{".", "./raw", "em/./raw", "em/../raw", "..", "em//raw", "em/raw/.."} {
		if err := CheckPath(p); err == nil {
			t.Errorf("CheckPath(%q) = nil, want an error", p)
		}
	}
	// The store refuses what CheckPath refuses.
	s, err := OpenStore(t.TempDir(), NewCache(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.IsArray("em/./raw"); err == nil || !strings.Contains(err.Error(), "plain relative path") {
		t.Errorf("IsArray(em/./raw) = %v, want CheckPath's error", err)
	}
}

// TestMultiscaleMisuse: a Multiscale built to write has no store to open
// levels from (an error, not a nil dereference), and asking for the
// multiscale of an array names the array's directory.
func TestMultiscaleMisuse(t *testing.T) {
	m := Multiscale{Path: "raw", Levels: []Level{{Path: "s0", Scale: []float64{1}}}}
	if _, err := m.Open(0); err == nil {
		t.Error("Open of a Multiscale built to write succeeded")
	}
	dir := t.TempDir()
	spec := ArraySpec{Shape: []int{4}, Chunks: []int{4}, DType: lgruntime.Uint8}
	if err := WriteArray(filepath.Join(dir, "a"), spec, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	s, err := OpenStore(dir, NewCache(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Multiscale("a"); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "a")+" is an array") {
		t.Errorf("Multiscale(a) = %v, want an error naming %s", err, filepath.Join(dir, "a"))
	}
}
