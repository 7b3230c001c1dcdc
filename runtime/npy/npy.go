// Package npy reads and writes NumPy .npy files for generated loaders.
//
// Open validates a file against what the schema expects of one key (a Spec)
// and memory-maps its data section read-only; Sample and Read then hand out
// one sample at a time. Write creates files, for tests and tools; Create
// writes them in parts, for datasets larger than memory.
//
// Format versions 1.0, 2.0 and 3.0 are read; Write produces version 1.0 with
// the data aligned to 64 bytes, byte for byte what numpy.save writes. Only
// C-ordered, little-endian arrays of these dtypes are accepted:
//
//	uint8    '|u1' or '<u1'      int8    '|i1' or '<i1'
//	uint16   '<u2'               int16   '<i2'
//	uint32   '<u4'               int32   '<i4'
//	uint64   '<u8'               int64   '<i8'
//	float16  '<f2'               float32 '<f4'
//	float64  '<f8'               bool    '|b1' or '<b1'
//	bfloat16 '<u2', '<V2' or '|V2'
//
// numpy has no bfloat16: a bfloat16 key reads its raw 16-bit words from a
// uint16 file or from the 2-byte void dtype numpy saves ml_dtypes' bfloat16
// as, and Write stores bfloat16 as '<u2'. Write uses the first spelling of
// each row above.
//
// The bytes of a sample are the file's bytes: Read copies them into a Go
// slice of the dtype's Go type unchanged, which is correct only on a
// little-endian machine (amd64, arm64 and every other platform loadergen
// targets).
package npy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"unsafe"

	"github.com/loadergen/loadergen/runtime"
)

// magic starts every .npy file.
const magic = "\x93NUMPY"

// Spec is what a schema expects of one key's file.
type Spec struct {
	// Key names the schema key, for messages.
	Key string
	// File is the path of the key's file relative to the data root, as the
	// schema writes it (slash-separated); OpenAll uses it.
	File string
	// DType is the key's element type.
	DType runtime.DType
	// Sample is the shape of one sample, class axis included; the file's
	// shape must be [N, Sample...].
	Sample []int
}

// File is an open, validated .npy file whose data is memory-mapped
// read-only. Sample and Read may be called from many goroutines at once;
// Close must not run concurrently with them.
//
// The mapping is shared: if the file is changed in place while open, the
// samples change too, and truncating it makes reads fault. Write replaces
// files by rename, which leaves an open File on the old contents.
type File struct {
	path        string
	n           int    // leading dimension
	sampleBytes int    // bytes per sample
	data        []byte // the data section, a view into mapping
	mapping     []byte // what mapFile returned; nil when nothing is mapped
	closed      bool
}

