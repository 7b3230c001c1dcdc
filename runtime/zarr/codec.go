package zarr

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"slices"
	"sync"

	"github.com/loadergen/loadergen/internal/strided"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/zarr/blosc"
	"github.com/loadergen/loadergen/runtime/zarr/internal/compress"
)

// chain is how a chunk's elements became its stored bytes, as one
// description for both formats: an axis order, a byte order, and
// bytes-to-bytes codecs. Sharded arrays add a shard layer above it.
type chain struct {
	// order is the axis order of the stored elements: stored axis i is the
	// chunk's axis order[i] (v2's order "F" reverses the axes; v3's
	// transpose codec gives it). nil means C order.
	order     []int
	bigEndian bool         // stored elements are big-endian
	codecs    []bytesCodec // in encoding order; decoding runs them backwards
	shard     *sharding    // non-nil: a chunk is a shard of inner chunks
}

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

// bytesCodec is a bytes-to-bytes codec.
type bytesCodec struct {
	name string // as the metadata spells it, for errors
	kind codecKind
}

type codecKind uint8

const (
	codecCRC32C codecKind = iota + 1
	codecBlosc
	codecZstd
	codecGzip
	codecZlib
	codecLZ4 // numcodecs' framing: a 4-byte little-endian size, then one LZ4 block
)

// compresses reports whether the codec's output size says nothing about
// the size of what it encoded.
func (k codecKind) compresses() bool { return k != codecCRC32C }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkCodecs refuses chains this decoder cannot size: each compressor
// decodes straight into a buffer of the exact size it must produce, which
// is known only when no other compressor encoded before it.
func checkCodecs(codecs []bytesCodec) error {
	seen := ""
	for _, c := range codecs {
		if !c.kind.compresses() {
			continue
		}
		if seen != "" {
			return fmt.Errorf("codecs %q and %q both compress; one compressor per chain is supported", seen, c.name)
		}
		seen = c.name
	}
	return nil
}

// storedAsIs reports whether a stored chunk of size bytes may hold a chunk
// of n bytes as they decode, after skip bytes: with no codec, or with Blosc
// alone when the frame is as long as an uncompressed one (the caller checks
// its header). Transposes and byte swaps rule it out.
func (c *chain) storedAsIs(size int64, n int) (skip int, ok bool) {
	if c.order != nil || c.bigEndian || c.shard != nil {
		return 0, false
	}
	switch {
	case len(c.codecs) == 0 && size == int64(n):
		return 0, true
	case len(c.codecs) == 1 && c.codecs[0].kind == codecBlosc && size == int64(n+blosc.HeaderSize):
		return blosc.HeaderSize, true
	}
	return 0, false
}

// decoder holds one goroutine's scratch for decoding chunks.
type decoder struct {
	blosc  blosc.Decoder
	stage  []byte // codec output before the last step
	stored []byte // stored elements, before transposing
	whole  []byte // a whole chunk decoded aside, to extend a prefix
}

// decoders recycles decoders among loads; a decoder belongs to one load
// between Get and Put.
var decoders = sync.Pool{New: func() any { return new(decoder) }}

// decode turns a chunk's stored bytes src into its elements, C order and
// little-endian, in out, whose length is the chunk's size in bytes.
func (c *chain) decode(d *decoder, out, src []byte, shape []int, elem int) error {
	stored := out
	if c.order != nil {
		d.stored = slices.Grow(d.stored[:0], len(out))
		stored = d.stored[:len(out)]
	}
	if err := c.decodeBytes(d, stored, src); err != nil {
		return err
	}
	if c.bigEndian {
		swapBytes(stored, elem)
	}
	if c.order != nil {
		return transpose(out, stored, shape, c.order, elem)
	}
	return nil
}

