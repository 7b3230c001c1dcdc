// Package png decodes the PNGs of image datasets into planes that a
// Decoder keeps from one image to the next, so that decoding allocates
// nothing once they have grown. It reads images of 8 bits per channel or
// fewer (grey at 1, 2, 4 or 8 bits, grey+alpha, RGB, RGBA, and palettes at
// 1, 2, 4 or 8 bits), interlaced (Adam7) or not, accepts and refuses what
// image/png does, and gives image/png's pixels with alpha dropped: a tRNS
// chunk is checked and ignored. 16-bit images are refused.
//
// PNG is defined in https://www.w3.org/TR/png-3/.
package png

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
)

// A FormatError reports that the input is not a valid PNG.
type FormatError string

func (e FormatError) Error() string { return "invalid PNG format: " + string(e) }

// An UnsupportedError reports that the input uses a valid PNG feature
// that the decoder does not read.
type UnsupportedError string

func (e UnsupportedError) Error() string { return "unsupported PNG feature: " + string(e) }

// Err16Bit is the error for images of 16 bits per channel.
var Err16Bit = errors.New("16-bit images are not supported (8 bits per channel or fewer)")

// Colour is what an Image's planes hold.
type Colour uint8

// The colour models of decoded images.
const (
	Grey  Colour = iota // one plane: grey and grey+alpha images, depths below 8 scaled to 0..255
	RGB                 // three planes: red, green and blue of RGB, RGBA and palette images
	Index               // one plane: a palette image's indices, when Decode is asked for them
)

// Image is a decoded PNG, valid until its Decoder decodes again.
type Image struct {
	Width, Height int
	Colour        Colour
	Planes        [3][]byte // Width x Height bytes each, row after row; [:1] for Grey and Index
}

// The colour types of the IHDR chunk.
const (
	ctGrey      = 0
	ctRGB       = 2
	ctPalette   = 3
	ctGreyAlpha = 4
	ctRGBA      = 6
)

// The chunks that must come in order, as image/png orders them: IHDR,
// PLTE, tRNS, IDAT, IEND.
const (
	stStart = iota
	stIHDR
	stPLTE
	stTRNS
	stIDAT
	stIEND
)

const signature = "\x89PNG\r\n\x1a\n"

// Decoder decodes PNGs into buffers it keeps. One goroutine uses it at a
// time.
type Decoder struct {
	// Check, when set, is called with an image's size once its IHDR is
	// read, before anything is allocated for it; an error it returns is
	// Decode's. Its user sets it before decoding.
	Check func(w, h int) error

	src       []byte // the PNG being decoded
	pos       int    // the offset of src's next chunk
	stage     int
	w, h      int
	depth     int
	ct        int // colour type
	interlace bool
	palette   [256][3]uint8 // PLTE's entries, then black, as image/png pads it

	idat   idat
	flate  io.ReadCloser // a flate.Resetter, reset for each image
	adler  hash.Hash32   // the zlib stream's checksum, reset for each image
	tmp    [4]byte       // the zlib stream's header and checksum (a field: read through interfaces, a local would escape)
	cur    []byte        // the row being unfiltered, its filter type first
	prev   []byte        // the row above, unfiltered
	row    []byte        // a palette row's indices, for an RGB image
	spread [3][]byte     // a row of an interlaced pass, before it is spread over its image row
	planes [3][]byte
}

// chunk is one chunk of the PNG: its type, data and offset.
type chunk struct {
	typ  [4]byte
	data []byte
	at   int
}

// name is c's type, for messages.
func (c chunk) name() string { return string(c.typ[:]) }

// outOfOrder is the error for chunk c where it does not belong.
func outOfOrder(c chunk) error {
	return FormatError(fmt.Sprintf("chunk %q at byte %d is out of order", c.name(), c.at))
}

