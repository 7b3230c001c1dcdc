//go:build !unix

package npy

import (
	"io"
	"os"
)

// mapFile reads the first size bytes of f into memory: this platform has no
// mmap, so an open File holds the whole file.
func mapFile(f *os.File, size int) ([]byte, error) {
	b := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, int64(size)), b); err != nil {
		return nil, err
	}
	return b, nil
}

// unmapFile releases what mapFile returned; memory needs nothing.
func unmapFile([]byte) error { return nil }
