package zarr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	lgruntime "github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/storage"
	"github.com/loadergen/loadergen/runtime/zarr/blosc"
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

// v2Attributes reads a v2 node's optional .zattrs.
func (s *Store) v2Attributes(p string) (json.RawMessage, error) {
	doc, err := s.doc(p, ".zattrs")
	if errors.Is(err, fs.ErrNotExist) {
		return json.RawMessage("{}"), nil
	}
	if err != nil {
		return nil, err
	}
	return doc.text[doc.start:doc.end], nil
}

// parseV2 reads a .zarray.
func (a *Array) parseV2(doc *metaDoc) error {
	a.format = 2
	if err := a.checkFormat(doc, ".zarray"); err != nil {
		return err
	}
	if err := a.parseShapes(doc, "shape", doc, "chunks"); err != nil {
		return err
	}
	et, err := parseV2DType(doc.raw("dtype"))
	if err != nil {
		return doc.errorf("dtype", "%v", err)
	}
	a.dtype, a.chain.bigEndian = et.dtype, et.bigEndian
	if a.fill, err = parseFill(doc.raw("fill_value"), a.dtype); err != nil {
		return doc.errorf("fill_value", "%v", err)
	}
	if a.chain.codecs, err = v2Compressor(doc.raw("compressor")); err != nil {
		return doc.errorf("compressor", "%v", err)
	}
	if err := v2Filters(doc.raw("filters")); err != nil {
		return doc.errorf("filters", "%v", err)
	}
	var order string
	if err := doc.get("order", &order, true); err != nil {
		return err
	}
	switch order {
	case "C":
	case "F":
		a.chain.order = reversedAxes(len(a.shape))
		if isIdentity(a.chain.order) {
			a.chain.order = nil
		}
	default:
		return doc.errorf("order", "order %q (want \"C\" or \"F\")", order)
	}
	a.keySep = "."
	if err := doc.get("dimension_separator", &a.keySep, false); err != nil {
		return err
	}
	if err := checkSeparator(a.keySep); err != nil {
		return doc.errorf("dimension_separator", "dimension_separator %w", err)
	}
	return nil
}

// checkSeparator is the one rule of a chunk key's separator, which zarr v2's
// dimension_separator, v3's chunk_key_encoding and the writer's Spec name:
// "." or "/".
func checkSeparator(s string) error {
	if s != "." && s != "/" {
		return fmt.Errorf("%q (want \".\" or \"/\")", s)
	}
	return nil
}

// checkFormat checks that the document's zarr_format is a.format.
func (a *Array) checkFormat(doc *metaDoc, name string) error {
	var format int
	if err := doc.get("zarr_format", &format, true); err != nil {
		return err
	}
	if format != a.format {
		return doc.errorf("zarr_format", "zarr_format %d in a %s (want %d)", format, name, a.format)
	}
	return nil
}

// v3Known lists the fields of a v3 array's zarr.json this reader knows.
var v3Known = []string{"zarr_format", "node_type", "shape", "data_type", "chunk_grid",
	"chunk_key_encoding", "fill_value", "codecs", "attributes", "dimension_names", "storage_transformers"}

