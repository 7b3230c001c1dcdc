//go:build linux

package bounded

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// sink keeps the child's allocation live.
var sink []byte

// touch allocates n bytes and writes every page, so they are resident.
func touch(n int) {
	sink = make([]byte, n)
	for i := 0; i < n; i += 4096 {
		sink[i] = 1
	}
}

// TestWithinBound: a child that stays under its bound passes, and the
// body runs only in the child.
func TestWithinBound(t *testing.T) {
	if !Child(t, 256<<20) {
		return
	}
	if os.Getenv(childEnv) != t.Name() {
		t.Fatal("the body ran outside the child")
	}
	touch(16 << 20)
}

// TestOverBound runs only when TestBoundFails asks for it: a child that
// grows past its bound must fail it.
func TestOverBound(t *testing.T) {
	if os.Getenv("LOADERGEN_BOUNDED_SELFTEST") == "" {
		t.Skip("run by TestBoundFails")
	}
	if !Child(t, 64<<20) {
		return
	}
	touch(512 << 20)
}

// TestBoundFails: a child that passes its bound fails the test that ran
// it, naming the bound.
func TestBoundFails(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestOverBound$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LOADERGEN_BOUNDED_SELFTEST=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a child touching 512 MB under a 64 MB bound passed:\n%s", out)
	}
	bound := fmt.Sprintf("%d MB", 64*map[bool]int{false: 1, true: raceScale}[raceEnabled])
	if !strings.Contains(string(out), "bound "+bound) && !strings.Contains(string(out), "bound of "+bound) {
		t.Errorf("the failure does not name the bound:\n%s", out)
	}
}
