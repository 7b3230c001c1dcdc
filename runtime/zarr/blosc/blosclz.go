package blosc

// blosclz is c-blosc's own LZ77 format, a relative of FastLZ. A stream is a
// sequence of instructions, each starting with a control byte c (of the first
// instruction only the low 5 bits count):
//
//   - c < 32: a literal run; the next c+1 bytes are copied to the output.
//   - c >= 32: a match of length (c>>5)+2, copied from earlier output. When
//     c>>5 is 7 the length goes on in the following bytes, each added to it,
//     up to and including the first that is not 255. Then one byte d: the
//     match starts (c&31)<<8 + d + 1 bytes back, unless c&31 is 31 and d is
//     255, in which case two more bytes hold a big-endian distance D and the
//     match starts D + farBase + 1 bytes back. A match may overlap the bytes
//     it produces (a run of one byte repeated is a match one byte back).
const farBase = 8191

// decodeBloscLZ decodes a blosclz stream into exactly dst.
func decodeBloscLZ(dst, src []byte) error {
	if len(src) == 0 {
		if len(dst) == 0 {
			return nil
		}
		return corrupt("blosclz: empty stream for %d bytes", len(dst))
	}
	op, ip := 0, 1
	c := int(src[0] & 31)
	for {
		if c < 32 {
			n := c + 1
			if ip+n > len(src) {
				return corrupt("blosclz: literal run of %d bytes at input %d runs past the stream's end", n, ip)
			}
			if op+n > len(dst) {
				return corrupt("blosclz: output longer than %d bytes", len(dst))
			}
			op += copy(dst[op:], src[ip:ip+n])
			ip += n
		} else {
			n := c>>5 + 2
			if c>>5 == 7 {
				for {
					if ip >= len(src) {
						return corrupt("blosclz: match length runs past the stream's end")
					}
					b := int(src[ip])
					ip++
					n += b
					if b != 255 {
						break
					}
				}
			}
			if ip >= len(src) {
				return corrupt("blosclz: match distance past the stream's end")
			}
			d := int(src[ip])
			ip++
			dist := (c&31)<<8 + d + 1
			if c&31 == 31 && d == 255 {
				if ip+2 > len(src) {
					return corrupt("blosclz: far match distance past the stream's end")
				}
				dist = int(src[ip])<<8 + int(src[ip+1]) + farBase + 1
				ip += 2
			}
			if dist > op {
				return corrupt("blosclz: match %d bytes back at output %d", dist, op)
			}
			if op+n > len(dst) {
				return corrupt("blosclz: output longer than %d bytes", len(dst))
			}
			copyMatch(dst, op, dist, n)
			op += n
		}
		if ip >= len(src) {
			break
		}
		c = int(src[ip])
		ip++
	}
	if op != len(dst) {
		return corrupt("blosclz: %d bytes decoded, expected %d", op, len(dst))
	}
	return nil
}

// copyMatch appends n bytes to dst[:op] from dist bytes back, where the
// source may overlap the bytes being written.
func copyMatch(dst []byte, op, dist, n int) {
	from := op - dist
	if dist >= n {
		copy(dst[op:op+n], dst[from:from+n])
		return
	}
	if dist == 1 {
		b := dst[from]
		out := dst[op : op+n]
		for i := range out {
			out[i] = b
		}
		return
	}
	// Each copy doubles the repeated pattern that the next one reads.
	for n > 0 {
		k := copy(dst[op:op+min(n, dist)], dst[from:from+min(n, dist)])
		op += k
		n -= k
		dist += k
	}
}
