// Package blosc reads and writes Blosc 1 frames, the container c-blosc 1.x
// writes and numcodecs' Blosc codec stores in zarr chunks, in pure Go.
//
// A frame is a 16-byte header, a table of block offsets and the blocks. Each
// block was optionally shuffled (bytes or bits), optionally split into one
// stream per byte of the element type, and each stream compressed with one of
// blosclz, lz4 (or lz4hc, the same format), snappy, zlib or zstd. The layout
// follows c-blosc's README_CHUNK_FORMAT.rst; blosclz is this package's own
// decoder of that format.
package blosc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// HeaderSize is the size of a Blosc 1 frame header.
const HeaderSize = 16

// MaxBufferSize is the most bytes a frame holds decoded: c-blosc's
// BLOSC_MAX_BUFFERSIZE, INT_MAX less the header (BLOSC_MAX_OVERHEAD), as a
// frame's sizes are 32-bit signed ints that count its header too.
const MaxBufferSize = math.MaxInt32 - HeaderSize

// Header flags (byte 2 of a frame).
const (
	flagShuffle    = 0x01 // bytes shuffled
	flagMemcpy     = 0x02 // data stored uncompressed right after the header
	flagBitShuffle = 0x04 // bits shuffled
	flagReserved   = 0x08 // must be zero
	flagNoSplit    = 0x10 // blocks are never split into per-byte streams
)

// Codec is a compressor a frame's streams may use (bits 5-7 of the flags).
type Codec uint8

// The codecs of Blosc 1. LZ4 also covers lz4hc, which writes the same format.
const (
	BloscLZ Codec = iota
	LZ4
	Snappy
	Zlib
	Zstd
)

var codecNames = [...]string{"blosclz", "lz4", "snappy", "zlib", "zstd"}

// String returns numcodecs' name of c, e.g. "lz4".
func (c Codec) String() string {
	if int(c) < len(codecNames) {
		return codecNames[c]
	}
	return fmt.Sprintf("codec %d", uint8(c))
}

// Limits of the format, as c-blosc enforces them.
const (
	maxSplits     = 16  // a block is split only for types of at most 16 bytes
	minSplitElems = 128 // and only when it holds at least 128 elements
	maxBlockSize  = (1<<31 - 1 - 255*4) / 3
)

// Header is the fixed part of a frame.
type Header struct {
	Version   uint8 // format version: 1 or 2
	VersionLZ uint8 // version of the codec's format
	Flags     uint8
	TypeSize  int // bytes per element, for the shuffles and the splits
	NBytes    int // decoded size
	BlockSize int // decoded bytes per block (the last block may be shorter)
	CBytes    int // size of the whole frame, header included
}

// Codec returns the compressor the frame's streams use.
func (h Header) Codec() Codec { return Codec(h.Flags >> 5) }

// Stored reports whether the frame holds its data uncompressed, right
// after the header.
func (h Header) Stored() bool { return h.Flags&flagMemcpy != 0 }

// ErrCorrupt is wrapped by every error about a malformed frame.
var ErrCorrupt = errors.New("corrupt blosc frame")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// ParseHeader reads and checks a frame's header.
func ParseHeader(src []byte) (Header, error) {
	if len(src) < HeaderSize {
		return Header{}, corrupt("%d bytes, shorter than the %d-byte header", len(src), HeaderSize)
	}
	h := Header{
		Version:   src[0],
		VersionLZ: src[1],
		Flags:     src[2],
		TypeSize:  int(src[3]),
		NBytes:    int(binary.LittleEndian.Uint32(src[4:])),
		BlockSize: int(binary.LittleEndian.Uint32(src[8:])),
		CBytes:    int(binary.LittleEndian.Uint32(src[12:])),
	}
	switch {
	case h.Version != 1 && h.Version != 2:
		return h, corrupt("format version %d (this reader knows 1 and 2)", h.Version)
	case h.Flags&flagReserved != 0:
		return h, corrupt("reserved flag 0x08 set")
	case h.Codec() > Zstd:
		return h, corrupt("unknown codec %d in the flags", uint8(h.Codec()))
	case h.TypeSize == 0:
		return h, corrupt("type size 0")
	case h.NBytes > MaxBufferSize || h.CBytes > math.MaxInt32:
		return h, corrupt("sizes past 2 GiB (nbytes %d, cbytes %d)", h.NBytes, h.CBytes)
	case h.CBytes != len(src):
		return h, corrupt("header says %d bytes, the frame has %d", h.CBytes, len(src))
	case h.NBytes > 0 && (h.BlockSize <= 0 || h.BlockSize > maxBlockSize):
		return h, corrupt("block size %d", h.BlockSize)
	}
	return h, nil
}

// Decoder decodes frames. Its scratch space makes it unsafe for concurrent
// use: give each goroutine its own (the zero value is ready).
type Decoder struct {
	scratch []byte // one block before unshuffling
	partial []byte // one block of which DecodeRange keeps a tail
}

