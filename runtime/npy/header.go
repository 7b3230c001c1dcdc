package npy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/loadergen/loadergen/internal/sizes"
	"github.com/loadergen/loadergen/runtime"
)

// magic starts every .npy file.
const magic = "\x93NUMPY"

// header is the content of a .npy header dict.
type header struct {
	descr      string // empty when structured
	structured bool   // descr was a list of fields
	fortran    bool
	shape      []int64
}

// readFileHeader reads the preamble and header of an open .npy file and
// returns the header, where the data starts and the file's size; its
// errors do not name the path.
func readFileHeader(osf *os.File) (h header, dataOff, size int64, err error) {
	st, err := osf.Stat()
	if err != nil {
		return h, 0, 0, err
	}
	size = st.Size()
	h, dataOff, err = readHeader(osf, size)
	return h, dataOff, size, err
}

// readHeader reads the preamble and header of the .npy file of size bytes
// that r holds from offset 0, and returns the header and where the data
// starts; its errors do not name the file.
func readHeader(r io.ReaderAt, size int64) (h header, dataOff int64, err error) {
	var pre [12]byte // magic, version, header length (2 or 4 bytes)
	n, err := r.ReadAt(pre[:], 0)
	if err != nil && err != io.EOF {
		return h, 0, fmt.Errorf("reading header: %w", err)
	}
	if n < len(magic) || string(pre[:len(magic)]) != magic {
		return h, 0, fmt.Errorf("not a .npy file: it does not start with %q", magic)
	}
	if n < 8 {
		return h, 0, fmt.Errorf("file is %d bytes, too short for a .npy header", size)
	}
	major, minor := pre[6], pre[7]
	var hdrStart int
	switch {
	case major == 1 && minor == 0:
		hdrStart = 10
	case (major == 2 || major == 3) && minor == 0:
		hdrStart = 12
	default:
		return h, 0, fmt.Errorf("unsupported .npy format version %d.%d (loadergen reads 1.0, 2.0 and 3.0)", major, minor)
	}
	if n < hdrStart {
		return h, 0, fmt.Errorf("file is %d bytes, too short for a version %d.0 header", size, major)
	}
	var hdrLen int64
	if major == 1 {
		hdrLen = int64(binary.LittleEndian.Uint16(pre[8:]))
	} else {
		hdrLen = int64(binary.LittleEndian.Uint32(pre[8:]))
	}
	dataOff = int64(hdrStart) + hdrLen
	if dataOff > size {
		return h, 0, fmt.Errorf("header length %d runs past the end of the file (%d bytes)", hdrLen, size)
	}
	limit, err := MaxHeaderSize()
	if err != nil {
		return h, 0, err
	}
	// numpy counts the decoded header's characters: a byte each in
	// versions 1 and 2 (latin-1), 1 to 4 bytes each in version 3 (UTF-8),
	// whose bytes are counted once read.
	perChar := int64(1)
	if major == 3 {
		perChar = utf8.UTFMax
	}
	if hdrLen > int64(limit)*perChar {
		return h, 0, headerTooLong(hdrLen, limit)
	}
	raw := make([]byte, hdrLen)
	if _, err := r.ReadAt(raw, int64(hdrStart)); err != nil {
		return h, 0, fmt.Errorf("reading header: %w", err)
	}
	if major == 3 {
		if n := utf8.RuneCount(raw); n > limit {
			return h, 0, headerTooLong(int64(n), limit)
		}
	}
	// Versions 1 and 2 are latin-1, version 3 UTF-8; the parser only needs
	// ASCII, which both encode alike.
	if h, err = parseHeader(string(raw)); err != nil {
		return h, 0, fmt.Errorf("header is not parseable: %w: %s", err, quoteHeader(raw))
	}
	return h, dataOff, nil
}

// quoteHeader quotes a header for a message: without its padding, and only
// its first 200 bytes.
func quoteHeader(raw []byte) string {
	s := strings.TrimRight(string(raw), " \n")
	if len(s) > 200 {
		return strconv.Quote(s[:200]) + "..."
	}
	return strconv.Quote(s)
}

