// Package compress decodes the compressed streams zarr chunks and Blosc
// frames hold, each into a destination of exactly the size the caller
// expects: a stream that decodes to fewer or more bytes is an error, never a
// short or truncated result.
//
// zstd decodes through libzstd (github.com/DataDog/zstd, which bundles
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
func Zlib(dst, src []byte) error {
	br := bytes.NewReader(src)
	var r io.ReadCloser
	if v := zlibReaders.Get(); v != nil {
		r = v.(io.ReadCloser)
		if err := r.(zlib.Resetter).Reset(br, nil); err != nil {
			return fmt.Errorf("zlib: %w", err)
		}
	} else {
		var err error
		if r, err = zlib.NewReader(br); err != nil {
			return fmt.Errorf("zlib: %w", err)
		}
	}
	defer zlibReaders.Put(r)
	return readExactly("zlib", r, dst)
}

// Gzip decodes a gzip stream (RFC 1952) and checks its CRC-32.
func Gzip(dst, src []byte) error {
	br := bytes.NewReader(src)
	var r *gzip.Reader
	if v := gzipReaders.Get(); v != nil {
		r = v.(*gzip.Reader)
		if err := r.Reset(br); err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
	} else {
		var err error
		if r, err = gzip.NewReader(br); err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
	}
	defer gzipReaders.Put(r)
	return readExactly("gzip", r, dst)
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