// prefixable reports whether a prefix of a chunk's C-order bytes can be
// decoded without the rest: its elements are stored in C order, and its
// codecs are none, or one compressor that can stop early (Blosc, zstd,
// gzip, zlib; not numcodecs' LZ4, one block decoded whole) with checksums
// only of the compressed bytes (crc32c after the compressor, which are
// checked on the whole stored chunk). A checksum of the decoded bytes
// could only be checked on all of them.
func (c *chain) prefixable() bool {
	if c.order != nil || c.shard != nil {
		return false
	}
	compressed := false
	for _, cd := range c.codecs {
		switch cd.kind {
		case codecCRC32C:
			if !compressed {
				return false
			}
		case codecBlosc, codecZstd, codecGzip, codecZlib:
			compressed = true
		default:
			return false
		}
	}
	return true
}

// decodeRange decodes bytes [from, n) of a chunk's elements (C order,
// little-endian) from its stored bytes src into out[from:n], with n >= need,
// and returns n; out is the whole chunk's size and holds bytes [0, from)
// already, which it does not write. A chain that is not prefixable decodes
// the whole chunk (from is then 0: no prefix of it was ever held). A
// compressed stream cut short leaves its checksum unverified (see
// compress.ZstdRange); a later read of the whole chunk verifies it.
func (c *chain) decodeRange(d *decoder, out, src []byte, from, need int, shape []int, elem int) (int, error) {
	if need >= len(out) && from == 0 || !c.prefixable() {
		if from != 0 {
			return 0, fmt.Errorf("a part of a chunk that decodes only whole (a bug)")
		}
		return len(out), c.decode(d, out, src, shape, elem)
	}
	need = min(need, len(out))
	if from >= need {
		return from, nil
	}
	buf := src
	comp := codecKind(0)
	for i := len(c.codecs) - 1; i >= 0; i-- {
		cd := c.codecs[i]
		if cd.kind != codecCRC32C {
			comp = cd.kind
			break
		}
		if len(buf) < 4 {
			return 0, fmt.Errorf("crc32c: %d bytes, too short for a checksum", len(buf))
		}
		m := len(buf) - 4
		if got, want := crc32.Checksum(buf[:m], castagnoli), binary.LittleEndian.Uint32(buf[m:]); got != want {
			return 0, fmt.Errorf("crc32c: checksum %08x, the data's is %08x", want, got)
		}
		buf = buf[:m]
	}
	if stream := comp == codecZstd || comp == codecGzip || comp == codecZlib; stream && from > 0 {
		// Extending a stream's prefix decodes it again from its start:
		// decode the whole, aside, with the whole-buffer decoder (faster
		// than the streaming one, and it verifies the checksum), and keep
		// its tail, so that the chunk is never extended again.
		d.whole = slices.Grow(d.whole[:0], len(out))
		w := d.whole[:len(out)]
		if err := c.decode(d, w, src, shape, elem); err != nil {
			return 0, err
		}
		copy(out[from:], w[from:])
		return len(out), nil
	} else if stream && need > len(out)/2 {
		// A stream decodes a prefix through a streaming decoder, about
		// 0.8 x the speed of the whole-buffer one for libzstd
		// (BenchmarkZstdRange), and a prefix that a later read extends
		// costs a whole decode more. Past half the chunk the whole is the
		// better bet (one cold epoch of the big store, zstd-6: 1.09 x the
		// crops/s of whole decodes with this half, 0.98 x with three
		// quarters); it also verifies the stream's checksum.
		return len(out), c.decode(d, out, src, shape, elem)
	}
	n := need
	var err error
	switch comp {
	case 0:
		if len(buf) != len(out) {
			return 0, fmt.Errorf("%d bytes, expected %d", len(buf), len(out))
		}
		copy(out[from:need], buf[from:need])
	case codecBlosc:
		n, err = d.blosc.DecodeRange(out, buf, from, need)
	case codecZstd:
		err = compress.ZstdRange(out, buf, from, need)
	case codecGzip:
		err = compress.GzipRange(out, buf, from, need)
	case codecZlib:
		err = compress.ZlibRange(out, buf, from, need)
	}
	if err != nil {
		for _, cd := range c.codecs {
			if cd.kind == comp {
				return 0, fmt.Errorf("%s: %w", cd.name, err)
			}
		}
		return 0, err
	}
	n -= n % elem // whole elements only; need is a multiple of elem
	if c.bigEndian {
		swapBytes(out[from:n], elem)
	}
	return n, nil
}

