package npy

import (
	"bytes"
	"fmt"
	"io"
	"slices"
)

// Member reads the .npy members of one key: whole .npy files kept inside an
// archive, each holding one sample (a WebDataset sample's 000042.depth.npy
// in a tar shard). A member's shape is the key's sample shape exactly,
// without Open's leading N.
//
// A Member keeps the last header it accepted: numpy.save writes the same
// header for the same dtype and shape, so most members are checked by
// comparing their header's bytes with it, with nothing parsed or
// allocated. It is not safe for concurrent use: each worker needs its own
// (Clone).
type Member struct {
	spec        Spec
	sampleBytes int64
	// header is the preamble and header of the last member ReadAt accepted
	// (nil before the first), buf the scratch it reads a member's header
	// into to compare with it. Only ReadAt writes them, one call at a time.
	header, buf []byte
}

// NewMember returns a reader of spec's members. spec.File and
// spec.Offsets are not used: a member is one fixed-size sample.
func NewMember(spec Spec) (*Member, error) {
	if spec.Offsets != "" {
		return nil, fmt.Errorf("schema key %q: a .npy member holds one sample, which cannot be ragged", spec.Key)
	}
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	n, ok := int64(spec.DType.Size()), true
	for _, d := range spec.Sample {
		n, ok = mulSize(n, int64(d), ok)
	}
	if !ok {
		return nil, fmt.Errorf("schema key %q: sample shape %s of %v overflows", spec.Key, formatShape(spec.Sample), spec.DType)
	}
	return &Member{spec: spec, sampleBytes: n}, nil
}

// Clone returns a reader of the same key's members that has accepted no
// header yet, for another worker.
func (m *Member) Clone() *Member { return &Member{spec: m.spec, sampleBytes: m.sampleBytes} }

// SampleBytes returns the size of one sample's data: what ReadAt writes.
func (m *Member) SampleBytes() int { return int(m.sampleBytes) }

// ReadAt reads the .npy file of size bytes that r holds at off: it checks
// its header (dtype, C order, the key's shape) and that its size is the
// header's and the data's, then reads the data straight into dst, which
// holds SampleBytes. Errors do not name the archive or the member; the
// caller does.
func (m *Member) ReadAt(r io.ReaderAt, off, size int64, dst []byte) error {
	if int64(len(dst)) != m.sampleBytes {
		return fmt.Errorf("destination holds %d bytes, a sample of key %q is %d", len(dst), m.spec.Key, m.sampleBytes)
	}
	n := int64(len(m.header))
	if n == 0 || size != n+m.sampleBytes {
		return m.readNew(r, off, size, dst)
	}
	m.buf = slices.Grow(m.buf[:0], int(n))[:n]
	if _, err := r.ReadAt(m.buf, off); err != nil {
		return fmt.Errorf("reading header: %w", err)
	}
	if !bytes.Equal(m.buf, m.header) {
		return m.readNew(r, off, size, dst)
	}
	return m.readData(r, off+n, dst)
}

// readNew is ReadAt of a member whose header differs from the last one
// accepted: it parses and checks the header, keeps it, and reads the data.
func (m *Member) readNew(r io.ReaderAt, off, size int64, dst []byte) error {
	sr := io.NewSectionReader(r, off, size)
	h, dataOff, err := readHeader(sr, size)
	if err != nil {
		return err
	}
	if err := checkLayout(h, m.spec); err != nil {
		return err
	}
	if !slices.Equal(h.shape, int64s(m.spec.Sample)) {
		return fmt.Errorf("shape %s, key %q expects %s", formatShape(h.shape), m.spec.Key, formatShape(m.spec.Sample))
	}
	switch want := dataOff + m.sampleBytes; {
	case size < want:
		return fmt.Errorf("truncated: the member is %d bytes, its header and shape %s need %d", size, formatShape(h.shape), want)
	case size > want:
		return fmt.Errorf("the member is %d bytes, %d more than its header and shape %s need", size, size-want, formatShape(h.shape))
	}
	m.header = slices.Grow(m.header[:0], int(dataOff))[:dataOff]
	if _, err := sr.ReadAt(m.header, 0); err != nil {
		m.header = m.header[:0]
		return fmt.Errorf("reading header: %w", err)
	}
	return m.readData(r, off+dataOff, dst)
}

// readData reads a member's data at off into dst.
func (m *Member) readData(r io.ReaderAt, off int64, dst []byte) error {
	if _, err := r.ReadAt(dst, off); err != nil {
		return fmt.Errorf("reading data: %w", err)
	}
	return nil
}

// int64s converts a shape to the header's element type.
func int64s(shape []int) []int64 {
	out := make([]int64, len(shape))
	for i, d := range shape {
		out[i] = int64(d)
	}
	return out
}
