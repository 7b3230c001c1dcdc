package blosc

import (
	"github.com/loadergen/loadergen/runtime/zarr/internal/compress"
)

// decodeStream decodes src, one stream of a block compressed with c, into
// exactly dst.
func decodeStream(c Codec, dst, src []byte) error {
	switch c {
	case BloscLZ:
		return decodeBloscLZ(dst, src)
	case LZ4:
		return compress.LZ4Block(dst, src)
	case Snappy:
		return compress.Snappy(dst, src)
	case Zlib:
		return compress.Zlib(dst, src)
	case Zstd:
		return compress.Zstd(dst, src)
	}
	return corrupt("unknown codec %d", uint8(c))
}
