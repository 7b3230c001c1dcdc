package zarr

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	lgruntime "github.com/loadergen/loadergen/runtime"
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
