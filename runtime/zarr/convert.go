package zarr

import (
	"encoding/binary"
	"fmt"
	"math"

	lgruntime "github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/internal/strided"
	"github.com/loadergen/loadergen/runtime/zarr/zarrspec"
)

// Affine is the map of a volume key's normalisation, declared with the
// rule of conversions in runtime/zarr/zarrspec, which does no I/O.
type Affine = zarrspec.Affine

// A Conversion turns an array's elements into elements of another dtype
// as a box is copied (Layout.Convert), in the same pass: each value is
// read as a float64 (exactly, but for 64-bit integers beyond 2^53, which
// round to nearest even; a bool is 0 or 1), mapped by the Affine when
// there is one, and written as runtime.DType.Put writes it: rounded once
// to a float dtype, to nearest even (past its largest finite value, to an
// infinity), or exactly to an integer dtype, which holds every value of
// the array's (NewConversion's rule). NaN stays NaN. A Conversion is
// immutable and safe for concurrent use.
type Conversion struct {
	from, to lgruntime.DType
	affine   *Affine // nil for none
	// table is every converted element of a 1-byte from dtype (its bits,
	// in the low to.Size() bytes), indexed by the array's byte; nil for
	// wider dtypes, whose elements are converted one by one.
	table *[256]uint64
}

// convertBatch is how many values a Conversion holds as float64 at once,
// on the stack, between reading and writing them.
const convertBatch = 128

// NewConversion returns the conversion of elements of dtype from into
// elements of dtype to, mapped by m unless m is nil; it returns nil when
// there is nothing to do (from is to and m is nil). It refuses what
// zarrspec.CheckConversion refuses, saying why. Integer and bool dtypes
// convert into every float dtype; float dtypes into each other, narrower
// ones too (rounded as above).
func NewConversion(from, to lgruntime.DType, m *Affine) (*Conversion, error) {
	if err := zarrspec.CheckConversion(from, to, m); err != nil {
		return nil, err
	}
	if m != nil {
		m = &Affine{Sub: m.Sub, Div: m.Div, Mul: m.Mul, Add: m.Add} // the caller's may change
	}
	if from == to && m == nil {
		return nil, nil
	}
	c := &Conversion{from: from, to: to, affine: m}
	if from.Size() == 1 {
		c.table = new([256]uint64)
		var src [256]byte
		for i := range src {
			src[i] = byte(i)
		}
		var dst [256 * 8]byte
		c.convert(dst[:], 0, 1, src[:], 0, 1, len(src))
		w := to.Size()
		for i := range c.table {
			var b [8]byte
			copy(b[:], dst[i*w:(i+1)*w])
			c.table[i] = binary.LittleEndian.Uint64(b[:])
		}
	}
	return c, nil
}

// convertBox copies the elements of the Region from to the same elements
// of the Region to, converted by c: copyBox's work for a Layout's Convert,
// a run along the innermost axis at a time. The two must have the same
// shape, and elements of c's two dtypes.
func convertBox(to, from *strided.Region, c *Conversion) {
	if !to.SameAxes(from) || to.Elem() != c.to.Size() || from.Elem() != c.from.Size() {
		panic(fmt.Sprintf("zarr: convertBox from %v to %v between boxes of other shapes or element sizes (%d axes of %d bytes, %d of %d)", c.from, c.to, to.Rank(), to.Elem(), from.Rank(), from.Elem()))
	}
	if to.Count() == 0 {
		return
	}
	dst, src := to.Bytes(), from.Bytes()
	f := flatten(to, from)
	if f.n == 0 {
		c.run(dst, to.Start(), 1, src, from.Start(), 1, 1)
		return
	}
	in := f.n - 1
	var idx [maxRank]int
	do, so := to.Start(), from.Start()
	for {
		c.run(dst, do, f.dst[in], src, so, f.src[in], f.shape[in])
		// The next run: the axes at their last index go back to their first,
		// the one before them steps on.
		k := in - 1
		for ; k >= 0 && idx[k] == f.shape[k]-1; k-- {
			do -= f.dst[k] * idx[k]
			so -= f.src[k] * idx[k]
			idx[k] = 0
		}
		if k < 0 {
			return
		}
		idx[k]++
		do, so = do+f.dst[k], so+f.src[k]
	}
}

