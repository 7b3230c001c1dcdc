//go:build !amd64 || purego

package images

// hasAVX2 is false: these builds have no assembly.
const hasAVX2 = false

// floatsSIMD does nothing on these builds: write's Go loop writes every
// float.
func (o *Output) floatsSIMD(row []float32, src []uint8, ch int, flip bool) int { return 0 }

// verticalSIMD does nothing on these builds: vertical's Go loops write
// every pixel.
func verticalSIMD(out []uint8, rows []uint64, words int, c []uint64) int { return 0 }

// packSIMD does nothing on these builds: horizontal's Go loop packs every
// column.
func packSIMD(in []uint64, r0, r1, r2, r3 []uint8) int { return 0 }

// spreadSIMD leaves a as it is on these builds: horizontalSIMD does not
// read it.
func (a *axis) spreadSIMD(lo int) {}

// horizontalSIMD does nothing on these builds: horizontal's Go loops write
// every column.
func horizontalSIMD(rows, in []uint64, a *axis, x0 int) int { return 0 }

// fancySIMD does nothing on these builds: fancyRow's Go loop writes
// every pixel.
func fancySIMD(dst, near, far []uint8, from, to int, even, odd int32) int { return 0 }

// ycbcrSIMD does nothing on these builds: ycbcrRow's Go loop converts
// every pixel.
func ycbcrSIMD(r, g, b, y, cb, cr []uint8) int { return 0 }