// decodeBytes undoes the bytes-to-bytes codecs of src into exactly dst.
func (c *chain) decodeBytes(d *decoder, dst, src []byte) error {
	if len(dst) == 0 {
		return nil
	}
	buf := src
	for i := len(c.codecs) - 1; i >= 0; i-- {
		cd := c.codecs[i]
		if cd.kind == codecCRC32C {
			if len(buf) < 4 {
				return fmt.Errorf("crc32c: %d bytes, too short for a checksum", len(buf))
			}
			n := len(buf) - 4
			if got, want := crc32.Checksum(buf[:n], castagnoli), binary.LittleEndian.Uint32(buf[n:]); got != want {
				return fmt.Errorf("crc32c: checksum %08x, the data's is %08x", want, got)
			}
			buf = buf[:n]
			continue
		}
		// The compressor's input was the chunk grown by each checksum
		// before it (checkCodecs keeps other compressors out).
		size := len(dst)
		for _, before := range c.codecs[:i] {
			if before.kind == codecCRC32C {
				size += 4
			}
		}
		out := dst
		if size != len(dst) {
			d.stage = slices.Grow(d.stage[:0], size)
			out = d.stage[:size]
		}
		if err := decodeCompressed(d, cd.kind, out, buf); err != nil {
			return fmt.Errorf("%s: %w", cd.name, err)
		}
		buf = out
	}
	if len(buf) != len(dst) {
		return fmt.Errorf("%d bytes, expected %d", len(buf), len(dst))
	}
	if &buf[0] != &dst[0] {
		copy(dst, buf)
	}
	return nil
}

// decodeCompressed decodes src, compressed as kind, into exactly dst.
func decodeCompressed(d *decoder, kind codecKind, dst, src []byte) error {
	switch kind {
	case codecBlosc:
		return d.blosc.Decode(dst, src)
	case codecZstd:
		return compress.Zstd(dst, src)
	case codecGzip:
		return compress.Gzip(dst, src)
	case codecZlib:
		return compress.Zlib(dst, src)
	case codecLZ4:
		if len(src) < 4 {
			return fmt.Errorf("%d bytes, too short for the size header", len(src))
		}
		if n := binary.LittleEndian.Uint32(src); int64(n) != int64(len(dst)) {
			return fmt.Errorf("header says %d bytes, expected %d", n, len(dst))
		}
		return compress.LZ4Block(dst, src[4:])
	}
	return fmt.Errorf("codec kind %d has no decoder", kind)
}

// swapBytes reverses the bytes of each elem-byte element of b.
func swapBytes(b []byte, elem int) {
	switch elem {
	case 2:
		for i := 0; i+1 < len(b); i += 2 {
			binary.LittleEndian.PutUint16(b[i:], binary.BigEndian.Uint16(b[i:]))
		}
	case 4:
		for i := 0; i+3 < len(b); i += 4 {
			binary.LittleEndian.PutUint32(b[i:], binary.BigEndian.Uint32(b[i:]))
		}
	case 8:
		for i := 0; i+7 < len(b); i += 8 {
			binary.LittleEndian.PutUint64(b[i:], binary.BigEndian.Uint64(b[i:]))
		}
	}
}

