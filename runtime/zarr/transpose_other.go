//go:build !amd64 || purego

package zarr

// transposeBlock moves an 8 x 8 block of bytes: row r, the 8 bytes at
// src[so + r·ss], becomes column r, byte r of the 8 bytes at
// dst[do + c·ds] for each column c.
func transposeBlock(dst []byte, do, ds int, src []byte, so, ss int) {
	transposeBlockGo(dst, do, ds, src, so, ss)
}
