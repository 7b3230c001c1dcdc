//go:build !purego

package blosc

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// withShuffleLoops runs f with shuffle_amd64.s's AVX2 loops, where the CPU
// has AVX2, then with the Go loops alone.
func withShuffleLoops(t *testing.T, f func(t *testing.T)) {
	if shuffleAVX2 {
		t.Run("avx2", f)
	}
	shuffleAVX2 = false
	defer func() { shuffleAVX2 = cpu.X86.HasAVX2 }()
	t.Run("go", f)
}
