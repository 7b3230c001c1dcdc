//go:build (amd64 || arm64) && !purego

package zarr

import (
	"math/bits"
	"unsafe"
)

// reverseBytes copies the first n - n%8 bytes from src[so] on to dst
// backwards from dst[do], 8 at a time, and returns how many it copied.
// These hosts load and store unaligned words natively, so after checking
// the run's ends once it moves words through unsafe pointers: per-word
// bounds checks would cost as much as the moves.
func reverseBytes(dst []byte, do int, src []byte, so, n int) int {
	if n < 8 {
		return 0
	}
	_, _, _, _ = dst[do-n+1], dst[do], src[so], src[so+n-1]
	dp, sp := unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src))
	i := 0
	for ; i+8 <= n; i += 8 {
		*(*uint64)(unsafe.Add(dp, do-i-7)) = bits.ReverseBytes64(*(*uint64)(unsafe.Add(sp, so+i)))
	}
	return i
}
