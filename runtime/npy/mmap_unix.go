//go:build unix

package npy

import (
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f read-only and shared; size must be
// positive. The mapping stays valid after f is closed.
func mapFile(f *os.File, size int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
}

// unmapFile releases a mapping made by mapFile.
func unmapFile(b []byte) error { return syscall.Munmap(b) }
