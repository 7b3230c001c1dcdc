//go:build purego || !cgo

package compress

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstdDecoder is shared by all goroutines: DecodeAll is safe for concurrent
// use, runs up to GOMAXPROCS decodes at once, and never writes past the
// capacity it is given.
var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		panic(fmt.Sprintf("compress: zstd decoder: %v", err))
	}
	return d
})

// zstdWhole decodes one or more zstd frames, with or without a content
// size, in pure Go (github.com/klauspost/compress).
func zstdWhole(dst, src []byte) error {
	out, err := zstdDecoder().DecodeAll(src, dst[:0:len(dst)])
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		return tooLong(len(dst))
	}
	if err != nil {
		return fmt.Errorf("zstd: %w", err)
	}
	return sized(len(out), len(dst))
}

// zstdStreams recycles stream decoders for ZstdRange: synchronous
// (concurrency 1), each used by one goroutine between Get and Put.
var zstdStreams sync.Pool // of *zstd.Decoder

// zstdStream is ZstdRange through klauspost's streaming decoder, always.
func zstdStream(dst, src []byte, from, to int) error {
	d, err := pooledReader(&zstdStreams, "zstd", src, (*zstd.Decoder).Reset, func(r io.Reader) (*zstd.Decoder, error) {
		return zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
	})
	if err != nil {
		return err
	}
	defer func() {
		d.Reset(nil) // drop src
		zstdStreams.Put(d)
	}()
	return readRange("zstd", d, dst, from, to)
}
