//go:build !purego

package zarr

// transposeBlocks is the SSE2 form of transposeGrid's loops
// (transpose_amd64.s), with each column's wrap in place of its step.
//
//go:noescape
func transposeBlocks(dst *byte, ds, dstepI, dwrapJ int, src *byte, ss, sstepI, swrapJ, ni, nj, elem int)

// transposeGrid moves nj columns of ni square blocks of elements of elem
// bytes (1 or 4; blockSide gives the side): block (i, j) has its rows at
// byte src[so + i·sstepI + j·sstepJ + r·ss] and its columns at byte
// dst[do + i·dstepI + j·dstepJ + c·ds] (see transposeBlockGo). Every
// block's bytes are elements of the strided.Regions copyBox was given,
// which lie inside both buffers; only the first block's start is checked
// here.
func transposeGrid(elem int, dst []byte, do, ds, dstepI, dstepJ int, src []byte, so, ss, sstepI, sstepJ, ni, nj int) {
	if ni < 1 || nj < 1 {
		return
	}
	transposeBlocks(&dst[do], ds, dstepI, dstepJ-ni*dstepI, &src[so], ss, sstepI, sstepJ-ni*sstepI, ni, nj, elem)
}

// prefetchRows is prefetchPlane's loop (transpose_amd64.s): PREFETCHT0 at
// every 64 bytes of each run and at its last byte.
//
//go:noescape
func prefetchRows(p *byte, stride, rows, width int)

// prefetchPlane asks for rows runs of width bytes of src, the first at
// byte at and each next stride bytes on, to be brought into the cache: a
// box copy asks for its next plane while it copies this one, so that
// reading planes out of chunks in memory waits less on each line. A plane
// not wholly inside src is not asked for.
func prefetchPlane(src []byte, at, stride, rows, width int) {
	if at < 0 || stride < 0 || rows < 1 || width < 1 || at+(rows-1)*stride+width > len(src) {
		return
	}
	prefetchRows(&src[at], stride, rows, width)
}
