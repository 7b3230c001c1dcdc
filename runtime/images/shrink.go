package images

import "slices"

// A Scratch's buffers grow to the largest image it decodes and are then
// reused, so that decoding allocates nothing in steady state. One large
// image (a 40000 x 40000 PNG under a raised pixel limit) would then keep
// its worker's buffers at its size for the loader's life: a Scratch lets
// them go when they hold more than shrinkRatio times the decoded bytes of
// the largest of its last shrinkWindow images, and shrinkSlack bytes more.
// The next image allocates anew what it needs. shrinkRatio stays above
// what buffers hold for the images they were sized for: a progressive
// JPEG's coefficients are 4 bytes a sample against its planes' 1, toRGB's
// planes 3 bytes a pixel (a progressive 4:2:0 JPEG holds 7 times its
// planes' bytes), and a mask's planes come on top of its image's.
const (
	shrinkWindow = 8
	shrinkRatio  = 8
	shrinkSlack  = 16 << 20
)

// settle lets go of s's buffers when they hold far more than its recent
// images needed (see shrinkWindow). It runs before each decode, when the
// last image's planes are no longer in use.
func (s *Scratch) settle() {
	if s.held() > shrinkRatio*slices.Max(s.needs[:])+shrinkSlack {
		s.release()
	}
}

// note remembers the decoded bytes of image d, one of the last
// shrinkWindow.
func (s *Scratch) note(d *Decoded) {
	n := 0
	for _, p := range d.Planes[:d.planes()] {
		n += p.W * p.H
	}
	s.needs[s.next] = n
	s.next = (s.next + 1) % shrinkWindow
}

// held returns the bytes of the buffers s keeps between images: the
// decoders', the resampler's, toRGB's and the output planes.
func (s *Scratch) held() int {
	n := s.png.Held() + s.jpeg.held() + s.rs.held() + 8*cap(s.cols)
	for _, bufs := range [][][]uint8{s.out[:], s.rgb[:], s.rows[:]} {
		for _, b := range bufs {
			n += cap(b)
		}
	}
	return n
}

// release drops every buffer s keeps between images.
func (s *Scratch) release() {
	s.png.Release()
	s.jpeg.release()
	s.rs = resampler{}
	s.out, s.cols = [3][]uint8{}, nil
	s.rgb, s.rgbPlanes, s.rows = [3][]uint8{}, [3]Plane{}, [4][]uint8{}
}

// held returns the bytes of the resampler's buffers: 8 a word.
func (s *resampler) held() int {
	n := cap(s.packed) + cap(s.cols) + cap(s.tmp) + cap(s.acc)
	for _, a := range []*axis{&s.h, &s.v} {
		n += cap(a.start) + cap(a.count) + cap(a.coef) + cap(a.spread)
	}
	return 8 * n
}
