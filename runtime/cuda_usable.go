//go:build cuda

package runtime

import "github.com/loadergen/loadergen/runtime/internal/cudadriver"

// CUDAUsable returns nil when this process can run the CUDA backend, and
// otherwise says why not: no driver, a driver whose cuInit failed (with its
// code), no device, or a driver too old for a call the backend needs.
func CUDAUsable() error {
	_, err := cudadriver.Devices()
	return err
}
