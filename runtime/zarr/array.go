package zarr

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	lgruntime "github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/storage"
)

// Array is an opened zarr array. Its metadata is read once, at open; its
// chunks are read, decoded and cached as reads need them. An Array is safe
// for concurrent use: Store.Array writes its fields before returning it and
// nothing writes them after; the decoded chunks live in cache, which
// orders its own writes.
type Array struct {
	dir string // the array's directory, or its URL: for messages, and for a local array's files
	// remote, for an array at a remote root, reads its chunks (by their
	// keys); nil for a local array, whose files are read directly.
	remote storage.Root
	id     uint64 // the array's name in its cache
	cache  *Cache

	format int // 2 or 3
	shape  []int
	// stored is the shape of the chunk grid's chunks, the objects the
	// store holds: a sharded array's shards, else its chunks (then stored
	// and unit are the same).
	stored    []int
	dtype     lgruntime.DType
	fill      []byte // one element, little-endian
	keyPrefix string // "c" for v3's default chunk keys, else ""
	keySep    string // "." or "/"
	chain     chain
	attrs     json.RawMessage

	// unit is the shape of a decoded chunk, what reads decode and the cache
	// holds (ChunkShape): a stored chunk, or a sharded array's inner chunk.
	// grid counts units along each axis, and shards stored chunks (shards,
	// when sharded).
	unit, grid, shards []int
	unitBytes          int
	unitStrides        [maxRank]int // C-order element strides of a unit
	// partial: a unit of a local array can be decoded in part, a window
	// of its C-order bytes (chain.partial); else reads need it whole.
	partial bool
	// storedMax is the most bytes a stored chunk of a remote array read so
	// far held (0 before the first): ReadAhead counts a chunk in flight at
	// it rather than at its decoded size (three times its stored size
	// under blosc-lz4 on EM data). The reads of the array's chunks raise it
	// (decodeRemote, a compare-and-swap loop), concurrently.
	storedMax atomic.Int64
	// bg runs ReadAhead's loads of shard indexes: its store's, whose
	// Close stops them.
	bg *background
}

// maxChunkBytes bounds what one read holds in memory: a decoded chunk, a
// stored chunk, a shard's index. The writer holds its chunks to it too, so
// that it writes none a reader refuses.
const maxChunkBytes = 1 << 31

// storedLimit is the most bytes a stored chunk (an inner chunk, for a
// sharded array) of the array may take: twice its decoded size and 1 MiB
// (no codec of zarr's expands data near as much), within maxChunkBytes.
// A larger one, by its file's size, its server's declared length or its
// shard's index, is refused before it is read.
func (a *Array) storedLimit() int64 {
	return min(2*int64(a.unitBytes)+1<<20, maxChunkBytes)
}

// errStoredSize is the error of a chunk stored in n bytes, more than
// storedLimit.
func (a *Array) errStoredSize(n int64) error {
	return fmt.Errorf("stored in %d bytes, more than the %d a chunk of %d bytes may take", n, a.storedLimit(), a.unitBytes)
}

// arrayIDs numbers opened arrays across every cache, so that arrays
// sharing a Cache never share its keys.
var arrayIDs atomic.Uint64

// Array opens the array at path p of the store ("" for the root).
func (s *Store) Array(p string) (*Array, error) {
	kind, doc, err := s.node(p)
	if err != nil {
		return nil, err
	}
	dir, _ := s.dir(p)
	a := &Array{dir: dir, id: arrayIDs.Add(1), cache: s.cache, bg: s.bg}
	if _, local := s.root.Local(); !local {
		a.remote = s.root.Sub(strings.Trim(p, "/"))
	}
	switch kind {
	case v2Array:
		err = a.parseV2(doc)
		if err == nil {
			a.attrs, err = s.v2Attributes(p)
		}
	case v3Array:
		err = a.parseV3(doc)
	default:
		return nil, fmt.Errorf("zarr: %s is a group, not an array", dir)
	}
	if err != nil {
		return nil, err
	}
	if err := a.setUnits(); err != nil {
		return nil, &MetadataError{File: doc.file, Err: err}
	}
	return a, nil
}

