//go:build !amd64 || purego

package zarr

// transposeGrid moves nj columns of ni square blocks of elements of elem
// bytes (1 or 4; blockSide gives the side): block (i, j) has its rows at
// byte src[so + i·sstepI + j·sstepJ + r·ss] and its columns at byte
// dst[do + i·dstepI + j·dstepJ + c·ds] (see transposeBlockGo).
func transposeGrid(elem int, dst []byte, do, ds, dstepI, dstepJ int, src []byte, so, ss, sstepI, sstepJ, ni, nj int) {
	block := transposeBlockGo
	if elem == 4 {
		block = transposeBlock32Go
	}
	for j := range nj {
		for i := range ni {
			block(dst, do+i*dstepI+j*dstepJ, ds, src, so+i*sstepI+j*sstepJ, ss)
		}
	}
}

// prefetchPlane does nothing on these hosts: Go has no prefetch of its own.
func prefetchPlane(src []byte, at, stride, rows, width int) {}
