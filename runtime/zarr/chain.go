package zarr

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"sync"

	"github.com/loadergen/loadergen/runtime/internal/strided"
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

// checkCRC32C checks the crc32c checksum that ends buf (the codec's 4
// bytes, little-endian) and returns the bytes before it.
func checkCRC32C(buf []byte) ([]byte, error) {
	if len(buf) < 4 {
		return nil, fmt.Errorf("crc32c: %d bytes, too short for a checksum", len(buf))
	}
	n := len(buf) - 4
	if got, want := crc32.Checksum(buf[:n], castagnoli), binary.LittleEndian.Uint32(buf[n:]); got != want {
		return nil, fmt.Errorf("crc32c: checksum %08x, the data's is %08x", want, got)
	}
	return buf[:n], nil
}

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

// scratch is the most bytes that decoding a chunk of n bytes with c takes
// besides the chunk's buffer, in its decoder's scratch (decoder, and the
// codecs' own), as decodeRange decodes it: extending a window it already
// holds, or (prefix) a first window that a stream may decode as a prefix.
// They are: the stored elements before a transpose; a compressor's output
// before the checksums it carried are taken off; Blosc's unshuffled or
// partly wanted block (a block is at most the chunk); a chunk decoded
// aside to extend a window; and a zstd streaming decoder's window and
// block, which compress.ZstdRange keeps within the chunk and
// compress.StreamMemory. Whole decodes write straight
// into the chunk's buffer, and gzip's and zlib's windows, the codecs'
// tables and the stored bytes read are small or not decoded memory.
func (c *chain) scratch(n int, extending, prefix bool) int64 {
	s, crc := int64(0), int64(0)
	if c.order != nil {
		s += int64(n)
	}
	aside := int64(0)
	if extending {
		aside = int64(n)
	}
	for _, cd := range c.codecs {
		if crc > 0 && cd.kind.compresses() {
			s += int64(n) + crc
		}
		switch cd.kind {
		case codecCRC32C:
			crc += 4
		case codecBlosc:
			s += int64(n) + aside
		case codecZstd:
			if prefix {
				s += min(int64(n), compress.StreamMemory)
			}
			s += aside
		case codecGzip, codecZlib:
			s += aside
		}
	}
	return s
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

// partial reports whether a part of a chunk's C-order bytes can be decoded
// without the rest: its elements are stored in C order, and its codecs are
// none, or one compressor that can decode in part (Blosc, a window of
// blocks; zstd, gzip and zlib, a prefix; not numcodecs' LZ4, one block
// decoded whole) with checksums only of the compressed bytes (crc32c after
// the compressor, which are checked on the whole stored chunk). A checksum
// of the decoded bytes could only be checked on all of them.
func (c *chain) partial() bool {
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

// decodeRange decodes the bytes of want that out lacks, of a chunk's
// elements (C order, little-endian), from its stored bytes src into out,
// and returns the window out then holds, which holds have and want; out is
// the whole chunk's size and holds the window have already (empty for a
// first decode), which it does not write. A chain that does not decode in
// part decodes the whole chunk (have is then empty: no part of it was ever
// held); a compressed stream decodes from its start, so its windows start
// at 0. A compressed stream cut short leaves its checksum unverified (see
// compress.ZstdRange); a later read of the whole chunk verifies it.
func (c *chain) decodeRange(d *decoder, out, src []byte, have, want window, shape []int, elem int) (window, error) {
	fresh := have.lo >= have.hi
	if fresh && want == (window{0, len(out)}) || !c.partial() {
		if !fresh {
			return window{}, fmt.Errorf("a part of a chunk that decodes only whole (a bug)")
		}
		return window{0, len(out)}, c.decode(d, out, src, shape, elem)
	}
	want.hi = min(want.hi, len(out))
	buf := src
	comp := codecKind(0)
	for i := len(c.codecs) - 1; i >= 0; i-- {
		cd := c.codecs[i]
		if cd.kind != codecCRC32C {
			comp = cd.kind
			break
		}
		var err error
		if buf, err = checkCRC32C(buf); err != nil {
			return window{}, err
		}
	}
	if comp == codecZstd || comp == codecGzip || comp == codecZlib {
		return c.decodeStream(d, out, src, buf, comp, have.hi, want.hi, shape, elem)
	}
	win, err := c.decodeWindow(d, out, buf, comp, have, want, elem)
	if err != nil {
		return window{}, c.codecError(comp, err)
	}
	return win, nil
}

// codecError names the codec of kind comp (as the metadata spells it) in
// err, from decoding with it.
func (c *chain) codecError(comp codecKind, err error) error {
	for _, cd := range c.codecs {
		if cd.kind == comp {
			return fmt.Errorf("%s: %w", cd.name, err)
		}
	}
	return err
}

// decodeStream is decodeRange for a compressed stream (comp, the stored
// bytes src, buf without their checksums), which decodes from its start,
// so its windows are prefixes: out holds its bytes [0, from) already (from
// is 0 for a first decode), and needs them up to need.
func (c *chain) decodeStream(d *decoder, out, src, buf []byte, comp codecKind, from, need int, shape []int, elem int) (window, error) {
	if from >= need {
		return window{0, from}, nil
	}
	if from > 0 {
		// Extending a stream's prefix decodes it again from its start:
		// decode the whole, aside, with the whole-buffer decoder (faster
		// than the streaming one, and it verifies the checksum), and keep
		// its tail, so that the chunk is never extended again.
		d.whole = slices.Grow(d.whole[:0], len(out))
		w := d.whole[:len(out)]
		if err := c.decode(d, w, src, shape, elem); err != nil {
			return window{}, err
		}
		copy(out[from:], w[from:])
		return window{0, len(out)}, nil
	}
	if need > len(out)/2 {
		// A stream decodes a prefix through a streaming decoder, about
		// 0.8 x the speed of the whole-buffer one for libzstd
		// (BenchmarkZstdRange), and a prefix that a later read extends
		// costs a whole decode more. Past half the chunk the whole is the
		// better bet (one cold epoch of the big store, zstd-6: 1.09 x the
		// crops/s of whole decodes with this half, 0.98 x with three
		// quarters; docs/PERFORMANCE-LOG.md, "Decoding only what a box
		// needs", gives the commands and the machine); it also verifies the
		// stream's checksum.
		return window{0, len(out)}, c.decode(d, out, src, shape, elem)
	}
	var err error
	switch comp {
	case codecZstd:
		err = compress.ZstdRange(out, buf, 0, need)
	case codecGzip:
		err = compress.GzipRange(out, buf, 0, need)
	case codecZlib:
		err = compress.ZlibRange(out, buf, 0, need)
	}
	if err != nil {
		return window{}, c.codecError(comp, err)
	}
	if c.bigEndian {
		swapBytes(out[:need], elem)
	}
	return window{0, need}, nil
}

// decodeWindow is decodeRange for bytes stored as they decode (comp 0) or
// a Blosc frame, given have (empty for a first decode): it decodes the
// bytes of want below have and above it, and writes nothing inside have.
// Blosc decodes whole blocks, in place where they end at or below have.lo
// (a first decode's window starts at its first block's start) or start at
// or past have.hi (they are kept whole); blocks below that cross have.lo
// are decoded aside and only their bytes below have.lo copied.
func (c *chain) decodeWindow(d *decoder, out, buf []byte, comp codecKind, have, want window, elem int) (window, error) {
	if comp == 0 && len(buf) != len(out) {
		return window{}, fmt.Errorf("%d bytes, expected %d", len(buf), len(out))
	}
	block := 1 // decoded bytes per block: Blosc's, unless stored (copied by the byte)
	if comp == codecBlosc {
		h, err := blosc.ParseHeader(buf)
		if err != nil {
			return window{}, err
		}
		if !h.Stored() && h.BlockSize > 0 {
			block = h.BlockSize
		}
	}
	if have.lo == have.hi {
		lo := want.lo - want.lo%block
		lo += (elem - lo%elem) % elem // whole elements: still at most want.lo
		have = window{lo, lo}
	}
	win := have
	if want.lo < have.lo {
		switch {
		case comp == 0:
			copy(out[want.lo:have.lo], buf[want.lo:have.lo])
		case have.lo%block == 0:
			if _, err := d.blosc.DecodeRange(out, buf, want.lo, have.lo); err != nil {
				return window{}, err
			}
		default:
			d.whole = slices.Grow(d.whole[:0], len(out))
			w := d.whole[:len(out)]
			if _, err := d.blosc.DecodeRange(w, buf, want.lo, have.lo); err != nil {
				return window{}, err
			}
			copy(out[want.lo:have.lo], w[want.lo:have.lo])
		}
		win.lo = want.lo
	}
	if want.hi > have.hi {
		hi := want.hi
		switch comp {
		case 0:
			copy(out[have.hi:want.hi], buf[have.hi:want.hi])
		case codecBlosc:
			var err error
			if hi, err = d.blosc.DecodeRange(out, buf, have.hi, want.hi); err != nil {
				return window{}, err
			}
		}
		win.hi = hi - hi%elem
	}
	if c.bigEndian {
		swapBytes(out[win.lo:have.lo], elem)
		swapBytes(out[have.hi:win.hi], elem)
	}
	return win, nil
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
			var err error
			if buf, err = checkCRC32C(buf); err != nil {
				return err
			}
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

func isIdentity(p []int) bool {
	for i, v := range p {
		if v != i {
			return false
		}
	}
	return true
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
