// Package npy reads and writes NumPy .npy files for generated loaders.
//
// Open validates a file against what the schema expects of one key (a Spec)
// and memory-maps its data section read-only; Sample and Read then hand out
// one sample at a time. Write creates files, for tests and tools; Create
// writes them in parts, for datasets larger than memory.
//
// A ragged key's samples have row counts of their own. Its data is stored
// as token datasets store it (CSR): one file holds every sample's rows back
// to back, and a 1-D int64 file holds N+1 row offsets, sample i being rows
// offsets[i] up to offsets[i+1]. OpenRagged opens the pair; AppendRows and
// GatherRows copy samples out of it.
//
// Format versions 1.0, 2.0 and 3.0 are read, with headers no longer than
// np.load reads them by default (MaxHeaderSize); Write produces version 1.0
// with the data aligned to 64 bytes, byte for byte what numpy.save writes. Only
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
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/loadergen/loadergen/internal/sizes"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/storage"
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
	// Offsets, when set, makes the key ragged: File holds the rows of every
	// sample back to back, with shape [R, Sample[1:]...] for R rows in all,
	// and Offsets is the path, relative to the data root and slash-separated
	// like File, of the 1-D little-endian int64 .npy of the N+1 row offsets.
	// Sample[0] is then the most rows one sample may have.
	Offsets string
	// Overflow says what OpenRagged does with a sample of more rows than
	// Sample[0]: OverflowError refuses the file, naming every such sample;
	// OverflowTruncate opens it, and the copies give the loader the
	// sample's first Sample[0] rows with its whole count (AppendRows,
	// GatherRows), which runtime.TruncateRows and TruncateSamples cut.
	Overflow runtime.Overflow
	// DType is the key's element type.
	DType runtime.DType
	// Sample is the shape of one sample, class axis included; the file's
	// shape must be [N, Sample...] (see Offsets for a ragged key).
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
	n           int    // samples: the leading dimension, or the offsets' length - 1
	sampleBytes int    // bytes per sample; a ragged sample's at its maximum rows
	maxRows     int    // Sample[0] (1 when Sample is empty): a fixed sample's rows, a ragged one's most
	data        []byte // the data section, a view into mapping
	mapping     []byte // what mapFile returned; nil when nothing is mapped
	closed      bool

	// A ragged file's offsets are read into memory once, at open (8 bytes a
	// sample: 80 MB for 10M samples), rather than mapped: values checked at
	// open cannot change under a running loader, and Rows needs no fault
	// guard. offsets is nil for a fixed file.
	offsets     []int64
	offsetsPath string
	rowBytes    int              // bytes per row of a ragged file
	overflow    runtime.Overflow // Spec.Overflow of a ragged file
}

// Open opens the .npy file at path, checks it against spec and maps its
// data. Every refusal is an error that names path and says what was expected
// and what was found. A ragged spec (Offsets set) is refused: OpenRagged
// opens it.
func Open(path string, spec Spec) (*File, error) { return openNamed(path, path, spec) }

// openNamed is Open of the file at path, named name in messages (a URL
// for a file fetched from one).
func openNamed(path, name string, spec Spec) (*File, error) {
	if spec.Offsets != "" {
		return nil, fmt.Errorf("%s: schema key %q is ragged (offsets %s): open it with OpenRagged", name, spec.Key, spec.Offsets)
	}
	if err := checkSpec(spec); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f, err := openData(path, name, spec, "N")
	if err != nil {
		return nil, err
	}
	f.maxRows = 1
	if len(spec.Sample) > 0 {
		f.maxRows = spec.Sample[0]
	}
	return f, nil
}

// OpenRagged opens a ragged key: the .npy file at dataPath, whose shape must
// be [R, spec.Sample[1:]...], and the 1-D int64 .npy file at offsetsPath of
// N+1 row offsets into it. The offsets must start at 0, never decrease and
// end at R, and, unless spec.Overflow is OverflowTruncate, no sample may
// have more than spec.Sample[0] rows. spec.Offsets is not read: offsetsPath
// is the file. Errors name the file they are about.
func OpenRagged(dataPath, offsetsPath string, spec Spec) (*File, error) {
	return openRaggedNamed(dataPath, dataPath, offsetsPath, offsetsPath, spec)
}