// one converts the single element src into dst and returns dst's element.
func (c *Conversion) one(dst *[8]byte, src []byte) []byte {
	c.run(dst[:], 0, 1, src, 0, 1, 1)
	return dst[:c.to.Size()]
}

// run converts n elements, strided in both buffers (offsets and strides in
// elements of each side's dtype): src[so + i·ss] goes to dst[do + i·ds].
// They are elements of the Regions convertBox was given; each access is
// bounds-checked all the same.
func (c *Conversion) run(dst []byte, do, ds int, src []byte, so, ss, n int) {
	if c.table == nil {
		c.convert(dst, do, ds, src, so, ss, n)
		return
	}
	t := c.table
	switch c.to.Size() {
	case 1:
		for range n {
			dst[do] = byte(t[src[so]])
			do, so = do+ds, so+ss
		}
	case 2:
		for range n {
			binary.LittleEndian.PutUint16(dst[2*do:], uint16(t[src[so]]))
			do, so = do+ds, so+ss
		}
	case 4:
		if ds == 1 && ss == 1 { // a row of a plain read: the bounds checked once
			d, s := dst[4*do:4*(do+n)], src[so:so+n]
			for i, b := range s {
				binary.LittleEndian.PutUint32(d[4*i:4*i+4], uint32(t[b]))
			}
			return
		}
		for range n {
			binary.LittleEndian.PutUint32(dst[4*do:], uint32(t[src[so]]))
			do, so = do+ds, so+ss
		}
	case 8:
		for range n {
			binary.LittleEndian.PutUint64(dst[8*do:], t[src[so]])
			do, so = do+ds, so+ss
		}
	}
}

// convert is run without the table: the values go through a batch of
// float64s on the stack, read, mapped and written a loop each.
func (c *Conversion) convert(dst []byte, do, ds int, src []byte, so, ss, n int) {
	var vals [convertBatch]float64
	for n > 0 {
		v := vals[:min(n, convertBatch)]
		load(c.from, v, src, so, ss)
		if c.affine != nil {
			c.affine.Apply(v)
		}
		store(c.to, dst, do, ds, v)
		n -= len(v)
		so += len(v) * ss
		do += len(v) * ds
	}
}

// load reads len(v) elements of d, src[so + i·ss], into v: uint16 and
// float32, the wider dtypes volumes hold most, in loops of their own.
func load(d lgruntime.DType, v []float64, src []byte, so, ss int) {
	switch d {
	case lgruntime.Uint16:
		for i := range v {
			v[i] = float64(binary.LittleEndian.Uint16(src[2*so:]))
			so += ss
		}
	case lgruntime.Float32:
		for i := range v {
			v[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(src[4*so:])))
			so += ss
		}
	default: // the 1-byte dtypes (read once, into the table) and the others
		w := d.Size()
		for i := range v {
			v[i] = d.Value(src[w*so : w*(so+1)])
			so += ss
		}
	}
}

// store writes the values v as elements of d, dst[do + i·ds].
func store(d lgruntime.DType, dst []byte, do, ds int, v []float64) {
	switch d {
	case lgruntime.Float32:
		for _, x := range v {
			binary.LittleEndian.PutUint32(dst[4*do:], math.Float32bits(float32(x)))
			do += ds
		}
	case lgruntime.Float64:
		for _, x := range v {
			binary.LittleEndian.PutUint64(dst[8*do:], math.Float64bits(x))
			do += ds
		}
	default: // the integers (each value one the dtype holds), bool and the 16-bit floats
		w := d.Size()
		for _, x := range v {
			d.Put(dst[w*do:w*(do+1)], x)
			do += ds
		}
	}
}
