// Package pyzarr gives tests Debian's python3 with zarr and numpy, which
// they use to check what the Go code reads or writes against zarr-python.
package pyzarr

import (
	"os/exec"
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