// parseHeader parses the Python dict literal of a .npy header, e.g.
// "{'descr': '<f4', 'fortran_order': False, 'shape': (10, 3), }". It accepts
// the subset of Python literals numpy writes: strings in single or double
// quotes, True and False, integers (with Python 2's 'L' suffix), tuples and
// lists, keys in any order, nested no deeper than Python parses them
// (maxNesting). It requires exactly the keys 'descr', 'fortran_order' and
// 'shape'.
func parseHeader(s string) (header, error) {
	p := &parser{s: s, depth: 1}
	var h header
	seen := map[string]bool{}
	p.skipSpace()
	if err := p.expect('{'); err != nil {
		return h, err
	}
	for {
		p.skipSpace()
		if p.peek() == '}' {
			p.pos++
			break
		}
		keyAt := p.pos
		v, err := p.value()
		if err != nil {
			return h, err
		}
		key, ok := v.(string)
		if !ok {
			return h, fmt.Errorf("key %s at offset %d is not a string", s[keyAt:p.pos], keyAt)
		}
		if seen[key] {
			return h, fmt.Errorf("duplicate key '%s'", key)
		}
		seen[key] = true
		p.skipSpace()
		if err := p.expect(':'); err != nil {
			return h, err
		}
		p.skipSpace()
		valAt := p.pos
		if v, err = p.value(); err != nil {
			return h, err
		}
		if err := h.set(key, v, s[valAt:p.pos]); err != nil {
			return h, err
		}
		p.skipSpace()
		if p.peek() == ',' {
			p.pos++
		} else if p.peek() != '}' {
			return h, p.errorf("expected ',' or '}'")
		}
	}
	p.skipSpace()
	if p.pos != len(s) {
		return h, p.errorf("unexpected text after the dict")
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf("missing key '%s'", k)
		}
	}
	return h, nil
}

// set stores the value v of key, whose source text is text, in h.
func (h *header) set(key string, v any, text string) error {
	switch key {
	case "descr":
		switch v := v.(type) {
		case string:
			h.descr = v
		case pyList:
			h.structured = true
		default:
			return fmt.Errorf("'descr' is %s, want a string", text)
		}
	case "fortran_order":
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("'fortran_order' is %s, want True or False", text)
		}
		h.fortran = b
	case "shape":
		t, ok := v.(pyTuple)
		if !ok {
			return fmt.Errorf("'shape' is %s, want a tuple of ints", text)
		}
		h.shape = make([]int64, len(t))
		for i, e := range t {
			n, ok := e.(int64)
			if !ok {
				return fmt.Errorf("'shape' is %s, want a tuple of ints", text)
			}
			h.shape[i] = n
		}
	default:
		return fmt.Errorf("unknown key '%s'", key)
	}
	return nil
}

// check validates a parsed header against spec and returns the bytes per
// sample and in all; the data starts at dataOff. The shape must be
// [lead, spec.Sample...]; lead names the leading dimension in messages.
func check(h header, spec Spec, lead string, dataOff int64) (sampleBytes, total int64, err error) {
	if err := checkLayout(h, spec); err != nil {
		return 0, 0, err
	}
	wantShape := "(" + lead
	for _, d := range spec.Sample {
		wantShape += ", " + strconv.Itoa(d)
	}
	if len(spec.Sample) == 0 {
		wantShape += ","
	}
	wantShape += ")"
	if len(h.shape) == 0 {
		return 0, 0, fmt.Errorf("zero-dimensional array (shape ()), key %q expects %s", spec.Key, wantShape)
	}
	for _, d := range h.shape {
		if d < 0 {
			return 0, 0, fmt.Errorf("shape %s has a negative dimension", formatShape(h.shape))
		}
	}
	match := len(h.shape) == 1+len(spec.Sample)
	for i := 0; match && i < len(spec.Sample); i++ {
		match = h.shape[1+i] == int64(spec.Sample[i])
	}
	if !match {
		return 0, 0, fmt.Errorf("shape %s, key %q expects %s", formatShape(h.shape), spec.Key, wantShape)
	}
	sampleBytes, ok := int64(spec.DType.Size()), true
	for _, d := range h.shape[1:] {
		sampleBytes, ok = mulSize(sampleBytes, d, ok)
	}
	total, ok = mulSize(sampleBytes, h.shape[0], ok)
	if !ok || total > math.MaxInt-dataOff || int64(int(h.shape[0])) != h.shape[0] {
		return 0, 0, fmt.Errorf("shape %s of %v overflows int%d", formatShape(h.shape), spec.DType, strconv.IntSize)
	}
	return sampleBytes, total, nil
}