// Dir returns the array's directory.
func (a *Array) Dir() string { return a.dir }

// Shape returns the array's shape.
func (a *Array) Shape() []int { return slices.Clone(a.shape) }

// ChunkShape returns the shape of the chunks reads decode (unit): the chunk
// grid's chunks, or a sharded array's inner chunks, not its shards.
func (a *Array) ChunkShape() []int { return slices.Clone(a.unit) }

// DType returns the element type.
func (a *Array) DType() lgruntime.DType { return a.dtype }

// Attributes returns the array's user attributes as JSON (v2's .zattrs,
// v3's attributes); "{}" when there are none.
func (a *Array) Attributes() json.RawMessage { return slices.Clone(a.attrs) }

// ChunkError is a chunk that could not be read or decoded; a chunk (or a
// shard's index) whose codecs fail wraps a *runtime.BadSampleError.
type ChunkError struct {
	Array string // the array's directory
	Chunk string // the chunk's key, e.g. "c/0/1/2"; for an inner chunk of a shard, the shard's key and the inner chunk's grid index
	Err   error
}

// Error reads "zarr array data/raw: chunk 0/1/2: zstd: ...".
func (e *ChunkError) Error() string {
	return fmt.Sprintf("zarr array %s: chunk %s: %v", e.Array, e.Chunk, e.Err)
}

// Unwrap returns what went wrong.
func (e *ChunkError) Unwrap() error { return e.Err }

// key returns the storage key of the chunk (or shard) at grid index idx.
func (a *Array) key(idx []int) string { return chunkKey(a.keyPrefix, a.keySep, idx) }

// chunkKey spells the storage key of grid index idx: prefix ("c" in v3's
// default encoding, else empty), then the indices, joined by sep.
func chunkKey(prefix, sep string, idx []int) string {
	var b strings.Builder
	b.WriteString(prefix)
	for i, v := range idx {
		if i > 0 || prefix != "" {
			b.WriteString(sep)
		}
		b.WriteString(strconv.Itoa(v))
	}
	if b.Len() == 0 {
		return "0" // v2's key of a 0-d array
	}
	return b.String()
}

// chunkError makes a ChunkError for the chunk or shard at grid index idx;
// inner, when not nil, is an inner chunk's index within the shard.
func (a *Array) chunkError(idx, inner []int, err error) error {
	return &ChunkError{Array: a.dir, Chunk: a.chunkName(idx, inner), Err: err}
}

// chunkName names the chunk or shard at grid index idx, and with inner an
// inner chunk of that shard, as ChunkError.Chunk does.
func (a *Array) chunkName(idx, inner []int) string {
	name := a.key(idx)
	if inner != nil {
		name = fmt.Sprintf("%s (inner chunk %v)", name, inner)
	}
	return name
}

// ChunkName names the decoded chunk of number chunk (its C-order position
// in the grid of the chunks reads decode, as Layout.Missing gives it) as a
// ChunkError does: its key, "c/1/0/2"; for an inner chunk of a shard, the
// shard's key and the inner chunk's index in the shard, "c/0/0/0 (inner
// chunk [1 0 1])".
func (a *Array) ChunkName(chunk int64) string {
	n := len(a.shape)
	idx := make([]int, n)
	unravel(chunk, a.grid, idx)
	sh := a.chain.shard
	if sh == nil {
		return a.chunkName(idx, nil)
	}
	inner := make([]int, n)
	for k := range n {
		idx[k], inner[k] = idx[k]/sh.perShard[k], idx[k]%sh.perShard[k]
	}
	return a.chunkName(idx, inner)
}

// unravel writes the grid index of C-order position i in a grid of shape.
func unravel(i int64, shape []int, out []int) {
	for k := len(shape) - 1; k >= 0; k-- {
		n := int64(max(shape[k], 1))
		out[k] = int(i % n)
		i /= n
	}
}

// ravel returns the C-order position of grid index idx in a grid of shape.
func ravel(idx, shape []int) int64 {
	var i int64
	for k, v := range idx {
		i = i*int64(shape[k]) + int64(v)
	}
	return i
}