// Open opens the .npy file at path, checks it against spec and maps its
// data. Every refusal is an error that names path and says what was expected
// and what was found.
func Open(path string, spec Spec) (*File, error) {
	if !spec.DType.Valid() {
		return nil, fmt.Errorf("%s: schema key %q has invalid dtype %v", path, spec.Key, spec.DType)
	}
	for _, d := range spec.Sample {
		if d < 0 {
			return nil, fmt.Errorf("%s: schema key %q has a negative sample dimension %s", path, spec.Key, formatShape(spec.Sample))
		}
	}
	osf, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer osf.Close() // the mapping outlives the descriptor
	f, err := open(osf, spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.path = path
	return f, nil
}

// open does Open's work on an open file; its errors do not name the path.
func open(osf *os.File, spec Spec) (*File, error) {
	st, err := osf.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	var pre [12]byte // magic, version, header length (2 or 4 bytes)
	n, err := osf.ReadAt(pre[:], 0)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("reading header: %w", err)
	}
	if n < len(magic) || string(pre[:len(magic)]) != magic {
		return nil, fmt.Errorf("not a .npy file: it does not start with %q", magic)
	}
	if n < 8 {
		return nil, fmt.Errorf("file is %d bytes, too short for a .npy header", size)
	}
	major, minor := pre[6], pre[7]
	var hdrStart int
	switch {
	case major == 1 && minor == 0:
		hdrStart = 10
	case (major == 2 || major == 3) && minor == 0:
		hdrStart = 12
	default:
		return nil, fmt.Errorf("unsupported .npy format version %d.%d (loadergen reads 1.0, 2.0 and 3.0)", major, minor)
	}
	if n < hdrStart {
		return nil, fmt.Errorf("file is %d bytes, too short for a version %d.0 header", size, major)
	}
	var hdrLen int64
	if major == 1 {
		hdrLen = int64(binary.LittleEndian.Uint16(pre[8:]))
	} else {
		hdrLen = int64(binary.LittleEndian.Uint32(pre[8:]))
	}
	dataOff := int64(hdrStart) + hdrLen
	if dataOff > size {
		return nil, fmt.Errorf("header length %d runs past the end of the file (%d bytes)", hdrLen, size)
	}
	raw := make([]byte, hdrLen)
	if _, err := osf.ReadAt(raw, int64(hdrStart)); err != nil {
		return nil, fmt.Errorf("reading header: %w", err)
	}
	// Versions 1 and 2 are latin-1, version 3 UTF-8; the parser only needs
	// ASCII, which both encode alike.
	h, err := parseHeader(string(raw))
	if err != nil {
		return nil, fmt.Errorf("header is not parseable: %w: %s", err, quoteHeader(raw))
	}
	sampleBytes, total, err := check(h, spec, dataOff)
	if err != nil {
		return nil, err
	}
	if total != size-dataOff {
		return nil, fmt.Errorf("file is %d bytes, header and shape %s need %d", size, formatShape(h.shape), dataOff+total)
	}
	f := &File{n: int(h.shape[0]), sampleBytes: int(sampleBytes)}
	if total > 0 {
		m, err := mapFile(osf, int(size))
		if err != nil {
			return nil, fmt.Errorf("mapping: %w", err)
		}
		f.mapping, f.data = m, m[dataOff:]
	}
	return f, nil
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

// check validates a parsed header against spec and returns the bytes per
// sample and in all; the data starts at dataOff.
func check(h header, spec Spec, dataOff int64) (sampleBytes, total int64, err error) {
	want := fmt.Sprintf("schema key %q expects %v (%s)", spec.Key, spec.DType, expectedDescr(spec.DType))
	switch found, known := descrDType[h.descr]; {
	case h.structured:
		return 0, 0, fmt.Errorf("structured dtype (a list of fields) is not supported, %s", want)
	case len(h.descr) >= 2 && h.descr[1] == 'O':
		return 0, 0, fmt.Errorf("object dtype '%s' is not supported, %s", h.descr, want)
	case accepts(spec.DType, h.descr):
	case known:
		return 0, 0, fmt.Errorf("dtype '%s' (%v), %s", h.descr, found, want)
	case len(h.descr) >= 2 && h.descr[0] == '>' && descrDType["<"+h.descr[1:]] != 0:
		return 0, 0, fmt.Errorf("big-endian dtype '%s': only little-endian files are supported", h.descr)
	default:
		return 0, 0, fmt.Errorf("dtype '%s' is not supported, %s", h.descr, want)
	}
	if h.fortran {
		return 0, 0, errors.New("Fortran-ordered array: loadergen reads C order (re-save with numpy.ascontiguousarray)")
	}
	wantShape := "(N"
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

// mulSize returns a*b and whether ok still holds: the product of non-negative
// a and b must not exceed math.MaxInt.
func mulSize(a, b int64, ok bool) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, ok
	}
	if a > math.MaxInt/b {
		return 0, false
	}
	return a * b, ok
}

// Len returns N, the number of samples (the leading dimension).
func (f *File) Len() int { return f.n }

// Path returns the path the file was opened with.
func (f *File) Path() string { return f.path }

// SampleBytes returns the size of one sample in bytes.
func (f *File) SampleBytes() int { return f.sampleBytes }

// Data returns the raw bytes of every sample, back to back: a read-only
// view into the mapping, valid only until Close.
func (f *File) Data() []byte { return f.data }

// Sample returns the raw bytes of sample i. They are a view into the
// mapping: read-only, and valid only until Close.
func (f *File) Sample(i int) ([]byte, error) {
	if !f.readable(i) {
		return nil, f.unreadable(i)
	}
	n := f.sampleBytes
	return f.data[i*n:][:n:n], nil
}

// readable reports whether sample i can be read: the file is open and i
// is in range.
func (f *File) readable(i int) bool { return !f.closed && uint(i) < uint(f.n) }

