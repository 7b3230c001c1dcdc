package compress

import (
	"encoding/binary"
	"fmt"
)

// zstdMagic starts every zstd frame (RFC 8878, 3.1.1), little-endian.
const zstdMagic = 0xfd2fb528

// zstdHeader is what a zstd frame's header declares (RFC 8878, 3.1.1.1):
// its content size, when it says it (content >= 0), and the window a
// streaming decoder buffers. ok is false for data that does not start
// with a frame's magic number and whole header (a skippable frame, or
// garbage), which the decoders then judge.
func zstdHeader(src []byte) (content, window int64, ok bool) {
	if len(src) < 5 || binary.LittleEndian.Uint32(src) != zstdMagic {
		return 0, 0, false
	}
	fhd := src[4]
	single := fhd&0x20 != 0
	fcsBytes := [4]int{0, 2, 4, 8}[fhd>>6]
	if single && fcsBytes == 0 {
		fcsBytes = 1
	}
	at := 5
	if !single { // the window descriptor
		if len(src) < at+1 {
			return 0, 0, false
		}
		exp, mantissa := int64(src[at]>>3), int64(src[at]&7)
		window = 1 << (10 + exp)
		window += window / 8 * mantissa
		at++
	}
	at += [4]int{0, 1, 2, 4}[fhd&3] // the dictionary's ID
	if len(src) < at+fcsBytes {
		return 0, 0, false
	}
	fcs := src[at : at+fcsBytes]
	switch fcsBytes {
	case 0:
		return -1, window, true
	case 1:
		content = int64(fcs[0])
	case 2:
		content = int64(binary.LittleEndian.Uint16(fcs)) + 256
	case 4:
		content = int64(binary.LittleEndian.Uint32(fcs))
	case 8:
		content = int64(min(binary.LittleEndian.Uint64(fcs), 1<<63-1))
	}
	if single {
		window = content
	}
	return content, window, true
}

// checkZstdSize refuses a stream whose first frame declares more than the
// want bytes expected, before anything is decoded or allocated for it.
func checkZstdSize(src []byte, want int) error {
	if content, _, ok := zstdHeader(src); ok && content > int64(want) {
		return fmt.Errorf("%w: the zstd frame declares %d bytes, more than the %d expected", ErrSize, content, want)
	}
	return nil
}
