package blosc

import "encoding/binary"

// unshuffle undoes a byte shuffle of one block. A shuffled block holds the
// first byte of every element, then the second byte of every element, and so
// on; bytes past the last whole element are stored as they are. Elements of
// 4 bytes go through the AVX2 loop first where it runs (unshuffle4SIMD).
func unshuffle(dst, src []byte, typeSize int) {
	n := len(src) / typeSize
	done := 0
	if typeSize == 4 {
		done = unshuffle4SIMD(dst, src, n)
	}
	for b := range typeSize {
		plane := src[b*n : (b+1)*n]
		for i := done; i < n; i++ {
			dst[i*typeSize+b] = plane[i]
		}
	}
	copy(dst[n*typeSize:], src[n*typeSize:])
}

// shuffle is unshuffle's inverse.
func shuffle(dst, src []byte, typeSize int) {
	n := len(src) / typeSize
	switch typeSize {
	case 1:
		copy(dst, src)
		return
	case 4: // float32 and 32-bit integers: 8 elements at a time
		shuffle4(dst, src, n)
		copy(dst[4*n:], src[4*n:])
		return
	}
	for b := range typeSize {
		plane := dst[b*n : (b+1)*n]
		for i := range plane {
			plane[i] = src[i*typeSize+b]
		}
	}
	copy(dst[n*typeSize:], src[n*typeSize:])
}

// shuffle4 shuffles n elements of 4 bytes of src into dst's 4 planes of n
// bytes: the AVX2 loop takes what it can (shuffle4SIMD), then, eight
// elements (four words) at a time, it transposes their 8 x 4
// bytes into four words, one per plane: it interleaves the bytes of each
// word's two elements, then transposes the four words' 16-bit pairs.
func shuffle4(dst, src []byte, n int) {
	p0, p1, p2, p3 := dst[:n], dst[n:2*n], dst[2*n:3*n], dst[3*n:4*n]
	i := shuffle4SIMD(dst, src, n)
	for ; i+8 <= n; i += 8 {
		s := src[4*i : 4*i+32 : 4*i+32]
		w0 := interleave2(binary.LittleEndian.Uint64(s[0:]))
		w1 := interleave2(binary.LittleEndian.Uint64(s[8:]))
		w2 := interleave2(binary.LittleEndian.Uint64(s[16:]))
		w3 := interleave2(binary.LittleEndian.Uint64(s[24:]))
		// Each word holds [b0 b1 b2 b3] of its two elements as 16-bit
		// pairs; transpose the pairs of the four words.
		t := (w0>>16 ^ w1) & 0x0000FFFF0000FFFF
		w1 ^= t
		w0 ^= t << 16
		t = (w2>>16 ^ w3) & 0x0000FFFF0000FFFF
		w3 ^= t
		w2 ^= t << 16
		t = (w0>>32 ^ w2) & 0x00000000FFFFFFFF
		w2 ^= t
		w0 ^= t << 32
		t = (w1>>32 ^ w3) & 0x00000000FFFFFFFF
		w3 ^= t
		w1 ^= t << 32
		binary.LittleEndian.PutUint64(p0[i:], w0)
		binary.LittleEndian.PutUint64(p1[i:], w1)
		binary.LittleEndian.PutUint64(p2[i:], w2)
		binary.LittleEndian.PutUint64(p3[i:], w3)
	}
	for ; i < n; i++ {
		w := src[4*i : 4*i+4 : 4*i+4]
		p0[i], p1[i], p2[i], p3[i] = w[0], w[1], w[2], w[3]
	}
}

// interleave2 takes a word holding two elements of 4 bytes, a0..a3 then
// b0..b3 (from the low byte up), to a0 b0 a1 b1 a2 b2 a3 b3.
func interleave2(x uint64) uint64 {
	t := (x>>16 ^ x) & 0x00000000FFFF0000 // a2 a3 <-> b0 b1
	x ^= t ^ t<<16
	t = (x>>8 ^ x) & 0x0000FF000000FF00 // a1 <-> b0, a3 <-> b2
	return x ^ t ^ t<<8
}

// bitUnshuffle undoes a bit shuffle of one block.
//
// A bit-shuffled block of n elements (n a multiple of 8) is 8·typeSize rows
// of n bits: row 8·b+j holds bit j of byte b of every element, element i at
// bit i%8 of the row's byte i/8. When n is not a multiple of 8 nothing is
// shuffled, and past the last group of 8 elements bytes are stored as they are.
func bitUnshuffle(dst, src []byte, typeSize int) {
	n := len(src) / typeSize
	if n%8 != 0 {
		copy(dst, src)
		return
	}
	whole := n * typeSize
	rowBytes := n / 8
	// Gather, for byte b of elements 8g..8g+7, the 8 row bytes (one per bit j)
	// into one word, transpose its 8x8 bit matrix, and scatter the 8 bytes.
	for b := range typeSize {
		for g := range rowBytes {
			var x uint64
			for j := range 8 {
				x |= uint64(src[(8*b+j)*rowBytes+g]) << (8 * j)
			}
			x = transpose8x8(x)
			for k := range 8 {
				dst[(8*g+k)*typeSize+b] = byte(x >> (8 * k))
			}
		}
	}
	copy(dst[whole:], src[whole:])
}

// transpose8x8 transposes the 8x8 bit matrix held in x, where byte r is row
// r and bit c of a byte is column c: bit c of byte r moves to bit r of byte
// c. It swaps the off-diagonal 4x4, then 2x2, then 1x1 blocks.
func transpose8x8(x uint64) uint64 {
	t := (x ^ x>>28) & 0x00000000F0F0F0F0
	x ^= t ^ t<<28
	t = (x ^ x>>14) & 0x0000CCCC0000CCCC
	x ^= t ^ t<<14
	t = (x ^ x>>7) & 0x00AA00AA00AA00AA
	x ^= t ^ t<<7
	return x
}