// parseV3 reads an array's zarr.json.
func (a *Array) parseV3(doc *metaDoc) error {
	a.format = 3
	if err := a.checkFormat(doc, "zarr.json"); err != nil {
		return err
	}
	for key, f := range doc.fields {
		if slices.Contains(v3Known, key) {
			continue
		}
		// An extension field may be skipped only when it says so.
		var ext struct {
			MustUnderstand *bool `json:"must_understand"`
		}
		if json.Unmarshal(f.raw, &ext) != nil || ext.MustUnderstand == nil || *ext.MustUnderstand {
			return doc.errorf(key, "field %q is not supported (and does not say \"must_understand\": false)", key)
		}
	}
	var err error
	if a.dtype, err = parseV3DType(doc.raw("data_type")); err != nil {
		return doc.errorf("data_type", "%v", err)
	}
	grid, err := doc.object("chunk_grid")
	if err != nil {
		return err
	}
	var gridName string
	if err := grid.get("name", &gridName, true); err != nil {
		return err
	}
	if gridName != "regular" {
		return doc.errorf("chunk_grid", "chunk_grid %q is not supported (regular is)", gridName)
	}
	gridConfig, err := grid.object("configuration")
	if err != nil {
		return err
	}
	if err := a.parseShapes(doc, "shape", gridConfig, "chunk_shape"); err != nil {
		return err
	}
	if a.fill, err = parseFill(doc.raw("fill_value"), a.dtype); err != nil {
		return doc.errorf("fill_value", "%v", err)
	}
	if !doc.has("fill_value") {
		return doc.errorf("fill_value", "field \"fill_value\" is missing")
	}
	if err := a.parseKeyEncoding(doc); err != nil {
		return err
	}
	var st []json.RawMessage
	if err := doc.get("storage_transformers", &st, false); err != nil {
		return err
	}
	if len(st) > 0 {
		return doc.errorf("storage_transformers", "storage transformers are not supported")
	}
	var codecs []v3Codec
	if err := doc.get("codecs", &codecs, true); err != nil {
		return err
	}
	if a.chain, err = v3Chain(codecs, a.stored, a.dtype.Size(), false); err != nil {
		return doc.errorf("codecs", "%v", err)
	}
	a.attrs = doc.raw("attributes")
	if a.attrs == nil {
		a.attrs = json.RawMessage("{}")
	}
	return nil
}

// parseKeyEncoding reads chunk_key_encoding: "default" keys are "c/1/2/3",
// "v2" keys "1.2.3"; either may name its separator.
func (a *Array) parseKeyEncoding(doc *metaDoc) error {
	var enc struct {
		Name   string `json:"name"`
		Config struct {
			Separator *string `json:"separator"`
		} `json:"configuration"`
	}
	if err := doc.get("chunk_key_encoding", &enc, true); err != nil {
		return err
	}
	switch enc.Name {
	case "default":
		a.keyPrefix, a.keySep = "c", "/"
	case "v2":
		a.keySep = "."
	default:
		return doc.errorf("chunk_key_encoding", "chunk_key_encoding %q is not supported (default and v2 are)", enc.Name)
	}
	if s := enc.Config.Separator; s != nil {
		if err := checkSeparator(*s); err != nil {
			return doc.errorf("chunk_key_encoding", "separator %w", err)
		}
		a.keySep = *s
	}
	return nil
}

// parseShapes reads the array's shape from field shapeKey of doc and its
// chunk shape from field chunkKey of chunkDoc (the same document in v2, the
// chunk grid's configuration in v3).
func (a *Array) parseShapes(doc *metaDoc, shapeKey string, chunkDoc *metaDoc, chunkKey string) error {
	if err := doc.get(shapeKey, &a.shape, true); err != nil {
		return err
	}
	if err := chunkDoc.get(chunkKey, &a.stored, true); err != nil {
		return err
	}
	if len(a.shape) > maxRank {
		return doc.errorf(shapeKey, "%d axes; at most %d are supported", len(a.shape), maxRank)
	}
	for _, n := range a.shape {
		if n < 0 {
			return doc.errorf(shapeKey, "shape %v has a negative length", a.shape)
		}
	}
	if len(a.stored) != len(a.shape) {
		return chunkDoc.errorf(chunkKey, "chunk shape %v has %d axes but shape %v has %d", a.stored, len(a.stored), a.shape, len(a.shape))
	}
	for _, n := range a.stored {
		if n < 1 {
			return chunkDoc.errorf(chunkKey, "chunk shape %v has a length below 1", a.stored)
		}
	}
	return nil
}