// checkLayout checks a parsed header's dtype against spec's and that it
// is C-ordered.
func checkLayout(h header, spec Spec) error {
	want := fmt.Sprintf("schema key %q expects %v (%s)", spec.Key, spec.DType, expectedDescr(spec.DType))
	switch found, known := descrDType[h.descr]; {
	case h.structured:
		return fmt.Errorf("structured dtype (a list of fields) is not supported, %s", want)
	case len(h.descr) >= 2 && h.descr[1] == 'O':
		return fmt.Errorf("object dtype '%s' is not supported, %s", h.descr, want)
	case accepts(spec.DType, h.descr):
	case known:
		return fmt.Errorf("dtype '%s' (%v), %s", h.descr, found, want)
	case len(h.descr) >= 2 && h.descr[0] == '>' && descrDType["<"+h.descr[1:]] != 0:
		return fmt.Errorf("big-endian dtype '%s': only little-endian files are supported", h.descr)
	default:
		return fmt.Errorf("dtype '%s' is not supported, %s", h.descr, want)
	}
	if h.fortran {
		return errors.New("Fortran-ordered array: loadergen reads C order (re-save with numpy.ascontiguousarray)")
	}
	return nil
}

// mulSize is sizes.Mul bounded by math.MaxInt as well: a file's
// sizes index slices, whose int is 32 bits on some hosts.
func mulSize(a, b int64, ok bool) (int64, bool) {
	p, ok := sizes.Mul(a, b, ok)
	return p, ok && p <= math.MaxInt
}

// canonicalDescr is the descr Write puts in a header for each dtype. Float16
// and BFloat16 are written as raw 16-bit words; numpy has no bfloat16, so a
// bfloat16 file is written as '<u2'.
var canonicalDescr = [...]string{
	runtime.Uint8:    "|u1",
	runtime.Int8:     "|i1",
	runtime.Uint16:   "<u2",
	runtime.Int16:    "<i2",
	runtime.Uint32:   "<u4",
	runtime.Int32:    "<i4",
	runtime.Uint64:   "<u8",
	runtime.Int64:    "<i8",
	runtime.Float16:  "<f2",
	runtime.BFloat16: "<u2",
	runtime.Float32:  "<f4",
	runtime.Float64:  "<f8",
	runtime.Bool:     "|b1",
}

// descrDType maps every descr Open accepts to the dtype it names. '<u2' names
// uint16 here but is also accepted for a bfloat16 key (see accepts); '<V2' and
// '|V2' (raw 2-byte words, as numpy saves ml_dtypes' bfloat16) name bfloat16.
var descrDType = map[string]runtime.DType{
	"|u1": runtime.Uint8, "<u1": runtime.Uint8,
	"|i1": runtime.Int8, "<i1": runtime.Int8,
	"|b1": runtime.Bool, "<b1": runtime.Bool,
	"<u2": runtime.Uint16, "<i2": runtime.Int16,
	"<u4": runtime.Uint32, "<i4": runtime.Int32,
	"<u8": runtime.Uint64, "<i8": runtime.Int64,
	"<f2": runtime.Float16, "<f4": runtime.Float32, "<f8": runtime.Float64,
	"<V2": runtime.BFloat16, "|V2": runtime.BFloat16,
}

// Descr returns the numpy type string Write declares for d, e.g. "<f4" or
// "|u1"; numpy has no bfloat16, so bfloat16 is "<u2".
func Descr(d runtime.DType) string {
	if !d.Valid() {
		return ""
	}
	return canonicalDescr[d]
}

// KindDType returns the dtype a numpy type string names by its kind and
// size, the part after the byte order ("f4", "u1", "b1"). Raw words ("V2")
// name none.
func KindDType(kindSize string) (runtime.DType, bool) {
	if strings.HasPrefix(kindSize, "V") {
		return 0, false
	}
	d, ok := descrDType["<"+kindSize]
	return d, ok
}

// accepts reports whether a file with descr may back a key of dtype d.
func accepts(d runtime.DType, descr string) bool {
	found, ok := descrDType[descr]
	return ok && (found == d || d == runtime.BFloat16 && descr == "<u2")
}

// expectedDescr spells the descrs a key of dtype d accepts, for messages.
func expectedDescr(d runtime.DType) string {
	if d == runtime.BFloat16 {
		return "'<u2' or '<V2'"
	}
	return "'" + canonicalDescr[d] + "'"
}

// formatShape spells a shape as Python prints a tuple: "(10, 3)", "(5,)", "()".
func formatShape[I int | int64](shape []I) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, d := range shape {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(int64(d), 10))
	}
	if len(shape) == 1 {
		b.WriteByte(',')
	}
	b.WriteByte(')')
	return b.String()
}
