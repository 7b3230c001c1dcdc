package npy

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
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
// 0644), so readers never see a partial file.
func Write(path string, dtype runtime.DType, shape []int, data []byte) error {
	if !dtype.Valid() {
		return fmt.Errorf("writing %s: invalid dtype %v", path, dtype)
	}
	need, ok := int64(dtype.Size()), true
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("writing %s: shape %s has a negative dimension", path, formatShape(shape))
		}
		need, ok = mulSize(need, int64(d), ok)
	}
	if !ok {
		return fmt.Errorf("writing %s: shape %s of %v overflows int%d", path, formatShape(shape), dtype, strconv.IntSize)
	}
	if int64(len(data)) != need {
		return fmt.Errorf("writing %s: data is %d bytes, shape %s of %v needs %d", path, len(data), formatShape(shape), dtype, need)
	}
	hdr, err := encodeHeader(canonicalDescr[dtype], shape)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, err = tmp.Write(hdr)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
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