// setUnits derives the decoded chunks' shape and grid, and whether reads
// may decode them in part, and checks that their counts and sizes fit the
// arithmetic of reads.
func (a *Array) setUnits() error {
	a.unit = a.stored
	if sh := a.chain.shard; sh != nil {
		a.unit = sh.innerShape
	}
	a.grid = make([]int, len(a.shape))
	a.shards = make([]int, len(a.shape))
	for k, n := range a.shape {
		a.grid[k] = (n + a.unit[k] - 1) / a.unit[k]
		a.shards[k] = (n + a.stored[k] - 1) / a.stored[k]
	}
	// The number of chunks is the byte size of a uint8 array with one
	// element per chunk: one overflow-checked product.
	units, _, unitsOK := lgruntime.KeyBytes(lgruntime.Uint8, a.grid, 1)
	bytes, _, bytesOK := lgruntime.KeyBytes(a.dtype, a.unit, 1)
	if !unitsOK || !bytesOK || units > math.MaxInt64/2 || bytes > maxChunkBytes {
		return fmt.Errorf("a chunk of %v or a grid of %v chunks is too large to read (chunks up to 2 GiB are)", a.unit, a.grid)
	}
	a.unitBytes = int(bytes)
	cStrides(a.unit, a.unitStrides[:len(a.unit)])
	_, lends := a.remote.(storage.Lender)
	switch sh := a.chain.shard; {
	case a.remote != nil && (!lends || sh != nil):
		// A remote chunk comes whole in one request: with no read-ahead
		// keeping it, extending a window decoded of it would fetch the
		// chunk again. (Inner chunks of shards are decoded whole too:
		// their read-ahead hints skip what the cache holds in any part.)
		a.partial = false
	case a.remote != nil && sh == nil:
		// The read-ahead lends the chunk it keeps: a window is decoded
		// of it, as of a local chunk, and extended from it again while
		// it keeps it (ReadAhead hints a chunk the cache holds in part).
		a.partial = a.chain.partial()
	case sh != nil:
		a.partial = sh.inner.partial()
	default:
		a.partial = a.chain.partial()
	}
	return nil
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

// raws recycles the buffers that hold chunks' stored bytes; a buffer
// belongs to one load between Get and Put.
var raws = sync.Pool{New: func() any { return new([]byte) }}

// chunkEntry is the cache key of decoded chunk number unit.
func (a *Array) chunkEntry(unit int64) cacheKey {
	return cacheKey{array: a.id, kind: decodedChunk, n: unit}
}

// indexEntry is the cache key of the index of shard number shard.
func (a *Array) indexEntry(shard int64) cacheKey {
	return cacheKey{array: a.id, kind: shardIndex, n: shard}
}

// load reads and decodes the entry of key: at least the bytes want of a
// decoded chunk, or a shard's index (whole). A chunk or shard that is not
// stored loads as nil (it reads as the fill value). A remote chunk stored
// as an uncompressed Blosc frame that the read-ahead lends is not copied:
// load returns the lent frame whole, and lent, which ends the lend. charge
// is the decode memory (decoding) that buf holds, which the cache gives
// back.
func (a *Array) load(ctx context.Context, key cacheKey, want window) (buf []byte, win window, lent func(), charge int64, err error) {
	if key.kind == shardIndex {
		var shard [maxRank]int
		n := len(a.shape)
		unravel(key.n, a.shards, shard[:n])
		sh := a.chain.shard
		need := int64(sh.indexLen) + sh.index.scratch(sh.indexLen, false, false)
		if err := decoding.acquire(need); err != nil {
			return nil, window{}, nil, 0, a.chunkError(shard[:n], nil, fmt.Errorf("index: %w", err))
		}
		buf, err := a.loadIndex(ctx, shard[:n])
		if buf != nil {
			charge = int64(sh.indexLen)
		}
		decoding.release(need - charge)
		return buf, window{0, sh.indexLen}, nil, charge, err
	}
	return a.loadUnit(ctx, key.n, nil, window{}, want)
}

// extend decodes the bytes of want that a decoded chunk's buffer buf
// lacks, which holds the window have of it already (Cache.get's protocol).
func (a *Array) extend(ctx context.Context, key cacheKey, buf []byte, have, want window) (window, error) {
	if key.kind != decodedChunk || buf == nil {
		return window{}, fmt.Errorf("zarr array %s: extending entry %+v (a bug)", a.dir, key)
	}
	out, win, _, _, err := a.loadUnit(ctx, key.n, buf, have, want)
	if err == nil && out == nil {
		var idx [maxRank]int
		unravel(key.n, a.grid, idx[:len(a.shape)])
		return window{}, a.chunkError(idx[:len(a.shape)], nil, errors.New("the chunk's file is gone since it was first read"))
	}
	return win, err
}

// loadUnit decodes the bytes of want that out lacks, of decoded chunk
// number unit, into out (a buffer from the cache holding the window have
// already, or nil, with have empty, to get one), and returns out and the
// window it then holds, which holds have and want. It writes nothing
// inside have. A first load (out nil) may return lent bytes instead (see
// load). It takes the decode memory (decoding) that a new buffer and the
// decoder's scratch need before either is allocated, and a chunk that
// needs more than the bound is an error; charge is what the new buffer
// holds of it when one is returned.
func (a *Array) loadUnit(ctx context.Context, unit int64, out []byte, have, want window) (buf []byte, win window, lent func(), charge int64, err error) {
	if !a.partial {
		want = window{0, a.unitBytes}
	}
	n := len(a.shape)
	var idx [maxRank]int
	unravel(unit, a.grid, idx[:n])
	c := &a.chain
	var place innerPlace
	if sh := a.chain.shard; sh != nil {
		// The shard's index first: it is loaded, and its memory taken,
		// while this load holds none.
		c = &sh.inner
		if place, err = a.locate(ctx, idx[:n]); err != nil || !place.stored {
			return nil, window{}, nil, 0, err // not stored: an empty inner chunk, or a shard not written
		}
	}
	extending := have.lo < have.hi
	need := c.scratch(a.unitBytes, extending, !extending && a.partial && want.hi <= a.unitBytes/2)
	if out == nil {
		need += int64(a.unitBytes)
	}
	if err := decoding.acquire(need); err != nil {
		return nil, window{}, nil, 0, &ChunkError{Array: a.dir, Chunk: a.ChunkName(unit), Err: err}
	}
	fresh := out == nil
	switch {
	case a.chain.shard != nil:
		buf, win, err = a.loadInner(ctx, place, out, have, want)
	case a.remote != nil:
		buf, win, lent, err = a.loadRemoteChunk(ctx, idx[:n], out, have, want)
	default:
		buf, win, err = a.loadChunk(idx[:n], out, have, want)
	}
	if fresh && buf != nil && lent == nil && err == nil {
		charge = int64(a.unitBytes)
	}
	decoding.release(need - charge)
	return buf, win, lent, charge, err
}

// innerPlace is where an inner chunk of a sharded array lies: its shard's
// and its own grid index, and its bytes in the shard, when stored.
type innerPlace struct {
	shard, inner [maxRank]int
	off, size    int64
	stored       bool
}

// locate finds the inner chunk at grid index idx of a sharded array
// through its shard's index (cached).
func (a *Array) locate(ctx context.Context, idx []int) (innerPlace, error) {
	var p innerPlace
	n := len(idx)
	sh := a.chain.shard
	for k := range n {
		p.shard[k], p.inner[k] = idx[k]/sh.perShard[k], idx[k]%sh.perShard[k]
	}
	ie, err := a.cache.get(ctx, a.indexEntry(ravel(p.shard[:n], a.shards)), a, window{0, sh.indexLen})
	if err != nil {
		return p, err
	}
	p.off, p.size, p.stored = sh.place(ie.data, p.inner[:n])
	a.cache.release(ie)
	return p, nil
}

// loadInner is loadUnit for the inner chunk of a sharded array at place p
// (locate), which is stored: it reads and decodes it.
func (a *Array) loadInner(ctx context.Context, p innerPlace, out []byte, have, want window) ([]byte, window, error) {
	n := len(a.shape)
	sh := a.chain.shard
	shard, inner, off, size := p.shard, p.inner, p.off, p.size
	if size > a.storedLimit() {
		return nil, window{}, a.chunkError(shard[:n], inner[:n], a.errStoredSize(size))
	}
	key := a.key(shard[:n])
	if l, ok := a.remote.(storage.Lender); ok {
		raw, release, err := l.LendRange(ctx, key, off, size)
		if release != nil {
			defer release()
		}
		if err != nil {
			return nil, window{}, a.chunkError(shard[:n], inner[:n], err)
		}
		if release != nil {
			return a.decode(&sh.inner, raw, out, have, want, shard[:n], inner[:n])
		}
	}
	buf := raws.Get().(*[]byte)
	defer raws.Put(buf)
	var err error
	if *buf, err = a.readRange(ctx, key, *buf, off, size); err != nil {
		return nil, window{}, a.chunkError(shard[:n], inner[:n], err)
	}
	return a.decode(&sh.inner, *buf, out, have, want, shard[:n], inner[:n])
}

// loadChunk reads and decodes the bytes of want that out lacks (it holds
// have; nil: a new buffer) of the chunk at grid index idx of an array
// without shards, and returns out and the window it then holds. A chunk
// stored as it decodes (no codec, or an uncompressed Blosc frame, the
// common case for EM data under blosc-lz4) is read straight into its
// buffer, and only the bytes of want outside have: a box that crosses a
// chunk boundary reads the suffix it needs of the first chunk, not the
// chunk up to that suffix's end.
func (a *Array) loadChunk(idx []int, out []byte, have, want window) ([]byte, window, error) {
	f, size, err := a.openStored(idx)
	if f == nil {
		return nil, window{}, err
	}
	defer f.Close()
	if size > a.storedLimit() {
		return nil, window{}, a.chunkError(idx, nil, a.errStoredSize(size))
	}
	if skip, ok := a.chain.storedAsIs(size, a.unitBytes); ok {
		if out == nil {
			out = a.cache.buffer(a.unitBytes)
		}
		win, ok, err := readStored(f, out, skip, have, want)
		if err != nil {
			return nil, window{}, a.chunkError(idx, nil, readError(err, size))
		}
		if ok {
			return out, win, nil
		}
	}
	buf := raws.Get().(*[]byte)
	defer raws.Put(buf)
	if *buf, err = readAt(f, *buf, 0, size); err != nil {
		return nil, window{}, a.chunkError(idx, nil, err)
	}
	return a.decode(&a.chain, *buf, out, have, want, idx, nil)
}

// readStored reads into out, after its headroom, the bytes of want that
// it lacks (it holds have) of a chunk stored as it decodes in f, after
// skip bytes of a Blosc header, and returns the window out then holds. A
// first read (have empty) reads the header into the headroom, where later
// ones find it. ok is false, with nothing read but the header, when the
// header is not a stored frame's: the chunk must be decoded.
func readStored(f *os.File, out []byte, skip int, have, want window) (win window, ok bool, err error) {
	if have.lo >= have.hi {
		if skip > 0 {
			if _, err := f.ReadAt(out[headroom-skip:headroom], 0); err != nil {
				return window{}, false, err
			}
		}
		have = window{want.lo, want.lo}
	}
	if skip > 0 && !isStoredFrame(out, len(out)-headroom) {
		return window{}, false, nil
	}
	for _, r := range []window{{want.lo, have.lo}, {have.hi, want.hi}} {
		if r.lo < r.hi {
			if _, err := f.ReadAt(out[headroom+r.lo:headroom+r.hi], int64(skip+r.lo)); err != nil {
				return window{}, false, err
			}
		}
	}
	return window{min(have.lo, want.lo), max(have.hi, want.hi)}, true, nil
}

// loadRemoteChunk is loadChunk for a remote array: one request reads the
// stored chunk whole (a ranged read of a chunk stored as it decodes would
// save bytes but cost a request for its size first), or the read-ahead
// lends it, which decodes it from the bytes it fetched, without a copy. A
// first load (out nil) of a lent chunk stored as an uncompressed Blosc
// frame returns the frame itself, whose header takes the headroom's
// place, and lent, which ends the lend: the cache holds it as it is.
func (a *Array) loadRemoteChunk(ctx context.Context, idx []int, out []byte, have, want window) ([]byte, window, func(), error) {
	key := a.key(idx)
	if l, ok := a.remote.(storage.Lender); ok {
		raw, release, err := l.Lend(ctx, key)
		if release != nil && out == nil && a.storedFrame(raw) {
			a.noteStored(len(raw))
			return raw, window{0, a.unitBytes}, release, nil
		}
		if release != nil {
			defer release()
		}
		if release != nil || err != nil {
			buf, win, err := a.decodeRemote(idx, raw, err, out, have, want)
			return buf, win, nil, err
		}
	}
	buf := raws.Get().(*[]byte)
	defer raws.Put(buf)
	raw, err := a.remote.ReadAll(ctx, key, *buf, a.storedLimit())
	if err == nil {
		*buf = raw
	}
	out, win, err := a.decodeRemote(idx, raw, err, out, have, want)
	return out, win, nil, err
}

// storedFrame reports whether raw, a remote chunk's stored bytes, is an
// uncompressed Blosc frame that holds the decoded chunk after its header.
func (a *Array) storedFrame(raw []byte) bool {
	skip, ok := a.chain.storedAsIs(int64(len(raw)), a.unitBytes)
	return ok && skip == headroom && isStoredFrame(raw, a.unitBytes)
}

// decodeRemote decodes the stored bytes raw of remote chunk idx, read with
// error err, as loadChunk does, and notes their size for ReadAhead.
func (a *Array) decodeRemote(idx []int, raw []byte, err error, out []byte, have, want window) ([]byte, window, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return nil, window{}, nil // never written: the fill value
	}
	if err != nil {
		return nil, window{}, a.chunkError(idx, nil, err)
	}
	a.noteStored(len(raw))
	return a.decode(&a.chain, raw, out, have, want, idx, nil)
}

