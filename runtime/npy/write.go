package npy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/loadergen/loadergen/runtime"
)

// Write writes data, a C-ordered array of dtype and shape, to path as a
// version 1.0 .npy file laid out exactly as numpy.save lays it out: the
// canonical little-endian descr (see the package comment) and a header
// padded so the data starts at a multiple of 64 bytes. len(data) must be
// the product of shape times the dtype's size. The data is written to a
// temporary file in the same directory, synced and renamed over path (mode
// 0644), so readers never see a partial file. Create writes arrays too
// large to hold in memory.
func Write(path string, dtype runtime.DType, shape []int, data []byte) error {
	w, err := Create(path, dtype, shape)
	if err != nil {
		return err
	}
	if int64(len(data)) != w.total {
		w.Abort()
		return fmt.Errorf("writing %s: data is %d bytes, shape %s of %v needs %d", path, len(data), formatShape(shape), dtype, w.total)
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	return w.Close()
}

// Writer writes a .npy file in parts, in C order: a dataset larger than
// memory, sample after sample. It writes a temporary file in the target's
// directory; Close fixes the header up and renames it over the target, so
// readers never see a partial file, and Abort removes it. Its header is
// byte for byte numpy.save's for the final shape.
type Writer struct {
	path   string
	tmp    *os.File
	dtype  runtime.DType
	shape  []int // as given: shape[0] is -1 when the leading dimension is counted (header fills it in)
	sample int64 // bytes per index of the leading dimension (the whole array for a 0-d one)
	total  int64 // bytes the shape needs; -1 when counted from the data
	wrote  int64 // data bytes written
	err    error // the first failure: later calls return it
}

// Create starts writing an array of dtype and shape to path. A leading
// dimension of -1 is counted from the bytes written and fixed at Close,
// which then requires whole samples (the product of the other dimensions).
// When another dimension is 0 a sample has no bytes to count: the array
// holds none, and its leading dimension is 0.
func Create(path string, dtype runtime.DType, shape []int) (*Writer, error) {
	if !dtype.Valid() {
		return nil, fmt.Errorf("writing %s: invalid dtype %v", path, dtype)
	}
	w := &Writer{path: path, dtype: dtype, shape: slices.Clone(shape), sample: int64(dtype.Size()), total: -1}
	counted := len(shape) > 0 && shape[0] == -1
	ok := true
	for i, d := range shape {
		switch {
		case i == 0 && counted:
			continue
		case d < 0:
			return nil, fmt.Errorf("writing %s: shape %s has a negative dimension", path, formatShape(shape))
		case i > 0:
			w.sample, ok = mulSize(w.sample, int64(d), ok)
		}
	}
	switch {
	case !counted:
		n := int64(1)
		if len(shape) > 0 {
			n = int64(shape[0])
		}
		w.total, ok = mulSize(w.sample, n, ok)
	case w.sample == 0:
		w.total = 0
	}
	if !ok {
		return nil, fmt.Errorf("writing %s: shape %s of %v overflows int%d", path, formatShape(shape), dtype, strconv.IntSize)
	}
	hdr, err := w.header()
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	if w.tmp, err = os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp"); err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := w.tmp.Write(hdr); err != nil {
		return nil, w.fail(err)
	}
	return w, nil
}

// header encodes the header for the shape as it stands: a counted leading
// dimension as the samples written so far (0 when a sample has no bytes).
// Its length does not depend on that dimension (numpy leaves it room for 21
// digits), so Close can write the final header over the first.
func (w *Writer) header() ([]byte, error) {
	shape := slices.Clone(w.shape)
	if len(shape) > 0 && shape[0] == -1 {
		shape[0] = 0
		if w.sample > 0 {
			shape[0] = int(w.wrote / w.sample)
		}
	}
	return encodeHeader(canonicalDescr[w.dtype], shape)
}

// Write appends p, the next bytes of the array's data in C order. It may
// end in the middle of a sample.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.total >= 0 && w.wrote+int64(len(p)) > w.total {
		return 0, w.fail(fmt.Errorf("%d bytes written past the %d that shape %s of %v holds", w.wrote+int64(len(p))-w.total, w.total, formatShape(w.shape), w.dtype))
	}
	n, err := w.tmp.Write(p)
	w.wrote += int64(n)
	if err != nil {
		return n, w.fail(err)
	}
	return n, nil
}

// Close checks that the data is complete, writes the final header, syncs
// the file and renames it over the target (mode 0644). On an error the
// temporary file is removed and the target is left as it was.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	switch {
	case w.total >= 0 && w.wrote != w.total:
		return w.fail(fmt.Errorf("data is %d bytes, shape %s of %v needs %d", w.wrote, formatShape(w.shape), w.dtype, w.total))
	case w.total < 0 && w.wrote%w.sample != 0:
		return w.fail(fmt.Errorf("%d bytes are not whole samples of %d bytes (shape %s of %v)", w.wrote, w.sample, formatShape(w.shape), w.dtype))
	}
	hdr, err := w.header()
	if err == nil {
		_, err = w.tmp.WriteAt(hdr, 0)
	}
	if err == nil {
		err = w.tmp.Chmod(0o644)
	}
	if err == nil {
		err = w.tmp.Sync()
	}
	if cerr := w.tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(w.tmp.Name(), w.path)
	}
	if err != nil {
		return w.fail(err)
	}
	w.err = fmt.Errorf("writing %s: closed", w.path)
	return nil
}

// Abort gives up: it removes the temporary file, and the target is left as
// it was.
func (w *Writer) Abort() {
	if w.err == nil {
		w.fail(errors.New("aborted"))
	}
}

// fail records the writer's first failure, closes and removes the
// temporary file, and returns the failure naming the target.
func (w *Writer) fail(err error) error {
	w.err = fmt.Errorf("writing %s: %w", w.path, err)
	w.tmp.Close()
	os.Remove(w.tmp.Name())
	return w.err
}

// encodeHeader returns the magic, version 1.0 and header of a C-ordered
// array, as numpy 1.24 and later write them: the dict, spaces for the
// leading dimension to grow to 21 digits, padding to a multiple of 64 bytes
// (a whole 64 when already aligned) and a newline.
func encodeHeader(descr string, shape []int) ([]byte, error) {
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, formatShape(shape))
	if len(shape) > 0 {
		dict += strings.Repeat(" ", 21-len(strconv.Itoa(shape[0])))
	}
	const prefix = len(magic) + 2 + 2 // magic, version, uint16 length
	hdrLen := len(dict) + 1
	hdrLen += 64 - (prefix+hdrLen)%64
	if hdrLen > math.MaxUint16 {
		return nil, fmt.Errorf("header of shape with %d dimensions is %d bytes, more than version 1.0 allows", len(shape), hdrLen)
	}
	b := make([]byte, 0, prefix+hdrLen)
	b = append(b, magic...)
	b = append(b, 1, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(hdrLen))
	b = append(b, dict...)
	for len(b) < prefix+hdrLen-1 {
		b = append(b, ' ')
	}
	return append(b, '\n'), nil
}
