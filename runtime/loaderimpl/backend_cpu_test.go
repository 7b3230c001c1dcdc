package loaderimpl

import (
	"testing"
	"unsafe"
)

// TestMappedStaging: a CPU backend whose slots are mapped outside the Go
// heap gives zeroed, page-aligned, writable slots of the asked size, and
// unmaps them all at close.
func TestMappedStaging(t *testing.T) {
	c := &cpuBackend{mapped: true}
	for s, n := range []int64{1, 4096, 3 << 20} {
		b, err := c.slot(s, n)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) != n || uintptr(unsafe.Pointer(&b[0]))%4096 != 0 {
			t.Fatalf("slot of %d bytes: got %d bytes at %p, want them page-aligned", n, len(b), &b[0])
		}
		for i := range b {
			if b[i] != 0 {
				t.Fatalf("slot of %d bytes: byte %d is %d, not zeroed", n, i, b[i])
			}
			b[i] = 0xff
		}
	}
	if len(c.unmap) != 3 {
		t.Fatalf("%d slots to unmap, want 3", len(c.unmap))
	}
	if err := c.close(); err != nil || c.unmap != nil {
		t.Fatalf("close: %v, %d left to unmap", err, len(c.unmap))
	}
	if _, err := c.slot(0, -1); err == nil {
		t.Fatal("a slot of -1 bytes was mapped")
	}
}
