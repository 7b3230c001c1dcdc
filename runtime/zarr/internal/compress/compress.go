// Package compress decodes the compressed streams zarr chunks and Blosc
// frames hold, each into a destination of exactly the size the caller
// expects: a stream that decodes to fewer or more bytes is an error, never a
// short or truncated result, and a zstd frame that declares more is refused
// from its header, before anything is decoded. ZstdRange, GzipRange and ZlibRange decode only
// a range of a stream's bytes and stop once its end is out; a stream
// stopped before its end cannot have its checksum verified (readRange).
// ZstdEncode encodes the frames zarr writers store.
//
// zstd decodes and encodes through libzstd (github.com/DataDog/zstd, which bundles
// zstd's C sources) where cgo is available, and through
// github.com/klauspost/compress with -tags purego or CGO_ENABLED=0; the
// other formats come from github.com/klauspost/compress (zlib, gzip,
// snappy) and github.com/pierrec/lz4/v4 (LZ4 blocks) in both builds. Every
// function is safe for concurrent use.
package compress

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zlib"
	"github.com/pierrec/lz4/v4"
)

// LZ4Block decodes one raw LZ4 block (no frame), as lz4 and lz4hc write it.
func LZ4Block(dst, src []byte) error {
	n, err := lz4.UncompressBlock(src, dst)
	if err != nil {
		return fmt.Errorf("lz4: %w", err)
	}
	return sized(n, len(dst))
}

// Snappy decodes one snappy block (not the framed stream format).
func Snappy(dst, src []byte) error {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return fmt.Errorf("snappy: %w", err)
	}
	if err := sized(n, len(dst)); err != nil {
		return err
	}
	if _, err := snappy.Decode(dst, src); err != nil {
		return fmt.Errorf("snappy: %w", err)
	}
	return nil
}

// A reader pool per stream format: zlib and gzip readers hold large tables
// worth reusing, and Reset makes one ready for the next stream.
var (
	zlibReaders sync.Pool // of io.ReadCloser that implement zlib.Resetter
	gzipReaders sync.Pool // of *gzip.Reader
)

// Zlib decodes a zlib stream (RFC 1950) and checks its Adler-32.
func Zlib(dst, src []byte) error { return ZlibRange(dst, src, 0, len(dst)) }

// ZlibRange is Zlib for bytes [from, to) of the decoded stream only: see
// readRange. The Adler-32 is checked only when to is len(dst).
func ZlibRange(dst, src []byte, from, to int) error {
	reset := func(r io.ReadCloser, br io.Reader) error { return r.(zlib.Resetter).Reset(br, nil) }
	r, err := pooledReader(&zlibReaders, "zlib", src, reset, zlib.NewReader)
	if err != nil {
		return err
	}
	defer zlibReaders.Put(r)
	return readRange("zlib", r, dst, from, to)
}

// Gzip decodes a gzip stream (RFC 1952) and checks its CRC-32.
func Gzip(dst, src []byte) error { return GzipRange(dst, src, 0, len(dst)) }

// GzipRange is Gzip for bytes [from, to) of the decoded stream only: see
// readRange. The CRC-32 is checked only when to is len(dst).
func GzipRange(dst, src []byte, from, to int) error {
	r, err := pooledReader(&gzipReaders, "gzip", src, (*gzip.Reader).Reset, gzip.NewReader)
	if err != nil {
		return err
	}
	defer gzipReaders.Put(r)
	return readRange("gzip", r, dst, from, to)
}

// Zstd decodes one or more zstd frames, with or without a content size,
// into exactly dst, in the build's decoder (zstdWhole), which decodes
// straight into dst and allocates nothing by the frames' declarations: a
// first frame that declares more bytes than dst holds is refused before
// anything is decoded.
func Zstd(dst, src []byte) error {
	if err := checkZstdSize(src, len(dst)); err != nil {
		return err
	}
	return zstdWhole(dst, src)
}

// MaxStreamWindow is the largest window of a zstd frame whose prefix
// ZstdRange decodes through a streaming decoder, which buffers the window:
// zstd's at level 19 and below. StreamMemory is what that decoder holds
// at most: the window and a block.
const (
	MaxStreamWindow = 8 << 20
	StreamMemory    = MaxStreamWindow + 128<<10
)

