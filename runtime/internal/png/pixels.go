package png

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"

	"github.com/klauspost/compress/flate"
)

// idat reads the data of consecutive IDAT chunks as one stream, as
// image/png does: a flate.Reader (an io.ByteReader), so that flate reads
// it without a buffer of its own.
type idat struct {
	d    *Decoder
	rest []byte // what remains of the current chunk's data
}

// errShort is the error for IDAT chunks that end before the pixels do.
var errShort = FormatError("not enough pixel data")

// errTrailing is the error for bytes after the zlib stream in its last
// IDAT chunk. image/png accepts them when its 4 KiB read-ahead has taken
// them in with the stream's end, and refuses them else; they are always
// refused here.
var errTrailing = FormatError("too much pixel data: bytes after the zlib stream")

// more moves to the next chunk, which must be an IDAT.
func (r *idat) more() error {
	for len(r.rest) == 0 {
		c, err := r.d.next()
		if err != nil {
			return err
		}
		if string(c.typ[:]) != "IDAT" {
			return errShort
		}
		r.rest = c.data
	}
	return nil
}

// Read reads the stream.
func (r *idat) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := r.more(); err != nil {
		return 0, err
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

// ReadByte reads the stream's next byte.
func (r *idat) ReadByte() (byte, error) {
	if len(r.rest) == 0 {
		if err := r.more(); err != nil {
			return 0, err
		}
	}
	b := r.rest[0]
	r.rest = r.rest[1:]
	return b, nil
}

// pixels decodes the zlib stream of the IDAT chunks from first on into
// the planes.
func (d *Decoder) pixels(first chunk, indices bool) (Image, error) {
	d.idat = idat{d: d, rest: first.data}
	hdr := d.tmp[:]
	if _, err := io.ReadFull(&d.idat, hdr[:2]); err != nil {
		return Image{}, short(err)
	}
	// RFC 1950: deflate with a window of at most 32 KiB, a check multiple
	// of 31, and a preset dictionary only if it is the empty one, as
	// compress/zlib reads it without a dictionary.
	if hdr[0]&0x0f != 8 || hdr[0]>>4 > 7 || binary.BigEndian.Uint16(hdr)%31 != 0 {
		return Image{}, FormatError(fmt.Sprintf("pixel data: zlib header %02x %02x", hdr[0], hdr[1]))
	}
	if hdr[1]&0x20 != 0 {
		if _, err := io.ReadFull(&d.idat, hdr); err != nil {
			return Image{}, short(err)
		}
		if binary.BigEndian.Uint32(hdr) != adler32.Checksum(nil) {
			return Image{}, FormatError("pixel data: zlib stream needs a preset dictionary")
		}
	}
	if d.flate == nil {
		d.flate = flate.NewReader(&d.idat)
		d.adler = adler32.New()
	} else if err := d.flate.(flate.Resetter).Reset(&d.idat, nil); err != nil {
		return Image{}, err
	}
	d.adler.Reset()
	m := d.image(indices)
	bits := d.depth * channels(d.ct)
	step := (bits + 7) / 8 // the bytes per pixel that the filters step back
	n := 1 + (bits*d.w+7)/8
	d.cur, d.prev = grow(d.cur, n), grow(d.prev, n)
	clear(d.prev)
	if d.ct == ctPalette && !indices {
		d.row = grow(d.row, d.w)
	}
	for y := range d.h {
		if _, err := io.ReadFull(d.flate, d.cur); err != nil {
			return Image{}, short(err)
		}
		d.adler.Write(d.cur)
		if err := unfilter(d.cur, d.prev, step); err != nil {
			return Image{}, FormatError(fmt.Sprintf("row %d: %v", y, err))
		}
		d.store(m, y, d.cur[1:], indices)
		d.cur, d.prev = d.prev, d.cur
	}
	return m, d.end()
}

// short is err, an end of the pixel data before the last row, as
// errShort; other errors as they are.
func short(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return errShort
	}
	var fe FormatError
	if errors.As(err, &fe) {
		return err
	}
	return FormatError(fmt.Sprintf("pixel data: %v", err))
}

// end checks that the zlib stream ends after the last row with the
// checksum of what it held, and that the IDAT chunk holds nothing after it.
func (d *Decoder) end() error {
	b := d.tmp[:]
	n, err := d.flate.Read(b[:1])
	for i := 0; n == 0 && err == nil; i++ {
		if i == 100 {
			return io.ErrNoProgress
		}
		n, err = d.flate.Read(b[:1])
	}
	switch {
	case n != 0:
		return FormatError("too much pixel data: the zlib stream holds more than the rows")
	case err != io.EOF:
		return short(err)
	}
	if _, err := io.ReadFull(&d.idat, b); err != nil {
		return short(err)
	}
	if binary.BigEndian.Uint32(b) != d.adler.Sum32() {
		return FormatError("pixel data: zlib checksum mismatch")
	}
	if len(d.idat.rest) != 0 {
		return errTrailing
	}
	return nil
}

