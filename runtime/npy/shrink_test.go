//go:build unix

package npy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// TestFileShrinksWhileMapped: reading a sample that a truncation removed
// returns an error naming the file and sample instead of crashing.
func TestFileShrinksWhileMapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.npy")
	const per = 1 << 16 // whole pages, so the last samples lie past the new end
	if err := Write(path, runtime.Uint8, []int{4, per}, make([]byte, 4*per)); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path, Spec{Key: "x", DType: runtime.Uint8, Sample: []int{per}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Truncate(path, 128); err != nil {
		t.Fatal(err)
	}
	dst := make([]uint8, per)
	err = Read(f, 3, dst)
	if err == nil || !strings.Contains(err.Error(), path+": sample 3 is no longer readable: the file shrank while mapped") {
		t.Fatalf("Read after truncation: %v", err)
	}
}

// TestGatherShrinksWhileMapped: a gather that reaches a truncated sample
// reports it, and how many samples it copied before.
func TestGatherShrinksWhileMapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.npy")
	const per = 1 << 16
	if err := Write(path, runtime.Uint8, []int{4, per}, make([]byte, 4*per)); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path, Spec{Key: "x", DType: runtime.Uint8, Sample: []int{per}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Truncate(path, 2*per); err != nil {
		t.Fatal(err)
	}
	n, err := Gather(f, []int{0, 3, 1}, make([]uint8, 3*per))
	if n != 1 || err == nil || !strings.Contains(err.Error(), path+": sample 3 is no longer readable: the file shrank while mapped") {
		t.Fatalf("Gather after truncation: %d, %v", n, err)
	}
}

// TestRaggedShrinksWhileMapped: AppendRows and GatherRows of rows that a
// truncation removed report the sample, GatherRows with how many samples it
// copied before.
func TestRaggedShrinksWhileMapped(t *testing.T) {
	const per = 1 << 16 // rows of one byte: each sample is 16 pages
	data, offsets := writeRagged(t, t.TempDir(), "x", runtime.Uint8, nil, make([]byte, 4*per), []int64{0, per, 2 * per, 3 * per, 4 * per})
	f := mustOpenRagged(t, data, offsets, Spec{Key: "x", DType: runtime.Uint8, Sample: []int{per}})
	if err := os.Truncate(data, 2*per); err != nil {
		t.Fatal(err)
	}
	want := data + ": sample 3 is no longer readable: the file shrank while mapped"
	dst := make([]uint8, 1, 1+per)
	got, err := AppendRows(f, 3, dst)
	if err == nil || !strings.Contains(err.Error(), want) || len(got) != 1 {
		t.Errorf("AppendRows after truncation: len %d, %v", len(got), err)
	}
	n, err := GatherRows(f, []int{0, 3, 1}, make([]uint8, 3*per), make([]int32, 3))
	if n != 1 || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("GatherRows after truncation: %d, %v", n, err)
	}
}
