package zarr

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"

	lgruntime "github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/storage"
)

// sharding is a sharding_indexed codec: a chunk of the array (a shard) is a
// grid of inner chunks, each encoded by inner, plus an index of where each
// one lies in the shard, encoded by index.
type sharding struct {
	innerShape   []int
	perShard     []int // inner chunks along each axis of a shard
	inner        chain
	index        chain
	indexShape   []int // perShard, then 2: an (offset, size) pair per inner chunk
	indexAtStart bool
	indexLen     int // the decoded index's size: 16 bytes per inner chunk
	indexBytes   int // the encoded index's size
}

// parseSharding reads a sharding_indexed configuration for shards of shape
// shard.
func parseSharding(raw json.RawMessage, shard []int, elem int) (*sharding, error) {
	var cfg struct {
		ChunkShape    []int     `json:"chunk_shape"`
		Codecs        []v3Codec `json:"codecs"`
		IndexCodecs   []v3Codec `json:"index_codecs"`
		IndexLocation string    `json:"index_location"`
	}
	if err := strictJSON(raw, &cfg); err != nil {
		return nil, err
	}
	if len(cfg.ChunkShape) != len(shard) {
		return nil, fmt.Errorf("chunk_shape %v has %d axes, the array %d", cfg.ChunkShape, len(cfg.ChunkShape), len(shard))
	}
	sh := &sharding{innerShape: cfg.ChunkShape, perShard: make([]int, len(shard))}
	for k, n := range cfg.ChunkShape {
		if n < 1 || shard[k]%n != 0 {
			return nil, fmt.Errorf("chunk_shape %v does not divide the shard shape %v", cfg.ChunkShape, shard)
		}
		sh.perShard[k] = shard[k] / n
	}
	sh.indexShape = append(slices.Clone(sh.perShard), 2)
	// The decoded index: a uint64 pair per inner chunk, read whole, so it
	// is held to a chunk's bound.
	indexLen, _, ok := lgruntime.KeyBytes(lgruntime.Uint64, sh.indexShape, 1)
	if !ok || indexLen > maxChunkBytes {
		return nil, fmt.Errorf("a shard of %v inner chunks has an index too large to read (indexes up to 2 GiB are)", sh.perShard)
	}
	sh.indexLen = int(indexLen)
	switch cfg.IndexLocation {
	case "", "end":
	case "start":
		sh.indexAtStart = true
	default:
		return nil, fmt.Errorf("index_location %q (want \"start\" or \"end\")", cfg.IndexLocation)
	}
	var err error
	if sh.inner, err = v3Chain(cfg.Codecs, cfg.ChunkShape, elem, true); err != nil {
		return nil, fmt.Errorf("codecs: %w", err)
	}
	if sh.index, err = v3Chain(cfg.IndexCodecs, sh.indexShape, 8, true); err != nil {
		return nil, fmt.Errorf("index_codecs: %w", err)
	}
	sh.indexBytes = sh.indexLen
	for _, c := range sh.index.codecs {
		if c.kind != codecCRC32C {
			return nil, fmt.Errorf("index_codecs: %q is not supported (an index is read at a fixed size: bytes and crc32c only)", c.name)
		}
		sh.indexBytes += 4
	}
	return sh, nil
}

// place returns where inner chunk inner (its index in the shard's grid of
// inner chunks) lies in its shard, by the shard's decoded index (nil for
// a shard not stored): its first byte and size; ok is false for an empty
// inner chunk, which reads as the fill value.
func (sh *sharding) place(index []byte, inner []int) (off, size int64, ok bool) {
	if index == nil {
		return 0, 0, false
	}
	o, n, ok := shardEntry(index, ravel(inner, sh.perShard))
	return int64(o), int64(n), ok
}

// shardEntry reads entry i (an inner chunk's number in C order) of a
// shard's decoded index: the inner chunk's first byte and size; ok is
// false for the entry of an empty inner chunk (both all ones).
func shardEntry(index []byte, i int64) (off, size uint64, ok bool) {
	off, size = binary.LittleEndian.Uint64(index[16*i:]), binary.LittleEndian.Uint64(index[16*i+8:])
	if off == math.MaxUint64 && size == math.MaxUint64 {
		return 0, 0, false
	}
	return off, size, true
}

// indexEntry is the cache key of the index of shard number shard.
func (a *Array) indexEntry(shard int64) cacheKey {
	return cacheKey{array: a.id, kind: shardIndex, n: shard}
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
