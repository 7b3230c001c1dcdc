package blosc

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/pierrec/lz4/v4"
)

// encodeBlockSize is the block size Encoder aims for: c-blosc's decoders
// accept any size, and 256 KiB keeps a block's streams in a core's L2 cache.
const encodeBlockSize = 256 << 10

// Encoder writes frames as numcodecs' default Blosc codec configures them:
// LZ4 streams over byte-shuffled blocks. Blocks are not split into per-byte
// streams (the frame says so), and a frame that would not be smaller than
// its data is stored uncompressed. An Encoder is not safe for concurrent
// use; the zero value is ready.
type Encoder struct {
	lz4      lz4.Compressor
	shuffled []byte // one shuffled block
}

// Encode appends a frame of src, whose elements are typeSize bytes wide, to
// dst and returns it.
func (e *Encoder) Encode(dst, src []byte, typeSize int) ([]byte, error) {
	if typeSize < 1 || typeSize > 255 {
		return dst, fmt.Errorf("blosc: type size %d outside 1..255", typeSize)
	}
	// Up to MaxBufferSize, a frame in the making (at most 1/255 longer than
	// src, and a few bytes a block) keeps its offsets under 4 GiB, and a
	// frame kept is shorter than the stored one, HeaderSize+len(src) bytes.
	if len(src) > MaxBufferSize {
		return dst, fmt.Errorf("blosc: %d bytes are more than the %d a frame may hold", len(src), MaxBufferSize)
	}
	block := max(encodeBlockSize/typeSize*typeSize, typeSize)
	nblocks := (len(src) + block - 1) / block
	flags := uint8(flagShuffle|flagNoSplit) | uint8(LZ4)<<5
	start := len(dst)
	// The most the frame takes while it is made: the header, the blocks'
	// starts, each block's stream (its length and at most the block) but
	// the last's LZ4 bound, which is at most block/255+16 bytes longer.
	// Growing dst once keeps the streams from being copied as it grows.
	dst = slices.Grow(dst, HeaderSize+8*nblocks+len(src)+block/255+16)
	dst = appendHeader(dst, flags, typeSize, len(src), min(block, len(src)))
	starts := len(dst)
	dst = append(dst, make([]byte, 4*nblocks)...)
	for b := range nblocks {
		binary.LittleEndian.PutUint32(dst[starts+4*b:], uint32(len(dst)-start))
		raw := src[b*block : min((b+1)*block, len(src))]
		if typeSize > 1 { // a shuffle of bytes alone leaves them as they are
			e.shuffled = slices.Grow(e.shuffled[:0], len(raw))
			shuffle(e.shuffled[:len(raw)], raw, typeSize)
			raw = e.shuffled[:len(raw)]
		}
		var err error
		if dst, err = e.stream(dst, raw); err != nil {
			return dst[:start], err
		}
	}
	if len(dst)-start >= HeaderSize+len(src) {
		dst = appendHeader(dst[:start], flags|flagMemcpy, typeSize, len(src), min(block, len(src)))
		dst = append(dst, src...)
	}
	binary.LittleEndian.PutUint32(dst[start+12:], uint32(len(dst)-start))
	return dst, nil
}

// stream appends one block's stream: its length, then LZ4 output, or the
// block itself when LZ4 does not make it shorter (a stream as long as its
// block is read as stored).
func (e *Encoder) stream(dst, block []byte) ([]byte, error) {
	at := len(dst)
	// LZ4 writes its output over what dst's memory held: only the n bytes
	// it wrote are kept.
	need := 4 + lz4.CompressBlockBound(len(block))
	dst = slices.Grow(dst, need)[:at+need]
	n, err := e.lz4.CompressBlock(block, dst[at+4:])
	if err != nil {
		return dst[:at], fmt.Errorf("blosc: lz4: %w", err)
	}
	if n == 0 || n >= len(block) {
		n = copy(dst[at+4:], block)
	}
	binary.LittleEndian.PutUint32(dst[at:], uint32(n))
	return dst[:at+4+n], nil
}

// appendHeader appends a header; its cbytes field is filled in last.
func appendHeader(dst []byte, flags uint8, typeSize, nbytes, blockSize int) []byte {
	dst = append(dst, 2, 1, flags, uint8(typeSize))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(nbytes))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(blockSize))
	return binary.LittleEndian.AppendUint32(dst, 0)
}
