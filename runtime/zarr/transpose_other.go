//go:build !amd64 || purego

package zarr

// transposeGrid moves nj columns of ni blocks of 8 x 8 bytes: block (i,
// j) has its rows at src[so + i·sstepI + j·sstepJ + r·ss] and its columns
// at dst[do + i·dstepI + j·dstepJ + c·ds] (see transposeBlockGo).
func transposeGrid(dst []byte, do, ds, dstepI, dstepJ int, src []byte, so, ss, sstepI, sstepJ, ni, nj int) {
	for j := range nj {
		for i := range ni {
			transposeBlockGo(dst, do+i*dstepI+j*dstepJ, ds, src, so+i*sstepI+j*sstepJ, ss)
		}
	}
}

// prefetchPlane does nothing on these hosts: Go has no prefetch of its own.
func prefetchPlane(src []byte, at, stride, rows, width int) {}
