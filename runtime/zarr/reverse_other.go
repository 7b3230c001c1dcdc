//go:build !(amd64 || arm64) || purego

package zarr

import (
	"encoding/binary"
	"math/bits"
)

// reverseBytes copies n bytes from src[so] on to dst backwards from
// dst[do], 8 at a time (and a last 8 ending at the run's end), when n is at
// least 8, and returns how many it copied: n, or 0 for a shorter run.
func reverseBytes(dst []byte, do int, src []byte, so, n int) int {
	if n < 8 {
		return 0
	}
	i := 0
	for ; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(dst[do-i-7:], bits.ReverseBytes64(binary.LittleEndian.Uint64(src[so+i:])))
	}
	if i < n { // the last word ends at the run's end, writing some bytes again alike
		binary.LittleEndian.PutUint64(dst[do-n+1:], bits.ReverseBytes64(binary.LittleEndian.Uint64(src[so+n-8:])))
	}
	return n
}