// noteStored records that a chunk of this array is stored in n bytes: the
// largest is what ReadAhead expects of chunks it hints.
func (a *Array) noteStored(n int) {
	for {
		seen := a.storedMax.Load()
		if int64(n) <= seen || a.storedMax.CompareAndSwap(seen, int64(n)) {
			return
		}
	}
}

// readRange reads n bytes at offset off of the object at key into buf
// (grown as needed): a local file, or a remote object.
func (a *Array) readRange(ctx context.Context, key string, buf []byte, off, n int64) ([]byte, error) {
	if a.remote == nil {
		return readFile(filepath.Join(a.dir, filepath.FromSlash(key)), buf, off, n)
	}
	if n > maxChunkBytes {
		return buf, fmt.Errorf("%d bytes is more than a chunk may hold", n)
	}
	buf = slices.Grow(buf[:0], int(n))[:n]
	return buf, a.remote.ReadAt(ctx, key, buf, off)
}

// openStored opens the file of the chunk or shard at grid index idx and
// returns its size. A file that does not exist gives a nil file, and the
// error of missing.
func (a *Array) openStored(idx []int) (*os.File, int64, error) {
	f, err := os.Open(filepath.Join(a.dir, filepath.FromSlash(a.key(idx))))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, a.missing(idx)
	}
	if err != nil {
		return nil, 0, a.chunkError(idx, nil, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, a.chunkError(idx, nil, err)
	}
	return f, st.Size(), nil
}

