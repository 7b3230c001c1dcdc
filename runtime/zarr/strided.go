package zarr

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unsafe"

	"github.com/loadergen/loadergen/runtime/internal/strided"
)

// The box copies below index through unsafe pointers (copyRun) and SSE2
// assembly (transposeGrid), with no bounds check per element. They take
// their buffers and offsets only from strided.Regions, which were checked
// once, with overflow-checked arithmetic, to lie inside their buffers, and
// they index only the Regions' elements: the walks over the axes step by
// strides from one element to the next, and every product of a stride and
// a length they form is at most twice the Region's span.

// maxRank bounds the rank of the arrays this package reads, so that the
// per-read index arithmetic lives in fixed arrays on the stack. NumPy 1.x
// allows 32 dimensions too.
const maxRank = strided.MaxRank

// cStrides writes the C-order strides, in elements, of shape into out.
func cStrides(shape []int, out []int) {
	s := 1
	for k := len(shape) - 1; k >= 0; k-- {
		out[k] = s
		s *= shape[k]
	}
}

// flat is a box with axes of length 1 dropped and contiguous neighbours
// merged: the loops below then run as few times as the layouts allow.
type flat struct {
	n        int
	shape    [maxRank]int
	dst, src [maxRank]int // strides
}

// flatten builds the flat form of a copy from src to dst, two Regions of
// one shape (src is nil for a fill).
func flatten(dst, src *strided.Region) flat {
	var f flat
	for k := range dst.Rank() {
		n := dst.Len(k)
		if n == 1 {
			continue
		}
		d, s := dst.Stride(k), 0
		if src != nil {
			s = src.Stride(k)
		}
		if f.n > 0 {
			last := f.n - 1
			if f.dst[last] == d*n && f.src[last] == s*n {
				f.shape[last] *= n
				f.dst[last], f.src[last] = d, s
				continue
			}
		}
		f.shape[f.n], f.dst[f.n], f.src[f.n] = n, d, s
		f.n++
	}
	return f
}

