//go:build purego || !cgo

package compress

import (
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
