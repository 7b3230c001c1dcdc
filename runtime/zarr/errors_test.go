package zarr

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	lgruntime "github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/zarr/zarrspec"
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

// TestStoreChecksPath: the store refuses what zarrspec.CheckPath refuses,
// with its error, so that the schema, which calls CheckPath, accepts only
// the paths a store opens.
func TestStoreChecksPath(t *testing.T) {
	s, err := OpenStore(t.TempDir(), NewCache(0))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"em/./raw", "em//raw", ".."} {
		want := zarrspec.CheckPath(p)
		if _, err := s.IsArray(p); want == nil || err == nil || !strings.Contains(err.Error(), want.Error()) {
			t.Errorf("IsArray(%s) = %v, want CheckPath's error %v", p, err, want)
		}
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
