package zarr

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	lgruntime "github.com/loadergen/loadergen/runtime"
)

// The examples of the zarr v3 specification (zarr-developers/zarr-specs at
// fc7dd9c, docs/v3), as they are written there, except for the trailing
// commas the sharding example has, which are not JSON.

// specArrayExample is docs/v3/core/index.rst's array metadata example.
const specArrayExample = `{
    "zarr_format": 3,
    "node_type": "array",
    "shape": [10000, 1000],
    "dimension_names": ["rows", "columns"],
    "data_type": "float64",
    "chunk_grid": {
        "name": "regular",
        "configuration": {
            "chunk_shape": [1000, 100]
        }
    },
    "chunk_key_encoding": {
        "name": "default",
        "configuration": {
            "separator": "/"
        }
    },
    "codecs": [{
        "name": "bytes",
        "configuration": {
            "endian": "little"
        }
    }],
    "fill_value": "NaN",
    "attributes": {
        "foo": 42,
        "bar": "apples",
        "baz": [1, 2, 3, 4]
    }
}`

// specShardingCodecs is docs/v3/codecs/sharding-indexed/index.rst's codecs.
const specShardingCodecs = `[
    {
      "name": "sharding_indexed",
      "configuration": {
        "chunk_shape": [32, 32],
        "codecs": [
          {
            "name": "bytes",
            "configuration": {
              "endian": "little"
            }
          },
          {
            "name": "gzip",
            "configuration": {
              "level": 1
            }
          }
        ],
        "index_codecs": [
          {
            "name": "bytes",
            "configuration": {
              "endian": "little"
            }
          },
          { "name": "crc32c" }
        ],
        "index_location": "end"
      }
    }
  ]`

func writeSpecArray(t *testing.T, meta string) *Array {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "zarr.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	return openDir(t, dir, 1)
}

func TestSpecArrayExample(t *testing.T) {
	a := writeSpecArray(t, specArrayExample)
	if a.format != 3 || a.DType() != lgruntime.Float64 || !slices.Equal(a.Shape(), []int{10000, 1000}) || !slices.Equal(a.ChunkShape(), []int{1000, 100}) {
		t.Fatalf("format %d, dtype %v, shape %v, chunks %v", a.format, a.DType(), a.Shape(), a.ChunkShape())
	}
	if f := math.Float64frombits(binary.LittleEndian.Uint64(a.fill)); !math.IsNaN(f) {
		t.Errorf("fill %v, want NaN", f)
	}
	var attrs map[string]any
	if err := json.Unmarshal(a.Attributes(), &attrs); err != nil || attrs["bar"] != "apples" {
		t.Errorf("attributes %s", a.Attributes())
	}
	// No chunk is stored: a read gives the fill value.
	box := make([]byte, 8*3)
	if err := a.Read(box, []int{9998, 999}, []int{3, 1}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(box, bytes.Repeat(a.fill, 3)) {
		t.Errorf("unwritten box % x, want the fill value", box)
	}
}

// specShardingArray writes an array of one 64 x 64 shard of 2 x 2 inner
// chunks, with specShardingCodecs and fill value 7, and the shard as the
// sharding specification lays it out (inner chunks, then the index and
// its crc32c): inner chunk number stored (in C order) holds data,
// gzip-compressed, and the index marks the others empty.
func specShardingArray(t *testing.T, stored int, data []byte) *Array {
	t.Helper()
	meta := `{"zarr_format": 3, "node_type": "array", "shape": [64, 64], "data_type": "uint8",
	  "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [64, 64]}},
	  "chunk_key_encoding": {"name": "default"}, "fill_value": 7, "codecs": ` + specShardingCodecs + `}`
	a := writeSpecArray(t, meta)
	if !slices.Equal(a.ChunkShape(), []int{32, 32}) {
		t.Fatalf("inner chunk shape %v", a.ChunkShape())
	}
	var gz bytes.Buffer
	gzipTo(t, &gz, data)
	index := make([]byte, 0, 4*16+4)
	for i := range 4 {
		off, n := uint64(math.MaxUint64), uint64(math.MaxUint64)
		if i == stored {
			off, n = 0, uint64(gz.Len())
		}
		index = binary.LittleEndian.AppendUint64(index, off)
		index = binary.LittleEndian.AppendUint64(index, n)
	}
	index = binary.LittleEndian.AppendUint32(index, crc32c(index))
	shard := append(gz.Bytes(), index...)
	if err := os.MkdirAll(filepath.Join(a.Dir(), "c", "0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.Dir(), "c", "0", "0"), shard, 0o644); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestSpecShardingExample writes one shard as the sharding specification
// lays it out and reads it.
func TestSpecShardingExample(t *testing.T) {
	// Inner chunk (0, 1) holds 0..255 repeated; the others are empty.
	inner := make([]byte, 32*32)
	for i := range inner {
		inner[i] = byte(i)
	}
	a := specShardingArray(t, 1, inner)
	got := make([]byte, 64*64)
	if err := a.Read(got, []int{0, 0}, []int{64, 64}); err != nil {
		t.Fatal(err)
	}
	for y := range 64 {
		for x := range 64 {
			want := byte(7)
			if y < 32 && x >= 32 {
				want = inner[y*32+x-32]
			}
			if got[y*64+x] != want {
				t.Fatalf("element (%d, %d) = %d, want %d", y, x, got[y*64+x], want)
			}
		}
	}
}

// TestShardIndexEntry: a shard's index is cached as an entry of its own,
// apart from the decoded chunk of the same number. Reading inner chunk 1
// of shard 0 caches shard 0's index and chunk 1, and not chunk 0.
func TestShardIndexEntry(t *testing.T) {
	a := specShardingArray(t, 1, make([]byte, 32*32))
	if err := a.Read(make([]byte, 32*32), []int{0, 32}, []int{32, 32}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		key  cacheKey
		want bool
	}{
		{a.indexEntry(0), true},
		{a.chunkEntry(1), true},
		{a.chunkEntry(0), false},
	} {
		if got := a.cache.has(tt.key); got != tt.want {
			t.Errorf("cache holds %+v: %v, want %v", tt.key, got, tt.want)
		}
	}
}

// TestSpecChunkKeys checks the chunk key examples of the default and v2
// chunk key encodings (docs/v3/chunk-key-encodings).
func TestSpecChunkKeys(t *testing.T) {
	tests := []struct {
		prefix, sep string
		idx         []int
		want        string
	}{
		{"c", "/", []int{1, 23, 45}, "c/1/23/45"},
		{"c", ".", []int{1, 23, 45}, "c.1.23.45"},
		{"", ".", []int{1, 23, 45}, "1.23.45"},
		{"", "/", []int{1, 23, 45}, "1/23/45"},
		{"c", "/", nil, "c"},
		{"", ".", nil, "0"},
		{"c", "/", []int{1, 0}, "c/1/0"}, // docs/v3/core's data storage key example
	}
	for _, tt := range tests {
		a := &Array{keyPrefix: tt.prefix, keySep: tt.sep}
		if got := a.key(tt.idx); got != tt.want {
			t.Errorf("key(%v) with prefix %q, separator %q = %q, want %q", tt.idx, tt.prefix, tt.sep, got, tt.want)
		}
	}
}

func gzipTo(t *testing.T, w *bytes.Buffer, data []byte) {
	t.Helper()
	zw := gzip.NewWriter(w)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
