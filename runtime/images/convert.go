package images

// PIL converts a JPEG to RGB at full resolution, clamping each pixel, and
// resizes after: libjpeg (inside PIL) upsamples the chroma planes with its
// triangle filter, converts YCbCr to RGB (or YCCK to CMYK), and PIL turns
// Adobe's inverted CMYK into RGB. Resampling the planes first and
// converting after is not the same where a pixel's colour leaves 0..255,
// at the edges of saturated colours: averaging then clamping is not
// clamping then averaging (PIL's own resize of skimage's coffee.png at
// 4:2:0, q90, to 384 x 256 is 20 levels off its RGB resize when it
// resizes the YCbCr planes). So toRGB does what PIL does, for the pixels
// that the resampling reads and no others.

// The fixed point of libjpeg's YCbCr to RGB conversion (jdcolor.c's
// build_ycc_rgb_table, 16.16): R = Y + 1.402 (Cr-128), G = Y - 0.34414
// (Cb-128) - 0.71414 (Cr-128), B = Y + 1.772 (Cb-128), the products of R
// and B rounded, G's sum rounded, each clamped to 0..255.
const (
	crToR, cbToG, crToG, cbToB = 91881, 22554, 46802, 116130
	half16                     = 1 << 15
)

// toRGB converts the pixels sp of image d (YCbCr, CMYK, YCCK, or RGB of
// subsampled planes) to red, green and blue planes in s.rgb, as PIL's
// convert("RGB") of the image that libjpeg decodes: each plane upsampled
// as libjpeg does it (upsampleRow), YCbCr to RGB by libjpeg's fixed point
// (ycbcrRow), YCCK to CMYK by libjpeg's (ycckRow), and Adobe's inverted
// CMYK to RGB by PIL's (cmykRow).
// The planes are the image's but hold sp alone: their origin is sp's
// corner. Their buffers, as the upsampled rows', are sized for the whole
// image, whatever sp: the first image of a dataset's size grows them once
// and for all.
func (s *Scratch) toRGB(d *Decoded, sp rect) *[3]Plane {
	w, h := sp.x1-sp.x0, sp.y1-sp.y0
	var out [3][]uint8
	for p := range out {
		s.rgb[p] = grow(s.rgb[p], d.W*d.H)[:w*h]
		out[p] = s.rgb[p]
		s.rgbPlanes[p] = Plane{Pix: s.rgb[p], Stride: w, W: d.W, H: d.H, SubX: 1, SubY: 1, x0: sp.x0, y0: sp.y0}
	}
	n := d.planes()
	var in [4][]uint8 // a row of each plane, upsampled
	for y := range h {
		for p := range n {
			in[p] = s.upsampleRow(p, &d.Planes[p], sp.y0+y, sp.x0, w)
		}
		r, g, b := out[0][y*w:][:w], out[1][y*w:][:w], out[2][y*w:][:w]
		switch d.Colour {
		case RGB: // subsampled planes
			copy(r, in[0])
			copy(g, in[1])
			copy(b, in[2])
		case YCbCr:
			ycbcrRow(r, g, b, in[0], in[1], in[2])
		case YCCK:
			ycbcrRow(r, g, b, in[0], in[1], in[2])
			ycckRow(r, g, b, in[3])
		case CMYK:
			cmykRow(r, g, b, in[0], in[1], in[2], in[3])
		}
	}
	return &s.rgbPlanes
}

// upsampleRow returns the samples of plane p (number i of its image) for
// the n image pixels from (x0, y): the plane's own row where it is at
// full size, else s.rows[i] written as libjpeg-turbo's upsampler
// (jdsample.c, _jinit_upsampler's choice) makes it:
//   - h2v1 (a sample covers 2 pixels across) and h2v2 (2 across and 2
//     down), planes wider than 2 samples: its fancy upsampling, a triangle
//     filter: each pixel 3/4 of its sample and 1/4 of the nearer
//     neighbour, across, and down for h2v2, the plane's edge samples
//     repeated past it; h2v1 rounds the pixels 1/4 up on the left of a
//     sample and 1/2 on the right, h2v2 (in 1/16) 8/16 and 7/16.
//   - h1v2 (2 down): the same filter down, rounded 1/4 up in a sample's
//     upper pixel and 1/2 in its lower.
//   - any other factors, and h2v1 and h2v2 planes of 2 samples or fewer
//     across: each sample repeated.
func (s *Scratch) upsampleRow(i int, p *Plane, y, x0, n int) []uint8 {
	if p.SubX == 1 && p.SubY == 1 {
		return p.Pix[y*p.Stride:][x0 : x0+n]
	}
	sy := min(y/p.SubY, p.H-1)
	near := p.Pix[sy*p.Stride:][:p.W]
	far := near // the nearer row above or below, for a filter down
	if p.SubY == 2 {
		fy := sy - 1
		if y%2 == 1 {
			fy = sy + 1
		}
		far = p.Pix[min(max(fy, 0), p.H-1)*p.Stride:][:p.W]
	}
	switch {
	case p.SubX == 2 && p.SubY <= 2 && p.W > 2:
		even, odd := int32(8), int32(7) // h2v2's rounding, in 1/16
		if p.SubY == 1 {
			even, odd = 4, 8 // h2v1's 1/4 and 1/2
		}
		s.rows[i] = grow(s.rows[i], 2*p.W+2)[:n+2] // whole pairs, from x0's to the last pixel's
		fancyRow(s.rows[i], near, far, x0/2, (x0+n+1)/2, even, odd)
		return s.rows[i][x0%2:][:n]
	case p.SubX == 1 && p.SubY == 2:
		s.rows[i] = grow(s.rows[i], p.W)[:n]
		dst, bias := s.rows[i], int32(1+y%2)
		for x := range dst {
			dst[x] = uint8((3*int32(near[x0+x]) + int32(far[x0+x]) + bias) >> 2)
		}
		return dst
	}
	s.rows[i] = grow(s.rows[i], p.W*p.SubX)[:n]
	dst := s.rows[i]
	for x := range dst {
		dst[x] = near[min((x0+x)/p.SubX, p.W-1)]
	}
	return dst
}

