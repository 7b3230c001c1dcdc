//go:build cgo && !cuda

package python

import (
	"errors"

	"github.com/loadergen/loadergen/runtime"
)

// waitOn is never called without -tags cuda: every tensor is on the host.
func (s *cslot) waitOn(int, uintptr) error {
	return errors.New("a device tensor in a library built without -tags cuda")
}

// done has no streams to mark without -tags cuda.
func (s *cslot) done() {}

// deviceOrdinal is 0 without -tags cuda.
func deviceOrdinal(*runtime.Batch) int { return 0 }
