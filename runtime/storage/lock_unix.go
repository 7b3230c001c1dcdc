//go:build unix

package storage

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on f (flock), waiting for it: the
// processes sharing a disk cache change its entries one at a time.
func lockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }

// unlockFile releases lockFile's lock.
func unlockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
