//go:build purego || !cgo

package compress

import (
	"bytes"
	"errors"
	"fmt"
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

// Zstd decodes one or more zstd frames, with or without a content size, in
// pure Go (github.com/klauspost/compress).
func Zstd(dst, src []byte) error {
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

// ZstdRange is Zstd for bytes [from, to) of the decoded stream only, written
// to dst[from:to] (len(dst) is the whole decoded size; nothing before
// dst[from] is written). A range ending before the stream's end stops the
// decoder there and leaves the frame's content checksum, which only its end
// can verify, unchecked (readRange).
func ZstdRange(dst, src []byte, from, to int) error {
	if from == 0 && to == len(dst) {
		return Zstd(dst, src)
	}
	return zstdStream(dst, src, from, to)
}

// zstdStream is ZstdRange through the streaming decoder, always.
func zstdStream(dst, src []byte, from, to int) error {
	br := bytes.NewReader(src)
	var d *zstd.Decoder
	if v := zstdStreams.Get(); v != nil {
		d = v.(*zstd.Decoder)
		if err := d.Reset(br); err != nil {
			return fmt.Errorf("zstd: %w", err)
		}
	} else {
		var err error
		if d, err = zstd.NewReader(br, zstd.WithDecoderConcurrency(1)); err != nil {
			return fmt.Errorf("zstd: %w", err)
		}
	}
	defer func() {
		d.Reset(nil) // drop src
		zstdStreams.Put(d)
	}()
	return readRange("zstd", d, dst, from, to)
}
