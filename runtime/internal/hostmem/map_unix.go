//go:build unix

package hostmem

import (
	"fmt"
	"syscall"
)

// Map returns n bytes of zeroed, page-aligned memory mapped outside the Go
// heap, and the function that unmaps them.
func Map(n int64) ([]byte, func() error, error) {
	if n == 0 {
		return []byte{}, func() error { return nil }, nil
	}
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("map %d bytes of staging: %w", n, err)
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}