// isStoredFrame reports whether out holds, in its headroom and data, a
// Blosc frame that stores n bytes uncompressed.
func isStoredFrame(out []byte, n int) bool {
	h, err := blosc.ParseHeader(out)
	return err == nil && h.Stored() && h.NBytes == n
}

// decode decodes the bytes of want that out lacks (it holds have; nil: a
// new buffer from the cache) of a chunk from its stored bytes src with c,
// and returns out and the window it then holds.
func (a *Array) decode(c *chain, src, out []byte, have, want window, idx, inner []int) ([]byte, window, error) {
	if out == nil {
		out = a.cache.buffer(a.unitBytes)
	}
	d := decoders.Get().(*decoder)
	defer decoders.Put(d)
	win, err := c.decodeRange(d, out[headroom:], src, have, want, a.unit, a.dtype.Size())
	if err != nil {
		// The chunk's bytes are bad: a source may skip the sample
		// (on_error: skip), as it may not a chunk it failed to read.
		return nil, window{}, a.chunkError(idx, inner, &lgruntime.BadSampleError{Err: err})
	}
	return out, win, nil
}

// missing handles a chunk or shard file that does not exist: the chunk was
// never written and reads as the fill value, unless the array's directory
// is gone too (a store removed or unmounted while in use).
func (a *Array) missing(idx []int) error {
	if _, err := os.Stat(a.dir); err != nil {
		return a.chunkError(idx, nil, fmt.Errorf("the array's directory is gone: %w", err))
	}
	return nil
}

