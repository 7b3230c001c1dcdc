package storage

import (
	"math/bits"
	"sync"
)

// Read-ahead buffers are recycled by size class: a buffer for n bytes has
// the capacity of n rounded up to an eighth of the power of two below it
// (at most 12.5 % more), so objects of one store, of similar sizes, reuse
// the buffers of those dropped before them rather than allocating, zeroing
// and faulting in fresh memory for each. Buffers of up to smallBuf bytes,
// or over largeBuf, are allocated at their size and not recycled.
const (
	smallBuf = 4 << 10
	largeBuf = 1 << 30
)

// bufPools holds the recycled buffers (as *[]byte) of each size class;
// sync.Pool orders its own writes, and the garbage collector frees what
// stays unused.
var bufPools [(bits.UintSize - 12) * 8]sync.Pool

// bufClass returns the capacity of the buffers that hold n bytes and
// their class, or class -1 for sizes not recycled.
func bufClass(n int) (size, class int) {
	if n <= smallBuf || n > largeBuf {
		return n, -1
	}
	m := bits.Len(uint(n - 1)) // 2^(m-1) < n <= 2^m
	step := 1 << (m - 4)
	size = (n + step - 1) / step * step
	return size, (m-13)*8 + size/step - 9
}

// getBuf returns an empty buffer of n bytes' class capacity, recycled
// when one is free.
func getBuf(n int) []byte {
	size, class := bufClass(n)
	if class >= 0 {
		if p, ok := bufPools[class].Get().(*[]byte); ok {
			return (*p)[:0]
		}
	}
	return make([]byte, 0, size)
}

// putBuf recycles buf, which nothing may use after: only a buffer whose
// capacity is its class's (one from getBuf) is kept.
func putBuf(buf []byte) {
	if size, class := bufClass(cap(buf)); class >= 0 && size == cap(buf) {
		bufPools[class].Put(&buf)
	}
}