// transpose writes the elements of stored, held in the axis order order,
// to out in C order of shape.
func transpose(out, stored []byte, shape, order []int, elem int) error {
	n := len(shape)
	var storedShape, storedStrides, src, dst [maxRank]int
	for i, ax := range order {
		storedShape[i] = shape[ax]
	}
	cStrides(storedShape[:n], storedStrides[:n])
	for i, ax := range order {
		src[ax] = storedStrides[i]
	}
	cStrides(shape, dst[:n])
	to, err := strided.New(out, elem, 0, shape, dst[:n])
	if err != nil {
		return fmt.Errorf("transposed chunk: %w", err)
	}
	from, err := strided.New(stored, elem, 0, shape, src[:n])
	if err != nil {
		return fmt.Errorf("stored chunk of axis order %v: %w", order, err)
	}
	copyBox(&to, &from)
	return nil
}

// ---------------------------------------------------------------- zarr v2

// v2Compressors are the compressors of .zarray files this package reads,
// by numcodecs' id.
var v2Compressors = map[string]codecKind{
	"blosc": codecBlosc, "zstd": codecZstd, "gzip": codecGzip, "zlib": codecZlib, "lz4": codecLZ4,
}

// v2Compressor reads a .zarray's compressor (null or {"id": ...}).
func v2Compressor(raw json.RawMessage) ([]bytesCodec, error) {
	if isNull(raw) {
		return nil, nil
	}
	var c struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &c); err != nil || c.ID == "" {
		return nil, fmt.Errorf("compressor %s: want null or an object with an \"id\"", raw)
	}
	kind, ok := v2Compressors[c.ID]
	if !ok {
		return nil, fmt.Errorf("compressor %q is not supported (blosc, zstd, gzip, zlib, lz4 and null are)", c.ID)
	}
	return []bytesCodec{{name: c.ID, kind: kind}}, nil
}

// v2Filters accepts only an absent, null or empty filter list.
func v2Filters(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var fs []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &fs); err != nil {
		return fmt.Errorf("filters %s: want null or a list of objects with an \"id\"", raw)
	}
	if len(fs) > 0 {
		return fmt.Errorf("filter %q is not supported (only arrays without filters are)", fs[0].ID)
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// ---------------------------------------------------------------- zarr v3

// v3Supported names the v3 codecs this package reads, for errors: the
// array-to-array and array-to-bytes ones, then v3BytesCodecs.
const v3Supported = "transpose, bytes, sharding_indexed, blosc, gzip, zstd and crc32c"

// v3BytesCodecs are the bytes-to-bytes codecs of zarr.json files this
// package reads, by name.
var v3BytesCodecs = map[string]codecKind{
	"blosc": codecBlosc, "zstd": codecZstd, "gzip": codecGzip, "crc32c": codecCRC32C,
}

// v3Codec is one entry of a zarr.json codec list: {"name", "configuration"}
// or, for a codec without configuration, its name alone.
type v3Codec struct {
	Name   string          `json:"name"`
	Config json.RawMessage `json:"configuration"`
}

func (c *v3Codec) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &c.Name)
	}
	type plain v3Codec
	return json.Unmarshal(b, (*plain)(c))
}