// copyBox copies the elements of the Region from to the same elements of
// the Region to; the two must have the same shape and element size.
func copyBox(to, from *strided.Region) {
	if !to.SameShape(from) {
		panic(fmt.Sprintf("zarr: copyBox between boxes of other shapes or element sizes (%d axes of %d bytes, %d of %d)", to.Rank(), to.Elem(), from.Rank(), from.Elem()))
	}
	if to.Count() == 0 {
		return
	}
	dst, src, elem := to.Bytes(), from.Bytes(), to.Elem()
	f := flatten(to, from)
	if f.n == 0 {
		copy(dst[to.Start()*elem:(to.Start()+1)*elem], src[from.Start()*elem:])
		return
	}
	in := f.n - 1
	run, ds, ss := f.shape[in], f.dst[in], f.src[in]
	if blockSide(elem) > 0 && ss == 1 && ds != 1 && ds != -1 {
		for t := range in {
			if f.dst[t] == 1 || f.dst[t] == -1 { // a transpose: square blocks
				copyPlanes(dst, to.Start(), src, from.Start(), f, t, elem)
				return
			}
		}
	}
	// Contiguous source rows in planes along axis in-2: at each plane's
	// first row, the next plane is asked for (prefetchPlane).
	planes := in >= 2 && ss == 1
	var idx [maxRank]int
	do, so := to.Start(), from.Start()
	for {
		if planes && idx[in-1] == 0 && idx[in-2]+1 < f.shape[in-2] {
			prefetchPlane(src, (so+f.src[in-2])*elem, f.src[in-1]*elem, f.shape[in-1], run*elem)
		}
		if ds == 1 && ss == 1 {
			copy(dst[do*elem:(do+run)*elem], src[so*elem:(so+run)*elem])
		} else {
			copyRun(dst, do, ds, src, so, ss, run, elem)
		}
		k := in - 1
		for ; k >= 0; k-- {
			idx[k]++
			do += f.dst[k]
			so += f.src[k]
			if idx[k] < f.shape[k] {
				break
			}
			do -= f.dst[k] * f.shape[k]
			so -= f.src[k] * f.shape[k]
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

// copyPlanes copies a flat box of bytes in planes of its axes t and the
// innermost one, where the innermost is contiguous in src and t is in dst
// (a transpose); the other axes run as copyBox runs them. (The three walks
// over the outer axes, here, in copyBox and in fillBox, are written out
// each: a shared stepping function, not inlined, slowed plain box reads by
// a fifth.)
func copyPlanes(dst []byte, do int, src []byte, so int, f flat, t, elem int) {
	in := f.n - 1
	next := in - 1 // the axis from one plane to the next
	if next == t {
		next--
	}
	var idx [maxRank]int
	for {
		if next >= 0 && idx[next]+1 < f.shape[next] {
			prefetchPlane(src, (so+f.src[next])*elem, f.src[t]*elem, f.shape[t], f.shape[in]*elem)
		}
		copyPlane(dst, do, f.dst[t], f.dst[in], src, so, f.src[t], f.shape[t], f.shape[in], elem)
		k := in - 1
		for ; k >= 0; k-- {
			if k == t {
				continue
			}
			idx[k]++
			do += f.dst[k]
			so += f.src[k]
			if idx[k] < f.shape[k] {
				break
			}
			do -= f.dst[k] * f.shape[k]
			so -= f.src[k] * f.shape[k]
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

// blockSide is the side, in elements, of the square blocks that
// transposeGrid moves for elements of elem bytes (8 x 8 bytes, 4 x 4
// elements of 4 bytes), or 0 for the sizes it does not move.
func blockSide(elem int) int {
	switch elem {
	case 1:
		return 8
	case 4:
		return 4
	}
	return 0
}

// copyPlane copies an nt x nj plane of elements of elem bytes (a size
// blockSide knows): element (i, j) goes from src[so + i·st + j] to
// dst[do + i·dt + j·dj], with dt 1 or -1. A plane at least a block wide
// both ways goes in blocks (transposeGrid); where nt or nj is not a
// multiple of the block's side, a last row or column of blocks ends at the
// plane's edge, overlapping the one before it, whose elements it writes
// again alike. Every block is made of the plane's elements, which are
// elements of the Regions copyBox was given, so they lie inside both
// buffers. A narrower plane goes element by element.
func copyPlane(dst []byte, do, dt, dj int, src []byte, so, st, nt, nj, elem int) {
	b := blockSide(elem)
	if nt < b || nj < b {
		for i := range nt {
			for j := range nj {
				o, s := (do+i*dt+j*dj)*elem, (so+i*st+j)*elem
				copy(dst[o:o+elem], src[s:s+elem])
			}
		}
		return
	}
	// blocks moves ni x nk blocks, the first at row i0 and column j0.
	e := elem
	blocks := func(i0, j0, ni, nk int) {
		if dt == 1 {
			transposeGrid(e, dst, (do+i0+j0*dj)*e, dj*e, b*e, b*dj*e, src, (so+i0*st+j0)*e, st*e, b*st*e, b*e, ni, nk)
		} else { // rows in reverse make each column's elements run backwards
			transposeGrid(e, dst, (do-i0-b+1+j0*dj)*e, dj*e, -b*e, b*dj*e, src, (so+(i0+b-1)*st+j0)*e, -st*e, b*st*e, b*e, ni, nk)
		}
	}
	blocks(0, 0, nt/b, nj/b)
	if nt%b != 0 {
		blocks(nt-b, 0, 1, nj/b)
	}
	if nj%b != 0 {
		blocks(0, nj-b, nt/b, 1)
	}
	if nt%b != 0 && nj%b != 0 {
		blocks(nt-b, nj-b, 1, 1)
	}
}

// transposeBlockGo moves an 8 x 8 block of bytes: row r, the 8 bytes at
// src[so + r·ss], becomes column r, byte r of the 8 bytes at
// dst[do + c·ds] for each column c. transposeGrid uses it, and
// transposeBlock32Go, on hosts without the SSE2 forms, and with -tags
// purego.
func transposeBlockGo(dst []byte, do, ds int, src []byte, so, ss int) {
	var m [8]uint64
	for r := range m {
		m[r] = binary.LittleEndian.Uint64(src[so+r*ss:])
	}
	transposeBytes(&m)
	for c, w := range m {
		binary.LittleEndian.PutUint64(dst[do+c*ds:], w)
	}
}

// transposeBytes transposes the 8 x 8 bytes of m, where byte c of m[r] is
// row r, column c: afterwards byte r of m[c] is what byte c of m[r] was.
// It swaps the off-diagonal 4 x 4 blocks, then the 2 x 2 blocks within
// them, then single bytes.
func transposeBytes(m *[8]uint64) {
	for r := range 4 {
		a, b := m[r], m[r+4]
		m[r], m[r+4] = a&0x00000000ffffffff|b<<32, a>>32|b&0xffffffff00000000
	}
	for _, r := range [4]int{0, 1, 4, 5} {
		a, b := m[r], m[r+2]
		m[r], m[r+2] = a&0x0000ffff0000ffff|b&0x0000ffff0000ffff<<16, a>>16&0x0000ffff0000ffff|b&0xffff0000ffff0000
	}
	for _, r := range [4]int{0, 2, 4, 6} {
		a, b := m[r], m[r+1]
		m[r], m[r+1] = a&0x00ff00ff00ff00ff|b&0x00ff00ff00ff00ff<<8, a>>8&0x00ff00ff00ff00ff|b&0xff00ff00ff00ff00
	}
}

// transposeBlock32Go moves a 4 x 4 block of elements of 4 bytes: row r,
// the 16 bytes at src[so + r·ss], becomes column r, element r of the 16
// bytes at dst[do + c·ds] for each column c.
func transposeBlock32Go(dst []byte, do, ds int, src []byte, so, ss int) {
	var m [4][4]uint32
	for r := range m {
		for c := range m[r] {
			m[r][c] = binary.LittleEndian.Uint32(src[so+r*ss+4*c:])
		}
	}
	for c := range 4 {
		for r := range m {
			binary.LittleEndian.PutUint32(dst[do+c*ds+4*r:], m[r][c])
		}
	}
}

// copyRun copies n elements, strided in both buffers: elements of the
// Regions copyBox was given.
func copyRun(dst []byte, do, ds int, src []byte, so, ss, n, elem int) {
	if ss == 1 && ds == -1 {
		reverseRun(dst, do, src, so, n, elem)
		return
	}
	switch elem {
	case 1:
		// This loop, the one of transposed uint8 crops, indexes through
		// unsafe pointers: a bounds check per byte costs as much as the
		// copy. Its bytes are elements of validated Regions.
		dp, sp := unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src))
		for range n {
			*(*byte)(unsafe.Add(dp, do)) = *(*byte)(unsafe.Add(sp, so))
			do, so = do+ds, so+ss
		}
	case 2:
		for range n {
			binary.LittleEndian.PutUint16(dst[2*do:], binary.LittleEndian.Uint16(src[2*so:]))
			do, so = do+ds, so+ss
		}
	case 4:
		for range n {
			binary.LittleEndian.PutUint32(dst[4*do:], binary.LittleEndian.Uint32(src[4*so:]))
			do, so = do+ds, so+ss
		}
	case 8:
		for range n {
			binary.LittleEndian.PutUint64(dst[8*do:], binary.LittleEndian.Uint64(src[8*so:]))
			do, so = do+ds, so+ss
		}
	default:
		for range n {
			copy(dst[do*elem:(do+1)*elem], src[so*elem:(so+1)*elem])
			do, so = do+ds, so+ss
		}
	}
}

// reverseRun copies n contiguous elements of src from so to dst backwards
// from do (a mirrored innermost axis), a word of 8 bytes at a time.
func reverseRun(dst []byte, do int, src []byte, so, n, elem int) {
	i := 0
	switch elem { // a word of 8 bytes holds 8, 4 or 2 elements
	case 1:
		i = reverseBytes(dst, do, src, so, n)
	case 2:
		for ; i+4 <= n; i += 4 {
			x := bits.ReverseBytes64(binary.LittleEndian.Uint64(src[2*(so+i):]))
			binary.LittleEndian.PutUint64(dst[2*(do-i-3):], x>>8&0x00ff00ff00ff00ff|x&0x00ff00ff00ff00ff<<8)
		}
	case 4:
		for ; i+2 <= n; i += 2 {
			binary.LittleEndian.PutUint64(dst[4*(do-i-1):], bits.RotateLeft64(binary.LittleEndian.Uint64(src[4*(so+i):]), 32))
		}
	}
	for ; i < n; i++ {
		copy(dst[(do-i)*elem:(do-i+1)*elem], src[(so+i)*elem:(so+i+1)*elem])
	}
}

// fillBox sets every element of the Region to to value, one element.
func fillBox(to *strided.Region, value []byte) {
	elem := to.Elem()
	if len(value) != elem {
		panic(fmt.Sprintf("zarr: fillBox of %d-byte elements with a %d-byte value", elem, len(value)))
	}
	if to.Count() == 0 {
		return
	}
	dst := to.Bytes()
	// A box whose elements fill a whole range of dst, whatever their order
	// (a crop turned or mirrored into its sample), is one run.
	if to.Dense() {
		lo, hi := to.Span()
		Repeat(dst[lo*elem:(hi+1)*elem], value)
		return
	}
	f := flatten(to, nil)
	if f.n == 0 {
		copy(dst[to.Start()*elem:], value)
		return
	}
	in := f.n - 1
	run, ds := f.shape[in], f.dst[in]
	var idx [maxRank]int
	do := to.Start()
	for {
		if ds == 1 {
			Repeat(dst[do*elem:(do+run)*elem], value)
		} else {
			for i := range run {
				copy(dst[(do+i*ds)*elem:], value)
			}
		}
		k := in - 1
		for ; k >= 0; k-- {
			idx[k]++
			do += f.dst[k]
			if idx[k] < f.shape[k] {
				break
			}
			do -= f.dst[k] * f.shape[k]
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

// Repeat fills b with copies of value (one element; a last copy may be
// cut short), doubling what is written with each copy: how reads fill the
// parts of a box outside an array with Layout.Outside.
func Repeat(b, value []byte) {
	n := copy(b, value)
	for n < len(b) {
		n += copy(b[n:], b[:n])
	}
}