// fancyRow writes into dst the two pixels of each sample k0 .. k1-1 of a
// row upsampled 2 across from samples near, and 2 down from near and far
// (far = near for a filter across alone), those of sample k at
// dst[2(k-k0)] and dst[2(k-k0)+1]: each sample's column sum, 3 near + 1
// far (4 near with far = near), weighed 3/4 and 1/4 with its neighbour's
// on the pixel's side (its own past the row's ends), plus even's rounding
// (in 1/16) for the left pixel and odd's for the right, shifted down by
// 4. fancySIMD writes the pixels of the samples from max(k0, 1) on where
// it can, with the same bits; the Go loop writes the rest.
func fancyRow(dst, near, far []uint8, k0, k1 int, even, odd int32) {
	last := len(near) - 1
	far = far[:len(near)]
	sum := func(k int) int32 {
		k = min(max(k, 0), last)
		return 3*int32(near[k]) + int32(far[k])
	}
	from := max(k0, 1)
	to := from + fancySIMD(dst[2*(from-k0):], near, far, from, min(k1, last), even, odd)
	prev, cur := sum(k0-1), sum(k0)
	for k := k0; k < k1; k++ {
		if k == from && to > from {
			if k = to; k >= k1 {
				return
			}
			prev, cur = sum(k-1), sum(k)
		}
		next := sum(k + 1)
		px := dst[2*(k-k0):][:2]
		px[0] = uint8((3*cur + prev + even) >> 4)
		px[1] = uint8((3*cur + next + odd) >> 4)
		prev, cur = cur, next
	}
}

// ycbcrRow converts a row of Y, Cb and Cr to red, green and blue in r, g
// and b, as libjpeg's ycc_rgb_convert does. ycbcrSIMD converts the row's
// first pixels where it can, with the same bits.
func ycbcrRow(r, g, b, y, cb, cr []uint8) {
	g, b, y, cb, cr = g[:len(r)], b[:len(r)], y[:len(r)], cb[:len(r)], cr[:len(r)]
	for i := ycbcrSIMD(r, g, b, y, cb, cr); i < len(r); i++ {
		yy, u, w := int32(y[i]), int32(cb[i])-128, int32(cr[i])-128
		r[i] = clamp8(yy + (crToR*w+half16)>>16)
		g[i] = clamp8(yy + (half16-cbToG*u-crToG*w)>>16)
		b[i] = clamp8(yy + (cbToB*u+half16)>>16)
	}
}

// clamp8 is v clamped to 0..255.
func clamp8(v int32) uint8 { return uint8(min(max(v, 0), 255)) }

// ycckRow turns red, green and blue converted from a YCCK image's Y, Cb
// and Cr, with its K row k, into the image's RGB in place: libjpeg's
// ycck_cmyk_convert stores 255 less each as the C, M and Y that cmykRow
// reads, which leaves their ink the converted values.
func ycckRow(r, g, b, k []uint8) {
	g, b, k = g[:len(r)], b[:len(r)], k[:len(r)]
	for i := range r {
		r[i], g[i], b[i] = fromInk(r[i], k[i]), fromInk(g[i], k[i]), fromInk(b[i], k[i])
	}
}

// cmykRow converts a row of CMYK as an Adobe JPEG stores it, inverted
// (255 is no ink), to red, green and blue, as PIL does: its JPEG plugin
// reads the bytes inverted ("CMYK;I"), so that a channel's ink is 255
// less the byte, and convert("RGB") takes each (fromInk).
func cmykRow(r, g, b, c, m, y, k []uint8) {
	g, b, c, m, y, k = g[:len(r)], b[:len(r)], c[:len(r)], m[:len(r)], y[:len(r)], k[:len(r)]
	for i := range r {
		r[i], g[i], b[i] = fromInk(255-c[i], k[i]), fromInk(255-m[i], k[i]), fromInk(255-y[i], k[i])
	}
}

// fromInk is the value PIL's cmyk2rgb (Convert.c) gives a channel of ink
// ink (255: full) under black stored as k (Adobe's inverted byte,
// 255 - K): 255 - K less ink times (255 - K) / 255, the product rounded
// by MULDIV255. It never leaves 0..255, to which PIL clamps.
func fromInk(ink, k uint8) uint8 {
	t := int32(ink)*int32(k) + 128
	return k - uint8((t>>8+t)>>8)
}