// Decode decodes data. A palette image gives its indices (Index) when
// indices is set, its colours (RGB) else.
func (d *Decoder) Decode(data []byte, indices bool) (Image, error) {
	if len(data) < len(signature) || string(data[:len(signature)]) != signature {
		return Image{}, FormatError("not a PNG file")
	}
	d.src, d.pos, d.stage, d.ct = data, len(signature), stStart, -1
	d.palette = [256][3]uint8{}
	var m Image
	for d.stage != stIEND {
		c, err := d.next()
		if err != nil {
			return Image{}, err
		}
		img, err := d.chunk(c, indices)
		if err != nil {
			return Image{}, err
		}
		if img.Width > 0 { // the first IDAT's
			m = img
		}
	}
	d.src = nil
	return m, nil
}

// Held returns the bytes of the buffers the decoder keeps for the next
// image: its planes and rows, sized for the largest image since Release.
func (d *Decoder) Held() int {
	n := cap(d.cur) + cap(d.prev) + cap(d.row)
	for i := range d.planes {
		n += cap(d.planes[i]) + cap(d.spread[i])
	}
	return n
}

// Release drops the decoder's planes and rows: the next image allocates
// them anew, at its size. The last Image's planes stay valid.
func (d *Decoder) Release() {
	d.cur, d.prev, d.row = nil, nil, nil
	d.spread, d.planes = [3][]byte{}, [3][]byte{}
}

// next reads the chunk at d.pos and checks its CRC.
func (d *Decoder) next() (chunk, error) {
	rest := d.src[d.pos:]
	if len(rest) < 8 {
		return chunk{}, FormatError(fmt.Sprintf("truncated: the data ends at byte %d, before IEND", len(d.src)))
	}
	n := binary.BigEndian.Uint32(rest)
	c := chunk{typ: [4]byte(rest[4:8]), at: d.pos}
	if n > 0x7fffffff {
		return chunk{}, FormatError(fmt.Sprintf("chunk %q at byte %d: length %d over 2^31-1", c.name(), c.at, n))
	}
	if uint64(len(rest)) < 12+uint64(n) {
		return chunk{}, FormatError(fmt.Sprintf("truncated: chunk %q at byte %d holds %d bytes, the data ends %d bytes into it", c.name(), c.at, n, len(rest)-8))
	}
	c.data = rest[8 : 8+n]
	want := binary.BigEndian.Uint32(rest[8+n:])
	if got := crc32.ChecksumIEEE(rest[4 : 8+n]); got != want {
		return chunk{}, FormatError(fmt.Sprintf("chunk %q at byte %d: CRC %08x, its data's is %08x", c.name(), c.at, want, got))
	}
	d.pos += 12 + int(n)
	return c, nil
}

// chunk reads chunk c in its stage, as image/png orders and reads them;
// the image once c is the first IDAT.
func (d *Decoder) chunk(c chunk, indices bool) (Image, error) {
	switch string(c.typ[:]) {
	case "IHDR":
		if d.stage != stStart {
			return Image{}, outOfOrder(c)
		}
		d.stage = stIHDR
		return Image{}, d.header(c)
	case "PLTE":
		if d.stage != stIHDR {
			return Image{}, outOfOrder(c)
		}
		d.stage = stPLTE
		return Image{}, d.plte(c)
	case "tRNS":
		switch {
		case d.ct == ctPalette && d.stage != stPLTE,
			d.ct == ctRGB && d.stage != stIHDR && d.stage != stPLTE,
			d.ct != ctPalette && d.ct != ctRGB && d.stage != stIHDR:
			return Image{}, outOfOrder(c)
		}
		d.stage = stTRNS
		return Image{}, d.trns(c)
	case "IDAT":
		if d.stage < stIHDR || d.stage > stIDAT || d.stage == stIHDR && d.ct == ctPalette {
			return Image{}, outOfOrder(c)
		}
		if d.stage == stIDAT {
			return Image{}, nil // trailing IDAT chunks are ignored, as image/png ignores them
		}
		d.stage = stIDAT
		return d.pixels(c, indices)
	case "IEND":
		if d.stage != stIDAT {
			return Image{}, outOfOrder(c)
		}
		if len(c.data) != 0 {
			return Image{}, FormatError(fmt.Sprintf("chunk \"IEND\" at byte %d holds %d bytes, not 0", c.at, len(c.data)))
		}
		d.stage = stIEND
	}
	return Image{}, nil
}

