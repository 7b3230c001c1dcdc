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
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"unsafe"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/storage"
)

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
	// GatherRows), which loaderimpl.TruncateRows and TruncateSamples cut.
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

// Len returns N, the number of samples: the leading dimension, or one less
// than the offsets of a ragged file.
func (f *File) Len() int { return f.n }

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
