//go:build purego || !cgo

package compress

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstdEncoders holds one encoder per level, shared by every goroutine:
// EncodeAll is safe for concurrent use, and runs up to GOMAXPROCS encodes
// at once.
var zstdEncoders sync.Map // level -> *zstd.Encoder

// ZstdEncode encodes src as one zstd frame at level (1 to 22, mapped to
// the pure-Go encoder's nearest speed), which records its content size
// (numcodecs' decoder needs it), and returns it in dst's memory when dst
// can hold it.
func ZstdEncode(dst, src []byte, level int) ([]byte, error) {
	e, ok := zstdEncoders.Load(level)
	if !ok {
		// Single-segment frames always record their content size, which
		// the encoder leaves out of small frames otherwise.
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithSingleSegment(true))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		e, _ = zstdEncoders.LoadOrStore(level, enc)
	}
	return e.(*zstd.Encoder).EncodeAll(src, dst[:0]), nil
}
