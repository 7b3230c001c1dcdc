//go:build !linux

package bounded

import "testing"

// HostileRSS is the bound of the hostile-input suite (see the Linux
// build): no bad file or server answer may take a loader past 1 GB.
const HostileRSS = 1 << 30

// Child skips t: measuring a child's resident memory needs Linux's /proc.
func Child(t *testing.T, maxRSS int64, extra ...string) bool {
	t.Skip("bounded: a child's resident memory is measured on Linux only")
	return false
}