// header reads IHDR.
func (d *Decoder) header(c chunk) error {
	b := c.data
	if len(b) != 13 {
		return FormatError(fmt.Sprintf("IHDR holds %d bytes, not 13", len(b)))
	}
	switch {
	case b[10] != 0:
		return UnsupportedError(fmt.Sprintf("compression method %d", b[10]))
	case b[11] != 0:
		return UnsupportedError(fmt.Sprintf("filter method %d", b[11]))
	case b[12] > 1:
		return FormatError(fmt.Sprintf("interlace method %d (0 or 1)", b[12]))
	}
	w, h := int32(binary.BigEndian.Uint32(b)), int32(binary.BigEndian.Uint32(b[4:]))
	if w <= 0 || h <= 0 {
		return FormatError(fmt.Sprintf("size %d x %d", w, h))
	}
	d.w, d.h, d.depth, d.ct, d.interlace = int(w), int(h), int(b[8]), int(b[9]), b[12] == 1
	if int64(d.w)*int64(d.h) > (1<<63-1)/8 {
		return UnsupportedError(fmt.Sprintf("size %d x %d overflows", w, h))
	}
	switch {
	case d.depth == 16 && d.ct != ctPalette && channels(d.ct) > 0:
		return Err16Bit
	case !supported(d.depth, d.ct):
		return UnsupportedError(fmt.Sprintf("bit depth %d, colour type %d", d.depth, d.ct))
	case d.Check != nil:
		return d.Check(d.w, d.h)
	}
	return nil
}

// supported reports whether PNG allows colour type ct at bit depth depth,
// below 16.
func supported(depth, ct int) bool {
	switch depth {
	case 1, 2, 4:
		return ct == ctGrey || ct == ctPalette
	case 8:
		return channels(ct) > 0
	}
	return false
}

// channels is the number of samples per pixel of colour type ct; 0 for
// no colour type.
func channels(ct int) int {
	switch ct {
	case ctGrey, ctPalette:
		return 1
	case ctGreyAlpha:
		return 2
	case ctRGB:
		return 3
	case ctRGBA:
		return 4
	}
	return 0
}

// plte reads PLTE: a palette image's colours; checked and ignored for RGB
// and RGBA, as image/png does.
func (d *Decoder) plte(c chunk) error {
	n := len(c.data) / 3
	if len(c.data)%3 != 0 || n == 0 || n > 256 || n > 1<<d.depth {
		return FormatError(fmt.Sprintf("PLTE holds %d bytes: not 3 per entry for 1 to %d entries", len(c.data), min(256, 1<<d.depth)))
	}
	switch d.ct {
	case ctPalette:
		for i := range n {
			d.palette[i] = [3]uint8(c.data[3*i:])
		}
	case ctRGB, ctRGBA:
	default:
		return FormatError(fmt.Sprintf("PLTE in an image of colour type %d", d.ct))
	}
	return nil
}

// trns checks tRNS, whose transparency is ignored.
func (d *Decoder) trns(c chunk) error {
	n := len(c.data)
	switch {
	case d.ct == ctGrey && n != 2, d.ct == ctRGB && n != 6, d.ct == ctPalette && n > 256:
		return FormatError(fmt.Sprintf("tRNS holds %d bytes for colour type %d", n, d.ct))
	case d.ct == ctGreyAlpha || d.ct == ctRGBA:
		return FormatError(fmt.Sprintf("tRNS in an image of colour type %d, which has alpha", d.ct))
	}
	return nil
}