// unreadable is the error for sample i when it is not readable.
func (f *File) unreadable(i int) error {
	if f.closed {
		return fmt.Errorf("%s: read of sample %d after Close", f.path, i)
	}
	return fmt.Errorf("%s: sample index %d out of range [0, %d)", f.path, i, f.n)
}

// Read copies sample i into dst without allocating. dst must hold exactly
// SampleBytes bytes; T should be the Go type of the file's dtype
// (runtime.DType.GoType).
//
// If the file shrinks while it is mapped, the copy faults; Read turns that
// fault into an error for this sample (through debug.SetPanicOnFault)
// instead of letting it kill the process.
func Read[T runtime.Element](f *File, i int, dst []T) (err error) {
	size := int(unsafe.Sizeof(*new(T)))
	b := runtime.Bytes(dst)
	if len(b) != f.sampleBytes {
		return fmt.Errorf("%s: destination is %d bytes (%d elements of %d bytes), a sample is %d bytes",
			f.path, len(b), len(dst), size, f.sampleBytes)
	}
	src, err := f.Sample(i)
	if err != nil {
		return err
	}
	defer func(old bool) {
		debug.SetPanicOnFault(old)
		if v := recover(); v != nil {
			err = f.fault(v, i)
		}
	}(debug.SetPanicOnFault(true))
	copy(b, src)
	return nil
}

// fault turns v, a panic recovered while copying sample i, into its error
// when it is a memory fault (the file shrank under its mapping), and
// panics on with anything else.
func (f *File) fault(v any, i int) error {
	fault, ok := v.(interface{ Addr() uintptr })
	if !ok {
		panic(v)
	}
	return fmt.Errorf("%s: sample %d is no longer readable: the file shrank while mapped (fault at %#x)", f.path, i, fault.Addr())
}

// Gather copies samples indices[0], indices[1], ... back to back into dst
// without allocating: the gather loop of a whole-batch read. dst must hold
// exactly len(indices) samples. It returns how many samples it copied in
// full before an error (a bad index, or the file shrinking while mapped,
// turned into an error as Read does, with one fault guard for the whole
// call).
func Gather[T runtime.Element](f *File, indices []int, dst []T) (n int, err error) {
	b := runtime.Bytes(dst)
	if len(b) != len(indices)*f.sampleBytes {
		return 0, fmt.Errorf("%s: destination is %d bytes, %d samples are %d", f.path, len(b), len(indices), len(indices)*f.sampleBytes)
	}
	defer func(old bool) {
		debug.SetPanicOnFault(old)
		if v := recover(); v != nil {
			err = f.fault(v, indices[n])
		}
	}(debug.SetPanicOnFault(true))
	size := f.sampleBytes
	for ; n < len(indices); n++ {
		i := indices[n]
		if !f.readable(i) {
			return n, f.unreadable(i)
		}
		copy(b[n*size:(n+1)*size], f.data[i*size:(i+1)*size])
	}
	return n, nil
}

// Close unmaps the data. It is idempotent; slices Sample returned must not
// be used afterwards.
func (f *File) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	m := f.mapping
	f.data, f.mapping = nil, nil
	if m == nil {
		return nil
	}
	if err := unmapFile(m); err != nil {
		return fmt.Errorf("%s: unmapping: %w", f.path, err)
	}
	return nil
}

// OpenAll opens the file of every spec under root and checks that they all
// hold the same number of samples. On any refusal it closes what it opened.
func OpenAll(root string, specs []Spec) ([]*File, error) {
	files := make([]*File, 0, len(specs))
	for _, spec := range specs {
		f, err := Open(filepath.Join(root, filepath.FromSlash(spec.File)), spec)
		if errors.Is(err, fs.ErrNotExist) {
			err = &runtime.KeyError{Key: spec.Key, Err: fmt.Errorf("%w (the schema's file %q under the data root %s)", err, spec.File, root)}
		}
		if err != nil {
			CloseAll(files...)
			return nil, err
		}
		if len(files) > 0 && f.Len() != files[0].Len() {
			err := fmt.Errorf("%s holds %d samples of key %q, but %s holds %d of key %q: every key needs the same N",
				f.Path(), f.Len(), spec.Key, files[0].Path(), files[0].Len(), specs[0].Key)
			CloseAll(append(files, f)...)
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// CloseAll closes every file and returns the first error.
func CloseAll(files ...*File) error {
	var first error
	for _, f := range files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
