//go:build (amd64 || arm64) && !purego

package zarr

import (
	"math/bits"
	"unsafe"
)

// reverseBytes copies n bytes from src[so] on to dst backwards from
// dst[do], a word of 8 at a time (four words a turn while 32 remain, and
// a last word ending at the run's end), when n is at least 8, and returns
// how many it copied: n, or 0 for a shorter run.
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
	for ; i+32 <= n; i += 32 { // four independent words a turn
		a, b := *(*uint64)(unsafe.Add(sp, so+i)), *(*uint64)(unsafe.Add(sp, so+i+8))
		c, d := *(*uint64)(unsafe.Add(sp, so+i+16)), *(*uint64)(unsafe.Add(sp, so+i+24))
		*(*uint64)(unsafe.Add(dp, do-i-7)) = bits.ReverseBytes64(a)
		*(*uint64)(unsafe.Add(dp, do-i-15)) = bits.ReverseBytes64(b)
		*(*uint64)(unsafe.Add(dp, do-i-23)) = bits.ReverseBytes64(c)
		*(*uint64)(unsafe.Add(dp, do-i-31)) = bits.ReverseBytes64(d)
	}
	for ; i+8 <= n; i += 8 {
		*(*uint64)(unsafe.Add(dp, do-i-7)) = bits.ReverseBytes64(*(*uint64)(unsafe.Add(sp, so+i)))
	}
	if i < n { // the last word ends at the run's end, writing some bytes again alike
		*(*uint64)(unsafe.Add(dp, do-n+1)) = bits.ReverseBytes64(*(*uint64)(unsafe.Add(sp, so+n-8)))
	}
	return n
}
