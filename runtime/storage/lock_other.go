//go:build !unix

package storage

import (
	"errors"
	"os"
)

// lockFile cannot lock f on this platform: the processes sharing a disk
// cache each hold its bound for themselves.
func lockFile(f *os.File) error { return errors.ErrUnsupported }

// unlockFile releases lockFile's lock.
func unlockFile(f *os.File) error { return nil }
