package npy

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/loadergen/loadergen/runtime"
)

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

// notRagged is the error for op, which reads ragged samples, on a fixed
// file.
func (f *File) notRagged(op string) error {
	return fmt.Errorf("%s: %s reads ragged samples, but the file has fixed-size samples (no offsets): use Read or Gather", f.path, op)
}

// AppendRows appends the rows of sample i of a ragged file to dst and
// returns the extended slice. It never allocates: when cap(dst)-len(dst)
// is too small for the sample it returns an error instead of growing dst,
// which may point into staging memory that a new array would silently
// leave. A file opened with OverflowTruncate is the exception: its samples
// may be longer than the key's maximum, and one too long for dst's room
// is appended in full to a grown copy (an allocation, for the rare
// outlier), from which the loader's loaderimpl.TruncateRows keeps the first
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
// loaderimpl.TruncateSamples to cut and count. It
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
