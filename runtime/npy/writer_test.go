package npy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/pyzarr"
	"github.com/loadergen/loadergen/runtime"
)

// TestWriterStreams writes arrays in uneven parts, with the leading
// dimension given or counted, and has numpy check each: it loads the data,
// and numpy.save of the same array gives the same bytes, header included.
func TestWriterStreams(t *testing.T) {
	dir := t.TempDir()
	type array struct {
		name    string
		dtype   runtime.DType
		shape   []int // as written: -1 counts the leading dimension
		samples int
	}
	arrays := []array{
		{"u1_given", runtime.Uint8, []int{7, 3, 5}, 7},
		{"f4_counted", runtime.Float32, []int{-1, 2, 3}, 11},
		{"i8_counted_1d", runtime.Int64, []int{-1}, 1234567},
		{"u2_counted_empty", runtime.Uint16, []int{-1, 4}, 0},
		{"u2_counted_empty_samples", runtime.Uint16, []int{-1, 0}, 0},
	}
	var checks []string
	for _, a := range arrays {
		per := a.dtype.Size()
		for _, d := range a.shape[1:] {
			per *= d
		}
		data := make([]byte, a.samples*per)
		for i := range data {
			data[i] = byte(i*7 + len(a.name))
		}
		path := filepath.Join(dir, a.name+".npy")
		w, err := Create(path, a.dtype, a.shape)
		if err != nil {
			t.Fatal(err)
		}
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 1+len(rest)/3) // parts that split samples
			if _, err := w.Write(rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+".raw", data, 0o644); err != nil {
			t.Fatal(err)
		}
		shape := append([]int{a.samples}, a.shape[1:]...)
		checks = append(checks, fmt.Sprintf("(%q, %q, %s)", path, numpyType[a.dtype], formatShape(shape)))
	}
	script := `
import io, sys, numpy as np
for path, dtype, shape in [` + strings.Join(checks, ", ") + `]:
    want = np.frombuffer(open(path + ".raw", "rb").read(), dtype=dtype).reshape(shape)
    got = np.load(path)
    assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes(), path
    saved = io.BytesIO()
    np.save(saved, want)
    assert saved.getvalue() == open(path, "rb").read(), path + ": not numpy.save's bytes"
print("ok")
`
	out, err := exec.Command(pyzarr.Require(t), "-c", script).CombinedOutput()
	if err != nil || !bytes.HasPrefix(out, []byte("ok")) {
		t.Fatalf("numpy on the streamed files: %v\n%s", err, out)
	}
}

// numpyType is the numpy dtype of each runtime dtype the test writes.
var numpyType = map[runtime.DType]string{runtime.Uint8: "u1", runtime.Float32: "<f4", runtime.Int64: "<i8", runtime.Uint16: "<u2"}

// TestWriterRefuses: incomplete or excess data and partial samples are
// errors, and a failed or aborted writer leaves the target as it was.
func TestWriterRefuses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.npy")
	if err := Write(path, runtime.Uint8, []int{1}, []byte{9}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		shape []int
		write int
		want  string
	}{
		{[]int{2, 3}, 5, "data is 5 bytes, shape (2, 3) of uint16 needs 12"},
		{[]int{2, 3}, 13, "1 bytes written past the 12 that shape (2, 3) of uint16 holds"},
		{[]int{-1, 3}, 7, "7 bytes are not whole samples of 6 bytes (shape (-1, 3) of uint16)"},
		{[]int{-1, 0}, 2, "2 bytes written past the 0 that shape (-1, 0) of uint16 holds"},
		{[]int{2, -1}, 0, "shape (2, -1) has a negative dimension"},
	}
	for _, tt := range tests {
		w, err := Create(path, runtime.Uint16, tt.shape)
		if err == nil {
			if _, err = w.Write(make([]byte, tt.write)); err == nil {
				err = w.Close()
			}
		}
		if err == nil || err.Error() != "writing "+path+": "+tt.want {
			t.Errorf("shape %v, %d bytes: %v, want %q", tt.shape, tt.write, err, tt.want)
		}
	}
	w, err := Create(path, runtime.Uint8, []int{-1})
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte{1, 2, 3})
	w.Abort()
	if err := w.Close(); err == nil {
		t.Error("Close after Abort succeeded")
	}
	f := mustOpen(t, path, Spec{Key: "a", DType: runtime.Uint8})
	readAll[uint8](t, f, []byte{9})
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the directory holds %d entries, want only a.npy", len(ents))
	}
}
