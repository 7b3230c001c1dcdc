package zarr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/bombs"
	"github.com/loadergen/loadergen/internal/testenv/bounded"
)

// writeBomb writes a v2 uint8 array of shape shape, chunked by chunks,
// with compressor compressor (a .zarray's JSON), at dir, each chunk's file
// holding what chunk returns for its key.
func writeBomb(t *testing.T, dir string, shape, chunks []int, compressor string, chunk func(key string) []byte) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	js := func(v []int) string { return strings.Join(strings.Fields(fmt.Sprint(v)), ", ") }
	meta := fmt.Sprintf(`{"zarr_format": 2, "shape": %s, "chunks": %s, "dtype": "|u1", "compressor": %s, "fill_value": 0, "order": "C", "filters": null}`,
		js(shape), js(chunks), compressor)
	if err := os.WriteFile(filepath.Join(dir, ".zarray"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := make([]int, len(shape))
	for {
		key := chunkKey("", ".", idx)
		if err := os.WriteFile(filepath.Join(dir, key), chunk(key), 0o644); err != nil {
			t.Fatal(err)
		}
		k := len(idx) - 1
		for ; k >= 0; k-- {
			if idx[k]++; idx[k]*chunks[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

const zstdJSON = `{"id": "zstd", "level": 1}`

// TestDecodeMemoryBombs: a chunk whose decoding would take more memory
// than the process's decode memory allows (a 2 GiB chunk, what metadata
// may declare, stored in a 64 KiB zstd file, which took 2 GiB), and a
// codec frame that declares more than the chunk holds (zstd's content
// size, Blosc's nbytes, numcodecs' LZ4 size), are refused before anything
// is allocated for them, with a ChunkError naming the array and the chunk;
// in a child held to the hostile-input bound. A chunk at the bound reads.
func TestDecodeMemoryBombs(t *testing.T) {
	if !bounded.Child(t, bounded.HostileRSS) {
		return
	}
	const big = 1 << 31 // 2 GiB: the most a chunk may declare
	bloscFrame := binary.LittleEndian.AppendUint32([]byte{2, 1, 1, 1}, 1<<31-1-16)
	bloscFrame = binary.LittleEndian.AppendUint32(bloscFrame, 1<<16)
	bloscFrame = binary.LittleEndian.AppendUint32(bloscFrame, 16+64)
	bloscFrame = append(bloscFrame, make([]byte, 64)...)
	tests := []struct {
		name          string
		shape, chunks []int
		compressor    string
		file          []byte
		limitMiB      int    // SetDecodeMemory's, 0 for the default
		want          string // "" when the whole array reads as zeros
	}{
		{"2 GiB chunk of a 64 KiB file", []int{2048, 1024, 1024}, []int{2048, 1024, 1024}, zstdJSON, bombs.ZstdZeros(big), 0,
			"more than the 1073741824 that the process's decodes may hold at once (raise LOADERGEN_ZARR_DECODE_MB, in MiB, or call zarr.SetDecodeMemory)"},
		// A prefix counts a streaming decoder's window and block besides.
		{"a chunk within a bound set", []int{64, 1024, 1024}, []int{64, 1024, 1024}, zstdJSON, bombs.ZstdZeros(64 << 20), 73, ""},
		{"a chunk past it", []int{66, 1024, 1024}, []int{66, 1024, 1024}, zstdJSON, bombs.ZstdZeros(66 << 20), 64,
			"more than the 67108864 that the process's decodes may hold at once"},
		{"a zstd frame declaring 2 GiB in a 1 MiB chunk", []int{1, 1024, 1024}, []int{1, 1024, 1024}, zstdJSON, bombs.ZstdZeros(big), 0,
			"the zstd frame declares 2147483648 bytes, more than the 1048576 expected"},
		{"a Blosc frame declaring 2 GiB", []int{1, 1024, 1024}, []int{1, 1024, 1024}, `{"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}`, bloscFrame, 0,
			"blosc: destination holds 1048576 bytes, the frame decodes to 2147483631"},
		{"an LZ4 size of 2 GiB", []int{1, 1024, 1024}, []int{1, 1024, 1024}, `{"id": "lz4", "acceleration": 1}`,
			append(binary.LittleEndian.AppendUint32(nil, 1<<31-1), make([]byte, 64)...), 0, "header says 2147483647 bytes, expected 1048576"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			SetDecodeMemory(tt.limitMiB)
			defer SetDecodeMemory(0)
			dir := filepath.Join(t.TempDir(), "a")
			writeBomb(t, dir, tt.shape, tt.chunks, tt.compressor, func(string) []byte { return tt.file })
			a := openDir(t, dir, 0)
			boxes := [][2][]int{{{0, 0, 0}, {1, 1, 1}}} // a prefix
			if elems(tt.shape) <= 1<<27 {
				boxes = append(boxes, [2][]int{{0, 0, 0}, tt.shape}) // and the whole, where the test may hold it
			}
			for _, box := range boxes {
				dst := make([]byte, elems(box[1]))
				err := a.Read(dst, box[0], box[1])
				var ce *ChunkError
				switch {
				case tt.want == "" && (err != nil || bytes.Count(dst, []byte{0}) != len(dst)):
					t.Fatalf("box %v: %v", box[1], err)
				case tt.want != "" && (!errors.As(err, &ce) || ce.Array != dir || ce.Chunk != "0.0.0" || !strings.Contains(err.Error(), tt.want)):
					t.Fatalf("box %v: %v, want a ChunkError of %s, chunk 0.0.0, with %q", box[1], err, dir, tt.want)
				}
			}
		})
	}
}

// TestDecodeMemoryBound: readers of different chunks decode them one
// after the other when the bound holds one (8 chunks of 192 MiB, each
// stored in 6 KiB, under a bound of 256 MiB, with no cache: 1.5 GiB at
// once before), and every read is right, in a child held to the
// hostile-input bound.
func TestDecodeMemoryBound(t *testing.T) {
	if !bounded.Child(t, bounded.HostileRSS) {
		return
	}
	SetDecodeMemory(256)
	defer SetDecodeMemory(0)
	const n = 192 << 20
	dir := filepath.Join(t.TempDir(), "a")
	writeBomb(t, dir, []int{8 * 192, 1024, 1024}, []int{192, 1024, 1024}, zstdJSON, func(string) []byte { return bombs.ZstdZeros(n) })
	a := openDir(t, dir, 0)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := []byte{1, 1}
			if err := a.Read(dst, []int{192 * c, 1023, 1022}, []int{1, 1, 2}); err != nil || dst[0] != 0 || dst[1] != 0 {
				errs <- fmt.Errorf("chunk %d: %v, %v", c, dst, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// held is the decode memory held now.
func held() int64 {
	decoding.mu.Lock()
	defer decoding.mu.Unlock()
	return decoding.used
}

// TestDecodeMemoryAccounts: a decoded chunk gives its decode memory back
// once the cache keeps it; one the cache cannot keep (larger than it)
// holds it while a reader copies from it, until the reader lets go; and
// the buffers a cache keeps for reuse stay within the bound (3 evicted
// chunks of 1, 1.25 and 1.5 MiB under a bound of 2 MiB: the first and
// no more).
func TestDecodeMemoryAccounts(t *testing.T) {
	SetDecodeMemory(2)
	defer SetDecodeMemory(0)
	root := t.TempDir()
	for _, rows := range []int{4, 5, 6} { // 256 KiB rows
		writeBomb(t, filepath.Join(root, fmt.Sprint(rows)), []int{rows, 512, 512}, []int{rows, 512, 512}, zstdJSON,
			func(string) []byte { return bombs.ZstdZeros(int64(rows) << 18) })
	}
	for _, tt := range []struct {
		cacheMiB int
		held     int64 // while the entry is held
	}{{16, 0}, {0, 1 << 20}} {
		s, err := OpenStore(root, NewCache(tt.cacheMiB))
		if err != nil {
			t.Fatal(err)
		}
		a, err := s.Array("4")
		if err != nil {
			t.Fatal(err)
		}
		e, err := a.cache.get(bg, a.chunkEntry(0), a, window{0, a.unitBytes})
		if err != nil {
			t.Fatal(err)
		}
		if got := held(); got != tt.held {
			t.Errorf("cache of %d MiB: %d bytes held while a reader copies, want %d", tt.cacheMiB, got, tt.held)
		}
		a.cache.release(e)
		if got := held(); got != 0 {
			t.Errorf("cache of %d MiB: %d bytes held once the reader let go", tt.cacheMiB, got)
		}
		if tt.cacheMiB > 0 {
			continue
		}
		for _, p := range []string{"5", "6"} {
			b, err := s.Array(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Read(make([]byte, b.unitBytes), []int{0, 0, 0}, b.Shape()); err != nil { // whole: no streaming window
				t.Fatal(err)
			}
		}
		if c := a.cache; c.freeBytes != 1<<20+headroom {
			t.Errorf("the cache keeps %d bytes of buffers for reuse, want the first chunk's alone", c.freeBytes)
		}
	}
}