// v3Chain builds the chain of a v3 codec list for chunks of rank n and
// element size elem: array-to-array codecs (transpose), exactly one
// array-to-bytes codec (bytes or sharding_indexed), then bytes-to-bytes
// codecs. inShard is set for the codecs inside a shard.
func v3Chain(codecs []v3Codec, chunk []int, elem int, inShard bool) (chain, error) {
	var c chain
	n := len(chunk)
	i := 0
	for ; i < len(codecs) && codecs[i].Name == "transpose"; i++ {
		order, err := transposeOrder(codecs[i].Config, n)
		if err != nil {
			return c, err
		}
		if c.order == nil {
			c.order = order
		} else { // stored axis j is the previous order's axis order[j]
			composed := make([]int, n)
			for j, ax := range order {
				composed[j] = c.order[ax]
			}
			c.order = composed
		}
	}
	if c.order != nil && isIdentity(c.order) {
		c.order = nil
	}
	if i == len(codecs) {
		return c, fmt.Errorf("codecs: no array-to-bytes codec (bytes or sharding_indexed)")
	}
	switch ab := codecs[i]; ab.Name {
	case "bytes":
		var cfg struct {
			Endian string `json:"endian"`
		}
		if err := strictJSON(ab.Config, &cfg); err != nil {
			return c, fmt.Errorf("codec bytes: %w", err)
		}
		switch {
		case cfg.Endian == "big":
			c.bigEndian = elem > 1
		case cfg.Endian == "little", cfg.Endian == "" && elem == 1:
		case cfg.Endian == "":
			return c, fmt.Errorf("codec bytes: endian is required for %d-byte elements (\"little\" or \"big\")", elem)
		default:
			return c, fmt.Errorf("codec bytes: endian %q (want \"little\" or \"big\")", cfg.Endian)
		}
	case "sharding_indexed":
		if inShard {
			return c, fmt.Errorf("codec sharding_indexed inside a shard: nested sharding is not supported")
		}
		if c.order != nil {
			return c, fmt.Errorf("codec transpose before sharding_indexed is not supported (put it inside the shard's codecs)")
		}
		sh, err := parseSharding(ab.Config, chunk, elem)
		if err != nil {
			return c, fmt.Errorf("codec sharding_indexed: %w", err)
		}
		c.shard = sh
	default:
		return c, fmt.Errorf("codec %q where bytes or sharding_indexed must come (supported: %s)", ab.Name, v3Supported)
	}
	for _, bc := range codecs[i+1:] {
		kind, ok := v3BytesCodecs[bc.Name]
		if !ok {
			return c, fmt.Errorf("codec %q is not supported (supported: %s)", bc.Name, v3Supported)
		}
		c.codecs = append(c.codecs, bytesCodec{name: bc.Name, kind: kind})
	}
	if c.shard != nil && len(c.codecs) > 0 {
		return c, fmt.Errorf("codec %q after sharding_indexed is not supported (shards are read in parts)", c.codecs[0].name)
	}
	return c, checkCodecs(c.codecs)
}

// transposeOrder reads a transpose codec's order: a permutation of the axes,
// or the older "C" and "F".
func transposeOrder(raw json.RawMessage, n int) ([]int, error) {
	var cfg struct {
		Order json.RawMessage `json:"order"`
	}
	if err := strictJSON(raw, &cfg); err != nil {
		return nil, fmt.Errorf("codec transpose: %w", err)
	}
	var name string
	if json.Unmarshal(cfg.Order, &name) == nil {
		switch name {
		case "C":
			return identityAxes(n), nil
		case "F":
			return reversedAxes(n), nil
		}
		return nil, fmt.Errorf("codec transpose: order %q (want a permutation, \"C\" or \"F\")", name)
	}
	var order []int
	if err := json.Unmarshal(cfg.Order, &order); err != nil || !isPermutation(order, n) {
		return nil, fmt.Errorf("codec transpose: order %s is not a permutation of %d axes", cfg.Order, n)
	}
	return order, nil
}

func isPermutation(p []int, n int) bool {
	if len(p) != n {
		return false
	}
	seen := make([]bool, n)
	for _, v := range p {
		if v < 0 || v >= n || seen[v] {
			return false
		}
		seen[v] = true
	}
	return true
}

func isIdentity(p []int) bool {
	for i, v := range p {
		if v != i {
			return false
		}
	}
	return true
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
	indexLen, _, ok := runtime.KeyBytes(runtime.Uint64, sh.indexShape, 1)
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

// strictJSON decodes an optional configuration object, refusing unknown
// fields so that a setting this reader would ignore is not dropped silently.
func strictJSON(raw json.RawMessage, v any) error {
	if isNull(raw) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("configuration %s: %w", raw, err)
	}
	return nil
}

// identityAxes is the axis order 0, 1, ..., n-1 (C order).
func identityAxes(n int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	return order
}

// reversedAxes is the axis order n-1, ..., 1, 0 (F order).
func reversedAxes(n int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = n - 1 - i
	}
	return order
}
