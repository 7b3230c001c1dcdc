package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// A Reader's ranged reads: the first, and the first after a Seek far past
// what it holds, asks for readerFirst bytes, and each further one for
// twice the last, up to readerMost.
const (
	readerFirst = 64 << 10
	readerMost  = 4 << 20
)

// Reader reads object name of a root from start to end by ranged reads,
// for one pass over an object too big to hold, such as indexing a tar
// shard from its headers. Seek moves without reading: the bytes skipped
// are never fetched, so a pass that skips large members fetches little
// more than what it reads. A Reader is for one goroutine.
type Reader struct {
	ctx  context.Context
	root Root
	name string
	size int64
	pos  int64  // the offset of the next byte Read returns
	buf  []byte // the object's bytes [base, base+len(buf))
	base int64
	next int64 // the bytes the next ranged read asks for
}

// NewReader returns a Reader of object name of r, which holds size bytes,
// whose reads stop once ctx is done.
func NewReader(ctx context.Context, r Root, name string, size int64) *Reader {
	return &Reader{ctx: ctx, root: r, name: name, size: size}
}

// Read reads the bytes from the current offset, fetching the block that
// starts there when it is not held.
func (rd *Reader) Read(p []byte) (int, error) {
	if rd.pos >= rd.size {
		return 0, io.EOF
	}
	if end := rd.base + int64(len(rd.buf)); rd.pos < rd.base || rd.pos >= end {
		switch {
		case rd.pos >= end && rd.pos < end+int64(len(rd.buf)): // about in order
			rd.next = min(2*rd.next, readerMost)
		default:
			rd.next = readerFirst
		}
		n := min(rd.next, rd.size-rd.pos)
		if cap(rd.buf) < int(n) {
			rd.buf = make([]byte, n)
		}
		rd.buf, rd.base = rd.buf[:n], rd.pos
		if err := rd.root.ReadAt(rd.ctx, rd.name, rd.buf, rd.pos); err != nil {
			rd.buf = rd.buf[:0]
			return 0, err
		}
	}
	n := copy(p, rd.buf[rd.pos-rd.base:])
	rd.pos += int64(n)
	return n, nil
}

// Seek sets the offset of the next Read, as io.Seeker says.
func (rd *Reader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += rd.pos
	case io.SeekEnd:
		offset += rd.size
	case io.SeekStart:
	default:
		return rd.pos, fmt.Errorf("seek %s: whence %d", rd.root.URL(rd.name), whence)
	}
	if offset < 0 {
		return rd.pos, errors.New("seek " + rd.root.URL(rd.name) + ": before the start")
	}
	rd.pos = offset
	return offset, nil
}
