//go:build cgo && !purego

package compress

import (
	"bytes"
	"fmt"

	"github.com/DataDog/zstd"
)

// zstdWhole decodes one or more zstd frames, with or without a content
// size, through libzstd (github.com/DataDog/zstd bundles its C sources, so no
// system library is needed): faster than the pure-Go decoder on zarr
// chunks (BenchmarkZstd; docs/PERFORMANCE.md, "Codecs").
func zstdWhole(dst, src []byte) error {
	if len(src) == 0 {
		return sized(0, len(dst))
	}
	out := dst
	var one [1]byte
	if len(dst) == 0 {
		// DecompressInto needs a byte to point at; a frame that decodes to
		// anything overflows the expected 0 bytes.
		out = one[:]
	}
	n, err := zstd.DecompressInto(out, src)
	switch {
	case zstd.IsDstSizeTooSmallError(err):
		return tooLong(len(dst))
	case err != nil:
		return fmt.Errorf("zstd: %w", err)
	}
	return sized(n, len(dst))
}

// zstdStream is ZstdRange through libzstd's streaming decoder, always.
func zstdStream(dst, src []byte, from, to int) error {
	r := zstd.NewReader(bytes.NewReader(src))
	defer r.Close()
	return readRange("zstd", r, dst, from, to)
}