// Decode decodes the frame src into dst, which must be exactly the frame's
// decoded size (its Header's NBytes).
func (d *Decoder) Decode(dst, src []byte) error {
	h, err := ParseHeader(src)
	if err != nil {
		return err
	}
	if len(dst) != h.NBytes {
		return fmt.Errorf("blosc: destination holds %d bytes, the frame decodes to %d", len(dst), h.NBytes)
	}
	if h.NBytes == 0 {
		return nil
	}
	if h.Flags&flagMemcpy != 0 {
		if len(src) != HeaderSize+h.NBytes {
			return corrupt("stored frame of %d bytes for %d decoded", len(src), h.NBytes)
		}
		copy(dst, src[HeaderSize:])
		return nil
	}
	nblocks := (h.NBytes + h.BlockSize - 1) / h.BlockSize
	starts := HeaderSize + 4*nblocks
	if starts > len(src) {
		return corrupt("%d blocks need %d bytes of offsets, the frame has %d", nblocks, 4*nblocks, len(src)-HeaderSize)
	}
	for b := range nblocks {
		off := int(binary.LittleEndian.Uint32(src[HeaderSize+4*b:]))
		if off < starts || off > len(src) {
			return corrupt("block %d starts at %d, outside [%d, %d]", b, off, starts, len(src))
		}
		lo := b * h.BlockSize
		hi := min(lo+h.BlockSize, h.NBytes)
		if err := d.block(h, src, off, dst[lo:hi], hi-lo < h.BlockSize); err != nil {
			return fmt.Errorf("block %d: %w", b, err)
		}
	}
	return nil
}

// DecodeRange decodes, from the frame src whose decoded size is len(dst),
// only the blocks that cover decoded bytes [from, to) (blocks are
// independent), into dst, and returns the end of the last one: the frame's
// bytes [from, n) are then in dst[from:n], with n >= to. Nothing before
// dst[from] is written, so a caller may hand out dst[:from] while this runs;
// a block that starts before from is decoded aside and only its tail copied.
// A stored (memcpy) frame copies only [from, to). Only the blocks decoded
// are checked: a frame damaged elsewhere decodes without an error here.
func (d *Decoder) DecodeRange(dst, src []byte, from, to int) (int, error) {
	h, err := ParseHeader(src)
	if err != nil {
		return 0, err
	}
	if len(dst) != h.NBytes {
		return 0, fmt.Errorf("blosc: destination holds %d bytes, the frame decodes to %d", len(dst), h.NBytes)
	}
	if from < 0 || to > h.NBytes || from > to {
		return 0, fmt.Errorf("blosc: range [%d, %d) of a frame of %d bytes", from, to, h.NBytes)
	}
	if from == to {
		return to, nil
	}
	if h.Flags&flagMemcpy != 0 {
		if len(src) != HeaderSize+h.NBytes {
			return 0, corrupt("stored frame of %d bytes for %d decoded", len(src), h.NBytes)
		}
		copy(dst[from:to], src[HeaderSize+from:HeaderSize+to])
		return to, nil
	}
	nblocks := (h.NBytes + h.BlockSize - 1) / h.BlockSize
	starts := HeaderSize + 4*nblocks
	if starts > len(src) {
		return 0, corrupt("%d blocks need %d bytes of offsets, the frame has %d", nblocks, 4*nblocks, len(src)-HeaderSize)
	}
	hi := from
	for b := from / h.BlockSize; b <= (to-1)/h.BlockSize; b++ {
		off := int(binary.LittleEndian.Uint32(src[HeaderSize+4*b:]))
		if off < starts || off > len(src) {
			return 0, corrupt("block %d starts at %d, outside [%d, %d]", b, off, starts, len(src))
		}
		lo := b * h.BlockSize
		hi = min(lo+h.BlockSize, h.NBytes)
		out := dst[lo:hi]
		if lo < from {
			d.partial = slices.Grow(d.partial[:0], hi-lo)
			out = d.partial[:hi-lo]
		}
		if err := d.block(h, src, off, out, hi-lo < h.BlockSize); err != nil {
			return 0, fmt.Errorf("block %d: %w", b, err)
		}
		if lo < from {
			copy(dst[from:hi], out[from-lo:])
		}
	}
	return hi, nil
}

// block decodes one block starting at src[off:] into dst.
func (d *Decoder) block(h Header, src []byte, off int, dst []byte, leftover bool) error {
	shuffled := h.Flags&flagShuffle != 0 && h.TypeSize > 1
	bitShuffled := h.Flags&flagBitShuffle != 0 && len(dst) >= h.TypeSize
	out := dst
	if shuffled || bitShuffled {
		d.scratch = slices.Grow(d.scratch[:0], len(dst))
		out = d.scratch[:len(dst)]
	}
	nsplits := 1
	if split(h, len(dst), leftover) {
		nsplits = h.TypeSize
		if len(dst)%nsplits != 0 {
			return corrupt("block of %d bytes cannot split into %d streams", len(dst), nsplits)
		}
	}
	n := len(dst) / nsplits
	for s := range nsplits {
		if off+4 > len(src) {
			return corrupt("stream %d: its length is past the frame's end", s)
		}
		c := int(int32(binary.LittleEndian.Uint32(src[off:])))
		off += 4
		if c < 0 || c > len(src)-off {
			return corrupt("stream %d: length %d, %d bytes left", s, c, len(src)-off)
		}
		part := out[s*n : (s+1)*n]
		if c == n {
			copy(part, src[off:off+c])
		} else if err := decodeStream(h.Codec(), part, src[off:off+c]); err != nil {
			return fmt.Errorf("stream %d (%v): %w", s, h.Codec(), err)
		}
		off += c
	}
	switch {
	case shuffled:
		unshuffle(dst, out, h.TypeSize)
	case bitShuffled:
		bitUnshuffle(dst, out, h.TypeSize)
	}
	return nil
}

// split reports whether a block of n bytes was split into one stream per
// byte of the element type: c-blosc splits unless the frame says not to, the
// type is wider than 16 bytes, the block holds fewer than 128 elements, or
// it is the short last block.
func split(h Header, n int, leftover bool) bool {
	return h.Flags&flagNoSplit == 0 && h.TypeSize <= maxSplits &&
		n/h.TypeSize >= minSplitElems && !leftover
}
