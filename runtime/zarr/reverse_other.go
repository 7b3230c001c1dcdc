//go:build !(amd64 || arm64) || purego

package zarr

import (
	"encoding/binary"
	"math/bits"
)

// reverseBytes copies the first n - n%8 bytes from src[so] on to dst
// backwards from dst[do], 8 at a time, and returns how many it copied.
func reverseBytes(dst []byte, do int, src []byte, so, n int) int {
	i := 0
	for ; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(dst[do-i-7:], bits.ReverseBytes64(binary.LittleEndian.Uint64(src[so+i:])))
	}
	return i
}
