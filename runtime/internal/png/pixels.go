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
	if d.ct == ctPalette && !indices {
		d.row = grow(d.row, d.w)
	}
	passes := []pass{whole}
	if d.interlace {
		passes = adam7[:]
		for p := range d.spread {
			d.spread[p] = grow(d.spread[p], d.w)
		}
	}
	for i, p := range passes {
		if err := d.readPass(m, p, i, indices); err != nil {
			return Image{}, err
		}
	}
	return m, d.end()
}

// pass is the pixels of an image, or of one pass of an interlaced image:
// those of columns x0, x0+dx, ... in rows y0, y0+dy, ...
type pass struct{ x0, y0, dx, dy int }

// whole is a non-interlaced image's only pass; adam7 are an interlaced
// image's seven.
var (
	whole = pass{0, 0, 1, 1}
	adam7 = [7]pass{{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}}
)

// readPass reads the rows of pass p (the i-th of the image's) from the
// zlib stream, unfilters them and stores their pixels in m. A pass
// without pixels has no rows, not even their filter bytes.
func (d *Decoder) readPass(m Image, p pass, i int, indices bool) error {
	w, h := (d.w-p.x0+p.dx-1)/p.dx, (d.h-p.y0+p.dy-1)/p.dy
	if w <= 0 || h <= 0 {
		return nil
	}
	bits := d.depth * channels(d.ct)
	step := (bits + 7) / 8 // the bytes per pixel that the filters step back
	size := 1 + (bits*w+7)/8
	d.cur, d.prev = grow(d.cur, size), grow(d.prev, size)
	clear(d.prev)
	for r := range h {
		if _, err := io.ReadFull(d.flate, d.cur); err != nil {
			return short(err)
		}
		d.adler.Write(d.cur)
		if err := unfilter(d.cur, d.prev, step); err != nil {
			if d.interlace {
				return FormatError(fmt.Sprintf("pass %d, row %d: %v", i+1, r, err))
			}
			return FormatError(fmt.Sprintf("row %d: %v", r, err))
		}
		y := p.y0 + r*p.dy
		if p.dx == 1 {
			d.store(m.row(y), d.cur[1:], indices)
		} else {
			d.storeSpread(m, p, y, w, indices)
		}
		d.cur, d.prev = d.prev, d.cur
	}
	return nil
}

// storeSpread stores the w pixels of d.cur, a row of pass p, in row y of
// m: in d.spread first, then every p.dx-th pixel from column p.x0 on.
func (d *Decoder) storeSpread(m Image, p pass, y, w int, indices bool) {
	var dst [3][]byte
	for i, pl := range m.Planes {
		if pl != nil {
			dst[i] = d.spread[i][:w]
		}
	}
	d.store(dst, d.cur[1:], indices)
	for i, pl := range m.Planes {
		if pl == nil {
			continue
		}
		row := pl[y*d.w:][:d.w]
		for j, v := range dst[i] {
			row[p.x0+j*p.dx] = v
		}
	}
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

// row is row y of m's planes, nil for the planes m does not have.
func (m Image) row(y int) [3][]byte {
	var r [3][]byte
	for i, pl := range m.Planes {
		if pl != nil {
			r[i] = pl[y*m.Width:][:m.Width]
		}
	}
	return r
}

// store writes a row of unfiltered samples into dst, rows of the planes
// (nil for those the image does not have) as wide as the row's pixels:
// grey scaled to 0..255, alpha dropped, a palette's indices or their
// colours.
func (d *Decoder) store(dst [3][]byte, row []byte, indices bool) {
	px := dst[0]
	switch d.ct {
	case ctGrey:
		if d.depth == 8 {
			copy(px, row)
		} else {
			unpack(px, row, d.depth, 0xff/(1<<d.depth-1))
		}
	case ctGreyAlpha, ctRGB, ctRGBA:
		interleaved(dst, row, channels(d.ct))
	case ctPalette:
		if !indices {
			px = d.row[:len(px)]
		}
		if d.depth == 8 {
			copy(px, row)
		} else {
			unpack(px, row, d.depth, 1)
		}
		if !indices {
			d.colours(dst, px)
		}
	}
}

// interleaved writes a row of interleaved 8-bit pixels of n samples each
// into dst, the samples past the colour dropped: the first of each pixel
// for grey (dst[1] nil), the first three for RGB.
func interleaved(dst [3][]byte, row []byte, n int) {
	px := dst[0]
	if dst[1] == nil {
		for x := range px {
			px[x] = row[n*x]
		}
		return
	}
	g, b := dst[1][:len(px)], dst[2][:len(px)]
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

// colours writes the colours of palette indices idx into dst's red, green
// and blue rows; an index past the palette's entries is black, as in
// image/png.
func (d *Decoder) colours(dst [3][]byte, idx []byte) {
	r, g, b := dst[0][:len(idx)], dst[1][:len(idx)], dst[2][:len(idx)]
	for x, i := range idx {
		c := &d.palette[i]
		r[x], g[x], b[x] = c[0], c[1], c[2]
	}
}
