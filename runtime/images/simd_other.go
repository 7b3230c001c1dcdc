//go:build !amd64 || purego

package images

// ycbcrSIMD does nothing on these builds: storeYCbCr's Go loop writes
// every pixel.
func (o *Output) ycbcrSIMD(red, green, blue []float32, lum, cb, cr []uint8, flip bool) int {
	return 0
}

// hasAVX2 is false: these builds have no assembly.
const hasAVX2 = false