// ZstdRange is Zstd for bytes [from, to) of the decoded stream only, written
// to dst[from:to] (len(dst) is the whole decoded size; nothing before
// dst[from] is written). A range ending before the stream's end stops the
// build's streaming decoder there (zstdStream) and leaves the frame's
// content checksum, which only its end can verify, unchecked (readRange).
// A streaming decoder buffers the frame's window, which a frame declares
// as it likes (a frame of one segment: its whole content): a prefix (from
// 0) of a frame whose window is larger than dst or than MaxStreamWindow
// decodes whole instead, straight into all of dst.
func ZstdRange(dst, src []byte, from, to int) error {
	_, window, _ := zstdHeader(src)
	if from == 0 && (to == len(dst) || window > min(int64(len(dst)), MaxStreamWindow)) {
		return Zstd(dst, src)
	}
	if err := checkZstdSize(src, len(dst)); err != nil {
		return err
	}
	return zstdStream(dst, src, from, to)
}

// pooledReader returns a decoder of the stream src for format: one from
// pool, reset to src, or a new one from open when the pool has none. The
// caller puts it back in pool when done.
func pooledReader[R any](pool *sync.Pool, format string, src []byte, reset func(R, io.Reader) error, open func(io.Reader) (R, error)) (R, error) {
	br := bytes.NewReader(src)
	if v := pool.Get(); v != nil {
		r := v.(R)
		if err := reset(r, br); err != nil {
			return r, fmt.Errorf("%s: %w", format, err)
		}
		return r, nil
	}
	r, err := open(br)
	if err != nil {
		return r, fmt.Errorf("%s: %w", format, err)
	}
	return r, nil
}

// readRange decodes bytes [from, to) of the stream r, whose whole decoded
// size is len(dst), into dst[from:to], and writes nothing before
// dst[from]: a caller may hand out dst[:from] to readers while this runs.
// The first from bytes are decoded into dst[from:] and dropped (a stream
// cannot be entered in its middle). When to is len(dst) the stream is read
// to its end, so its checksum is verified and a longer stream is caught,
// as readExactly does. A stream stopped before its end (to < len(dst))
// cannot have its checksum verified (gzip's CRC-32, zlib's Adler-32 and
// zstd's content checksum cover the whole stream and come after it): the
// bytes returned are as far as the stream is intact, and a chunk read later
// to its end is verified then.
func readRange(format string, r io.Reader, dst []byte, from, to int) error {
	if from < 0 || to > len(dst) || from > to {
		return fmt.Errorf("%s: range [%d, %d) of %d bytes", format, from, to, len(dst))
	}
	for skipped := 0; skipped < from; {
		m := min(from-skipped, len(dst)-from)
		k, err := io.ReadFull(r, dst[from:from+m])
		skipped += k
		if err != nil {
			return shortOr(format, err, skipped, len(dst))
		}
	}
	if to == len(dst) {
		if err := readExactly(format, r, dst[from:]); err != nil {
			if errors.Is(err, ErrSize) {
				return fmt.Errorf("%w: fewer than the %d bytes expected", ErrSize, len(dst))
			}
			return err
		}
		return nil
	}
	if k, err := io.ReadFull(r, dst[from:to]); err != nil {
		return shortOr(format, err, from+k, len(dst))
	}
	return nil
}

// shortOr turns the error of a read that stopped after got bytes into a
// size error when the stream ended, else a stream error.
func shortOr(format string, err error, got, want int) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return sized(got, want)
	}
	return fmt.Errorf("%s: %w", format, err)
}

// readExactly fills dst from r and then reads r to its end, so that the
// stream's checksum is verified and a longer stream is caught.
func readExactly(format string, r io.Reader, dst []byte) error {
	n, err := io.ReadFull(r, dst)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return sized(n, len(dst))
		}
		return fmt.Errorf("%s: %w", format, err)
	}
	var one [1]byte
	for range 3 { // a reader may return (0, nil) before it settles
		m, err := r.Read(one[:])
		switch {
		case m > 0:
			return fmt.Errorf("%s: decodes to more than the %d bytes expected", format, len(dst))
		case err == io.EOF:
			return nil
		case err != nil:
			return fmt.Errorf("%s: %w", format, err)
		}
	}
	return fmt.Errorf("%s: the stream does not end after %d bytes", format, len(dst))
}

// ErrSize is wrapped by the errors of streams that decode to a size other
// than the one expected.
var ErrSize = errors.New("decoded size differs from the expected size")

// tooLong is the error of a stream that decodes to more than want bytes.
func tooLong(want int) error {
	return fmt.Errorf("%w: more than the %d bytes expected", ErrSize, want)
}

func sized(got, want int) error {
	if got != want {
		return fmt.Errorf("%w: %d bytes, expected %d", ErrSize, got, want)
	}
	return nil
}
