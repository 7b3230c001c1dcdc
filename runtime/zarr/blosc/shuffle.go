package blosc

// unshuffle undoes a byte shuffle of one block. A shuffled block holds the
// first byte of every element, then the second byte of every element, and so
// on; bytes past the last whole element are stored as they are.
func unshuffle(dst, src []byte, typeSize int) {
	n := len(src) / typeSize
	for b := range typeSize {
		plane := src[b*n : (b+1)*n]
		for i, v := range plane {
			dst[i*typeSize+b] = v
		}
	}
	copy(dst[n*typeSize:], src[n*typeSize:])
}

// shuffle is unshuffle's inverse.
func shuffle(dst, src []byte, typeSize int) {
	n := len(src) / typeSize
	if typeSize == 4 { // float32 and 32-bit integers: a word at a time
		p0, p1, p2, p3 := dst[:n], dst[n:2*n], dst[2*n:3*n], dst[3*n:4*n]
		for i := range p0 {
			w := src[4*i : 4*i+4 : 4*i+4]
			p0[i], p1[i], p2[i], p3[i] = w[0], w[1], w[2], w[3]
		}
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