// openRaggedNamed is OpenRagged of the files at dataPath and offsetsPath,
// named dataName and offsetsName in messages.
func openRaggedNamed(dataPath, dataName, offsetsPath, offsetsName string, spec Spec) (*File, error) {
	if err := checkSpec(spec); err != nil {
		return nil, fmt.Errorf("%s: %w", dataName, err)
	}
	if len(spec.Sample) == 0 {
		return nil, fmt.Errorf("%s: ragged key %q has no sample axis: Sample[0] is the most rows of a sample", dataName, spec.Key)
	}
	maxRows := spec.Sample[0]
	if maxRows > runtime.MaxRows {
		return nil, fmt.Errorf("%s: ragged key %q allows %d rows a sample, more than an int32 length holds", dataName, spec.Key, maxRows)
	}
	rows := spec
	rows.Sample = spec.Sample[1:]
	f, err := openData(dataPath, dataName, rows, "rows")
	if err != nil {
		return nil, err
	}
	slot, ok := mulSize(int64(f.sampleBytes), int64(maxRows), true)
	if !ok {
		f.Close()
		return nil, fmt.Errorf("%s: a sample of %d rows of %d bytes overflows int%d", dataName, maxRows, f.sampleBytes, strconv.IntSize)
	}
	osf, err := os.Open(offsetsPath)
	if err != nil {
		f.Close()
		return nil, err
	}
	defer osf.Close()
	offsets, err := readOffsets(osf, f, spec, maxRows)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", offsetsName, err)
	}
	f.n, f.rowBytes, f.sampleBytes, f.maxRows = len(offsets)-1, f.sampleBytes, int(slot), maxRows
	f.offsets, f.offsetsPath, f.overflow = offsets, offsetsName, spec.Overflow
	return f, nil
}

// checkSpec checks what Open and OpenRagged need of any spec.
func checkSpec(spec Spec) error {
	if !spec.DType.Valid() {
		return fmt.Errorf("schema key %q has invalid dtype %v", spec.Key, spec.DType)
	}
	for _, d := range spec.Sample {
		if d < 0 {
			return fmt.Errorf("schema key %q has a negative sample dimension %s", spec.Key, formatShape(spec.Sample))
		}
	}
	return nil
}

// openData opens and maps the data file at path, whose shape must be
// [lead, spec.Sample...]; name names the file and lead the leading
// dimension in messages.
func openData(path, name string, spec Spec, lead string) (*File, error) {
	osf, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer osf.Close() // the mapping outlives the descriptor
	f, err := open(osf, spec, lead)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f.path = name
	return f, nil
}

