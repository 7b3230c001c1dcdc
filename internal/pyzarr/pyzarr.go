// Package pyzarr gives tests Debian's python3 with zarr and numpy, which
// they use to check what the Go code reads or writes against zarr-python,
// and the list of the zarr fixtures made with them (testdata/zarr).
package pyzarr

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Python is Debian's interpreter, where apt-get installs python3-zarr.
const Python = "/usr/bin/python3"

// Require returns Python, failing (not skipping) t when it cannot import
// zarr and numpy: CI installs them (make zarr-python), and a check that did
// not run must not pass.
func Require(t testing.TB) string {
	t.Helper()
	if out, err := exec.Command(Python, "-c", "import zarr, numcodecs, numpy").CombinedOutput(); err != nil {
		t.Fatalf("this test needs Debian's python3-zarr (make zarr-python, or apt-get install python3-zarr): %v\n%s", err, out)
	}
	return Python
}

// Case is one entry of a fixture directory's cases.json: a store that
// python3-zarr wrote, or that testdata/zarr/make_fixtures.py assembled from
// numcodecs-encoded chunks.
type Case struct {
	Name       string  `json:"name"`
	Path       string  `json:"path"` // the store, relative to the fixture directory
	DType      string  `json:"dtype"`
	Array      string  `json:"array"`      // the array's path in the store, for a group
	Error      string  `json:"error"`      // the error opening must give, for a refused array
	Multiscale []Level `json:"multiscale"` // the levels, for an OME-NGFF multiscale
}

// Level is one level of a multiscale Case.
type Level struct {
	Path        string    `json:"path"`
	Scale       []float64 `json:"scale"`
	Translation []float64 `json:"translation"`
	Expected    string    `json:"expected"` // numpy's reading of it: expected/Expected.npy
}

// Cases reads the cases.json of the fixture directory dir, failing t when
// it cannot.
func Cases(t testing.TB, dir string) []Case {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []Case
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}
