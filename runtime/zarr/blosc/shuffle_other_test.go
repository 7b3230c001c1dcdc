//go:build !amd64 || purego

package blosc

import "testing"

// withShuffleLoops runs f with the Go loops, the only ones here.
func withShuffleLoops(t *testing.T, f func(t *testing.T)) { t.Run("go", f) }