// open does openData's work on an open file; its errors do not name the
// path.
func open(osf *os.File, spec Spec, lead string) (*File, error) {
	h, dataOff, size, err := readFileHeader(osf)
	if err != nil {
		return nil, err
	}
	sampleBytes, total, err := check(h, spec, lead, dataOff)
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

// readOffsets reads and checks the offsets file of the ragged file data,
// whose key (spec) allows maxRows rows a sample; its errors do not name the
// path. A 1-D array is the same bytes in either order, so fortran_order is
// not looked at.
func readOffsets(osf *os.File, data *File, spec Spec, maxRows int) ([]int64, error) {
	h, dataOff, size, err := readFileHeader(osf)
	if err != nil {
		return nil, err
	}
	if h.descr != "<i8" {
		found := "a structured dtype"
		if !h.structured {
			found = "dtype '" + h.descr + "'"
			if d, ok := descrDType[h.descr]; ok {
				found += " (" + d.String() + ")"
			}
		}
		return nil, fmt.Errorf("offsets have %s, want int64 ('<i8')", found)
	}
	if len(h.shape) != 1 || h.shape[0] < 1 {
		return nil, fmt.Errorf("offsets have shape %s, want (N+1,): one dimension, at least 1 entry", formatShape(h.shape))
	}
	total, ok := mulSize(8, h.shape[0], true)
	if !ok || total > math.MaxInt-dataOff {
		return nil, fmt.Errorf("shape %s of int64 overflows int%d", formatShape(h.shape), strconv.IntSize)
	}
	if total != size-dataOff {
		return nil, fmt.Errorf("file is %d bytes, header and shape %s need %d", size, formatShape(h.shape), dataOff+total)
	}
	offsets := make([]int64, h.shape[0])
	if _, err := osf.ReadAt(runtime.Bytes(offsets), dataOff); err != nil {
		return nil, fmt.Errorf("reading offsets: %w", err)
	}
	last := len(offsets) - 1
	switch {
	case offsets[0] != 0:
		return nil, fmt.Errorf("offsets[0] is %d, want 0", offsets[0])
	case offsets[last] != int64(data.n):
		return nil, fmt.Errorf("offsets[%d] (the last) is %d, but %s holds %d rows", last, offsets[last], data.path, data.n)
	}
	var over overflows
	for i := range last {
		rows := offsets[i+1] - offsets[i]
		if rows < 0 {
			return nil, fmt.Errorf("offsets decrease at index %d: offsets[%d] = %d after offsets[%d] = %d", i+1, i+1, offsets[i+1], i, offsets[i])
		}
		if rows > int64(maxRows) && spec.Overflow != runtime.OverflowTruncate {
			over.add(i, rows)
		}
	}
	if over.count > 0 {
		return nil, over.err(spec.Key, maxRows)
	}
	return offsets, nil
}

// maxListed is how many samples over their key's maximum an error lists;
// it counts the rest.
const maxListed = 20

// overflows are the samples of a ragged file with more rows than their key
// allows: the first maxListed, and how many in all.
type overflows struct {
	listed []string // "sample 4 (600 rows)"
	count  int
}

// add records sample i, of the given rows.
func (o *overflows) add(i int, rows int64) {
	if o.count < maxListed {
		o.listed = append(o.listed, fmt.Sprintf("sample %d (%d rows)", i, rows))
	}
	o.count++
}

// err is the error for the samples recorded, of key, which allows maxRows
// rows a sample: all of them, or the first maxListed and the count.
func (o *overflows) err(key string, maxRows int) error {
	which := fmt.Sprintf("%d samples have", o.count)
	if o.count == 1 {
		which = "1 sample has"
	}
	first := ""
	if o.count > len(o.listed) {
		first = fmt.Sprintf(", the first %d", len(o.listed))
	}
	return fmt.Errorf("%s more rows than key %q allows (%d)%s: %s; set overflow: truncate on the key to keep the first %d rows of such samples",
		which, key, maxRows, first, strings.Join(o.listed, ", "), maxRows)
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

// Len returns N, the number of samples: the leading dimension, or one less
// than the offsets of a ragged file.
func (f *File) Len() int { return f.n }

// Ragged reports whether f is a ragged file, opened by OpenRagged.
func (f *File) Ragged() bool { return f.offsets != nil }

// Rows returns the row count of sample i, which must be in [0, Len()): a
// ragged file's from its offsets, a fixed file's Sample[0] (1 when Sample is
// empty), since its samples have every row. It is cheap, allocates nothing
// and does not check that f is open.
func (f *File) Rows(i int) int {
	if f.offsets == nil {
		return f.maxRows
	}
	return int(f.offsets[i+1] - f.offsets[i])
}

// Path returns the path the file was opened with.
func (f *File) Path() string { return f.path }

// SampleBytes returns the size of one sample in bytes; a ragged file's at
// its most rows (Sample[0]), one slot of GatherRows.
func (f *File) SampleBytes() int { return f.sampleBytes }

// Data returns the raw bytes of every sample (every row of a ragged file),
// back to back: a read-only view into the mapping, valid only until Close.
func (f *File) Data() []byte { return f.data }

// Sample returns the raw bytes of sample i. They are a view into the
// mapping: read-only, and valid only until Close. A ragged file has no
// fixed-size samples: Sample refuses it.
func (f *File) Sample(i int) ([]byte, error) {
	if f.offsets != nil {
		return nil, f.notFixed("Sample")
	}
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

// notFixed is the error for op, which reads fixed-size samples, on a ragged
// file.
func (f *File) notFixed(op string) error {
	return fmt.Errorf("%s: %s reads fixed-size samples, but the file is ragged (offsets %s): use AppendRows or GatherRows", f.path, op, f.offsetsPath)
}

// notRagged is the error for op, which reads ragged samples, on a fixed
// file.
func (f *File) notRagged(op string) error {
	return fmt.Errorf("%s: %s reads ragged samples, but the file has fixed-size samples (no offsets): use Read or Gather", f.path, op)
}

// Read copies sample i into dst without allocating. dst must hold exactly
// SampleBytes bytes; T should be the Go type of the file's dtype
// (runtime.DType.GoType). A ragged file is refused: see AppendRows.
//
// If the file shrinks while it is mapped, the copy faults; Read turns that
// fault into an error for this sample (through debug.SetPanicOnFault)
// instead of letting it kill the process.
func Read[T runtime.Element](f *File, i int, dst []T) (err error) {
	if f.offsets != nil {
		return f.notFixed("Read")
	}
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
// call). A ragged file is refused: see GatherRows.
func Gather[T runtime.Element](f *File, indices []int, dst []T) (n int, err error) {
	if f.offsets != nil {
		return 0, f.notFixed("Gather")
	}
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

// AppendRows appends the rows of sample i of a ragged file to dst and
// returns the extended slice. It never allocates: when cap(dst)-len(dst)
// is too small for the sample it returns an error instead of growing dst,
// which may point into staging memory that a new array would silently
// leave. A file opened with OverflowTruncate is the exception: its samples
// may be longer than the key's maximum, and one too long for dst's room
// is appended in full to a grown copy (an allocation, for the rare
// outlier), from which the loader's runtime.TruncateRows keeps the first
// rows. A row must be whole elements of T. On an error dst is returned
// unchanged; a fault (the file shrank while mapped) is an error, as in Read.
func AppendRows[T runtime.Element](f *File, i int, dst []T) (res []T, err error) {
	if f.offsets == nil {
		return dst, f.notRagged("AppendRows")
	}
	if !f.readable(i) {
		return dst, f.unreadable(i)
	}
	size := int(unsafe.Sizeof(*new(T)))
	if f.rowBytes%size != 0 {
		return dst, fmt.Errorf("%s: a row is %d bytes, not whole elements of %d bytes", f.path, f.rowBytes, size)
	}
	start, end := int(f.offsets[i]), int(f.offsets[i+1])
	need := (end - start) * f.rowBytes / size
	if room := cap(dst) - len(dst); need > room && f.overflow != runtime.OverflowTruncate {
		return dst, fmt.Errorf("%s: sample %d is %d rows (%d elements), dst has room for %d elements", f.path, i, end-start, need, room)
	}
	defer func(old bool) {
		debug.SetPanicOnFault(old)
		if v := recover(); v != nil {
			res, err = dst, f.fault(v, i)
		}
	}(debug.SetPanicOnFault(true))
	res = slices.Grow(dst, need)[:len(dst)+need]
	copy(runtime.Bytes(res[len(dst):]), f.data[start*f.rowBytes:end*f.rowBytes])
	return res, nil
}

// GatherRows copies the rows of samples indices[0], indices[1], ... of a
// ragged file into dst without allocating: the gather loop of a whole-batch
// read. dst holds one slot of SampleBytes bytes (Sample[0] rows) per index;
// sample indices[k] goes to the start of slot k, its row count to
// lengths[k], and the rest of the slot is left as it was, for the caller to
// pad. A sample longer than its slot (a file opened with OverflowTruncate)
// fills the slot with its first rows, and lengths[k] still holds its whole
// count (up to runtime.MaxRows), above Sample[0], for
// runtime.TruncateSamples to cut and count. It
// returns how many samples it copied before an error (a bad index, or a
// fault, turned into an error as Read does, with one fault guard for the
// whole call).
func GatherRows[T runtime.Element](f *File, indices []int, dst []T, lengths []int32) (n int, err error) {
	if f.offsets == nil {
		return 0, f.notRagged("GatherRows")
	}
	b := runtime.Bytes(dst)
	slot := f.sampleBytes
	if len(b) != len(indices)*slot {
		return 0, fmt.Errorf("%s: destination is %d bytes, %d slots of %d rows are %d", f.path, len(b), len(indices), f.maxRows, len(indices)*slot)
	}
	if len(lengths) != len(indices) {
		return 0, fmt.Errorf("%s: lengths holds %d entries for %d samples", f.path, len(lengths), len(indices))
	}
	defer func(old bool) {
		debug.SetPanicOnFault(old)
		if v := recover(); v != nil {
			err = f.fault(v, indices[n])
		}
	}(debug.SetPanicOnFault(true))
	for ; n < len(indices); n++ {
		i := indices[n]
		if !f.readable(i) {
			return n, f.unreadable(i)
		}
		start, end := int(f.offsets[i]), int(f.offsets[i+1])
		copy(b[n*slot:(n+1)*slot], f.data[start*f.rowBytes:end*f.rowBytes])
		lengths[n] = int32(min(end-start, runtime.MaxRows))
	}
	return n, nil
}

// Close unmaps the data. It is idempotent; slices Sample returned must not
// be used afterwards. A ragged file's offsets stay in memory, so Len, Rows
// and Ragged still answer.
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

// OpenAll opens the files of every spec under root, with OpenRagged for a
// ragged spec and Open for the others, and checks that they all hold the
// same number of samples. On any refusal it closes what it opened. root
// may be a URL (s3://bucket/prefix, https://host/path): each file is then
// fetched whole to local disk first (storage.Fetch), and messages name its
// URL.
func OpenAll(root string, specs []Spec) ([]*File, error) {
	r, err := storage.Open(root)
	if err != nil {
		return nil, err
	}
	defer r.Close() // every file is fetched by now
	files := make([]*File, 0, len(specs))
	for _, spec := range specs {
		f, err := openUnder(r, spec)
		if errors.Is(err, fs.ErrNotExist) {
			name := spec.File
			var pe *fs.PathError
			if spec.Offsets != "" && errors.As(err, &pe) && strings.HasSuffix(filepath.ToSlash(pe.Path), spec.Offsets) {
				name = spec.Offsets
			}
			err = &runtime.KeyError{Key: spec.Key, Err: fmt.Errorf("%w (the schema's file %q under the data root %s)", err, name, storage.Redact(root))}
		}
		if err != nil {
			CloseAll(files...)
			return nil, err
		}
		if len(files) > 0 && f.Len() != files[0].Len() {
			err := fmt.Errorf("%s holds %d samples of key %q, but %s holds %d of key %q: every key needs the same N",
				f.lenPath(), f.Len(), spec.Key, files[0].lenPath(), files[0].Len(), specs[0].Key)
			CloseAll(append(files, f)...)
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// lenPath returns the path of the file whose shape gives Len: a ragged
// file's offsets.
func (f *File) lenPath() string {
	if f.offsets != nil {
		return f.offsetsPath
	}
	return f.path
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

// openUnder opens spec's files in root, fetched to local disk first when
// root is remote.
func openUnder(root storage.Root, spec Spec) (*File, error) {
	dataPath, done, err := storage.Fetch(context.Background(), root, spec.File)
	if err != nil {
		return nil, err
	}
	defer done() // the mapping outlives a fetched file's name
	if spec.Offsets == "" {
		return openNamed(dataPath, root.URL(spec.File), spec)
	}
	offsetsPath, done, err := storage.Fetch(context.Background(), root, spec.Offsets)
	if err != nil {
		return nil, err
	}
	defer done()
	return openRaggedNamed(dataPath, root.URL(spec.File), offsetsPath, root.URL(spec.Offsets), spec)
}