// loadIndex reads and checks the index of the shard at grid index shard.
// A remote shard's index at its end comes with the shard's size in one
// request (a suffix range); one at its start takes two, the size first.
func (a *Array) loadIndex(ctx context.Context, shard []int) ([]byte, error) {
	sh := a.chain.shard
	key := a.key(shard)
	var size int64
	var raw []byte
	var err error
	switch {
	case a.remote != nil && !sh.indexAtStart:
		raw = make([]byte, sh.indexBytes)
		size, err = a.remote.ReadTail(ctx, key, raw)
		if errors.Is(err, storage.ErrShort) {
			err = nil // the size, checked below, says so
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("read the index: %w", err)
		}
	case a.remote != nil:
		size, err = a.remote.Size(ctx, key)
	default:
		var f *os.File
		if f, size, err = a.openStored(shard); f == nil {
			return nil, err
		}
		f.Close()
	}
	if a.remote != nil && errors.Is(err, fs.ErrNotExist) {
		return nil, nil // a shard never written: its inner chunks are the fill value
	}
	if err != nil {
		return nil, a.chunkError(shard, nil, err)
	}
	if size < int64(sh.indexBytes) {
		return nil, a.chunkError(shard, nil, fmt.Errorf("shard of %d bytes, shorter than its %d-byte index", size, sh.indexBytes))
	}
	if raw == nil {
		at := int64(0)
		if !sh.indexAtStart {
			at = size - int64(sh.indexBytes)
		}
		if raw, err = a.readRange(ctx, key, nil, at, int64(sh.indexBytes)); err != nil {
			return nil, a.chunkError(shard, nil, fmt.Errorf("read the index: %w", err))
		}
	}
	out := a.cache.buffer(sh.indexLen)
	index := out[headroom:]
	d := decoders.Get().(*decoder)
	defer decoders.Put(d)
	if err := sh.index.decode(d, index, raw, sh.indexShape, 8); err != nil {
		return nil, a.chunkError(shard, nil, fmt.Errorf("index: %w", &lgruntime.BadSampleError{Err: err}))
	}
	for i := range int64(len(index) / 16) {
		off, n, ok := shardEntry(index, i)
		if !ok {
			continue
		}
		if off > uint64(size) || n > uint64(size)-off {
			inner := make([]int, len(shard))
			unravel(i, sh.perShard, inner)
			return nil, a.chunkError(shard, inner, fmt.Errorf("index places it at bytes [%d, %d), past the shard's %d", off, off+n, size))
		}
	}
	return out, nil
}

// readFile reads n bytes at offset off of file into buf (grown as needed).
func readFile(file string, buf []byte, off, n int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	return readAt(f, buf, off, n)
}

// readAt reads n bytes at offset off of f into buf (grown as needed).
func readAt(f *os.File, buf []byte, off, n int64) ([]byte, error) {
	if n > maxChunkBytes {
		return buf, fmt.Errorf("%d bytes is more than a chunk may hold", n)
	}
	buf = slices.Grow(buf[:0], int(n))[:n]
	if _, err := f.ReadAt(buf, off); err != nil {
		return buf, readError(err, off+n)
	}
	return buf, nil
}

// readError explains a read that hit the end of a file before byte end.
func readError(err error, end int64) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("file ends before byte %d (truncated while in use?)", end)
	}
	return err
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
