package storage

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rangeLog is a root that logs its ranged reads as [off, off+n).
type rangeLog struct {
	Root
	reads [][2]int64
}

func (l *rangeLog) ReadAt(ctx context.Context, name string, p []byte, off int64) error {
	l.reads = append(l.reads, [2]int64{off, off + int64(len(p))})
	return l.Root.ReadAt(ctx, name, p, off)
}

// TestReader: a Reader gives the object's bytes in order, asking for
// 64 KiB first and twice as much each time it reads on, up to 4 MiB; a
// Seek far past what it holds fetches nothing until the next Read, which
// asks for 64 KiB again; a Seek just past it reads on; a bad Seek and a
// vanished object are errors naming the object.
func TestReader(t *testing.T) {
	dir := t.TempDir()
	obj := make([]byte, 9<<20+123)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range obj {
		obj[i] = byte(r.Uint32())
	}
	if err := os.WriteFile(filepath.Join(dir, "o"), obj, 0o644); err != nil {
		t.Fatal(err)
	}
	const k = 1 << 10
	tests := []struct {
		name  string
		steps []int64 // n > 0: read n bytes; n <= 0: seek -n bytes on
		reads [][2]int64
	}{
		{"whole", []int64{int64(len(obj))}, [][2]int64{{0, 64 * k}, {64 * k, 192 * k}, {192 * k, 448 * k}, {448 * k, 960 * k},
			{960 * k, 1984 * k}, {1984 * k, 4032 * k}, {4032 * k, 8128 * k}, {8128 * k, int64(len(obj))}}},
		{"skip far", []int64{100, -2 << 20, 100}, [][2]int64{{0, 64 * k}, {2<<20 + 100, 2<<20 + 100 + 64*k}}},
		{"skip near", []int64{100, -(64*k - 100 + 10), 100}, [][2]int64{{0, 64 * k}, {64*k + 10, 64*k + 10 + 128*k}}},
		{"skip held", []int64{100, -1000, 100}, [][2]int64{{0, 64 * k}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &rangeLog{Root: Local(dir)}
			rd := NewReader(bg, log, "o", int64(len(obj)))
			var pos int64
			for _, n := range tt.steps {
				if n <= 0 {
					if p, err := rd.Seek(-n, io.SeekCurrent); err != nil || p != pos-n {
						t.Fatalf("Seek(%d) = %d, %v; want %d", -n, p, err, pos-n)
					}
					pos -= n
					continue
				}
				got := make([]byte, n)
				if _, err := io.ReadFull(rd, got); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, obj[pos:pos+n]) {
					t.Fatalf("bytes %d to %d differ from the object's", pos, pos+n)
				}
				pos += n
			}
			if !slices.Equal(log.reads, tt.reads) {
				t.Errorf("ranged reads %v, want %v", log.reads, tt.reads)
			}
		})
	}
	rd := NewReader(bg, Local(dir), "o", int64(len(obj)))
	if _, err := rd.Seek(0, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	if n, err := rd.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("Read at the end = %d, %v; want io.EOF", n, err)
	}
	for _, whence := range []int{io.SeekStart, 7} {
		if _, err := rd.Seek(-1, whence); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "o")) {
			t.Errorf("Seek(-1, %d): %v, want an error naming the object", whence, err)
		}
	}
	gone := NewReader(bg, Local(dir), "gone", 10)
	if _, err := gone.Read(make([]byte, 1)); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("reading a vanished object: %v, want an error naming it", err)
	}
}
