//go:build !cuda

package runtime

import "errors"

// CUDAUsable says why this build cannot run the CUDA backend.
func CUDAUsable() error { return errNoCUDABuild }

var errNoCUDABuild = errors.New("this build has no CUDA backend (build with -tags cuda)")