// image sizes the planes for the image and returns it.
func (d *Decoder) image(indices bool) Image {
	m := Image{Width: d.w, Height: d.h, Colour: Grey}
	n := 1
	switch {
	case d.ct == ctPalette && indices:
		m.Colour = Index
	case d.ct == ctRGB || d.ct == ctRGBA || d.ct == ctPalette:
		m.Colour, n = RGB, 3
	}
	for p := range n {
		d.planes[p] = grow(d.planes[p], d.w*d.h)
		m.Planes[p] = d.planes[p]
	}
	return m
}

// grow returns b resized to n bytes, reallocated only if it is too small.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// unfilter undoes the filter of row cur (its type in cur[0]) given the row
// above, prev, unfiltered; step is the bytes per pixel, at least 1.
func unfilter(cur, prev []byte, step int) error {
	c, p := cur[1:], prev[1:]
	switch cur[0] {
	case 0: // None
	case 1: // Sub
		for i := step; i < len(c); i++ {
			c[i] += c[i-step]
		}
	case 2: // Up
		for i, v := range p {
			c[i] += v
		}
	case 3: // Average
		for i := range step {
			c[i] += p[i] / 2
		}
		for i := step; i < len(c); i++ {
			c[i] += uint8((int(c[i-step]) + int(p[i])) / 2)
		}
	case 4: // Paeth
		unpaeth(c, p, step)
	default:
		return fmt.Errorf("filter type %d (0 to 4)", cur[0])
	}
	return nil
}

// unpaeth undoes the Paeth filter of row c given the row above, p: one
// channel at a time, its left and upper-left neighbours kept in registers
// (0 left of the first pixel).
func unpaeth(c, p []byte, step int) {
	for ch := range step {
		a, ul := 0, 0
		for i := ch; i < len(c); i += step {
			b := int(p[i])
			pa, pb := b-ul, a-ul // |p-a| and |p-b| before abs, p = a+b-ul
			pc := abs(pa + pb)
			pa, pb = abs(pa), abs(pb)
			switch {
			case pa <= pb && pa <= pc:
			case pb <= pc:
				a = b
			default:
				a = ul
			}
			a = (a + int(c[i])) & 0xff
			c[i] = uint8(a)
			ul = b
		}
	}
}

// abs is |x|.
func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// store writes row y of unfiltered samples into m's planes: grey scaled to
// 0..255, alpha dropped, a palette's indices or their colours.
func (d *Decoder) store(m Image, y int, row []byte, indices bool) {
	w := d.w
	px := m.Planes[0][y*w:][:w]
	switch d.ct {
	case ctGrey:
		if d.depth == 8 {
			copy(px, row)
		} else {
			unpack(px, row, d.depth, 0xff/(1<<d.depth-1))
		}
	case ctGreyAlpha, ctRGB, ctRGBA:
		d.interleaved(m, y, row, channels(d.ct))
	case ctPalette:
		if !indices {
			px = d.row
		}
		if d.depth == 8 {
			copy(px, row)
		} else {
			unpack(px, row, d.depth, 1)
		}
		if !indices {
			d.colours(m, y)
		}
	}
}

// interleaved writes row y of interleaved 8-bit pixels of n samples each
// into m's planes, the samples past the colour dropped: the first of each
// pixel for Grey, the first three for RGB.
func (d *Decoder) interleaved(m Image, y int, row []byte, n int) {
	w := d.w
	px := m.Planes[0][y*w:][:w]
	if m.Colour == Grey {
		for x := range px {
			px[x] = row[n*x]
		}
		return
	}
	g, b := m.Planes[1][y*w:][:w], m.Planes[2][y*w:][:w]
	for x := range px {
		s := row[n*x:][:3]
		px[x], g[x], b[x] = s[0], s[1], s[2]
	}
}

// unpack writes the samples of depth bits packed in row (the first in a
// byte's high bits), each times scale, into px.
func unpack(px, row []byte, depth, scale int) {
	perByte := 8 / depth
	mask := byte(1<<depth - 1)
	for x := range px {
		shift := 8 - depth*(x%perByte+1)
		px[x] = (row[x/perByte] >> shift & mask) * byte(scale)
	}
}

// colours writes the colours of d.row's palette indices into row y of
// m's planes; an index past the palette's entries is black, as in
// image/png.
func (d *Decoder) colours(m Image, y int) {
	w := d.w
	r, g, b := m.Planes[0][y*w:][:w], m.Planes[1][y*w:][:w], m.Planes[2][y*w:][:w]
	for x, i := range d.row {
		c := &d.palette[i]
		r[x], g[x], b[x] = c[0], c[1], c[2]
	}
}
