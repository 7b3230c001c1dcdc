package sizes

import (
	"math"
	"testing"
)

// TestArithmetic: products and sums are refused past int64 and for
// negative sizes, and kept up to MaxInt64.
func TestArithmetic(t *testing.T) {
	for _, tt := range []struct {
		a, b int64
		in   bool
		want int64
		ok   bool
	}{
		{3, 4, true, 12, true},
		{3, 4, false, 0, false},
		{-1, 4, true, 0, false},
		{math.MaxInt64, 1, true, math.MaxInt64, true},
		{1 << 32, 1 << 31, true, 0, false},
		{1 << 32, 1 << 32, true, 0, false},
	} {
		if got, ok := Mul(tt.a, tt.b, tt.in); ok != tt.ok || ok && got != tt.want {
			t.Errorf("Mul(%d, %d, %v) = %d, %v; want %d, %v", tt.a, tt.b, tt.in, got, ok, tt.want, tt.ok)
		}
	}
	if s, ok := Add(math.MaxInt64-1, 1); !ok || s != math.MaxInt64 {
		t.Errorf("Add(MaxInt64-1, 1) = %d, %v", s, ok)
	}
	if _, ok := Add(math.MaxInt64, 1); ok {
		t.Error("Add(MaxInt64, 1) does not overflow")
	}
	if _, ok := Add(5, -1); ok {
		t.Error("Add(5, -1) takes a negative size")
	}
}

// TestSlot: regions follow one another at offsets aligned to SlotAlign,
// and the slot's size is the last one's end, rounded up.
func TestSlot(t *testing.T) {
	var s Slot
	for _, tt := range []struct{ n, offset int64 }{{100, 0}, {256, 256}, {0, 512}, {1, 512}} {
		if got := s.Place(tt.n); got != tt.offset {
			t.Errorf("Place(%d) = %d, want %d", tt.n, got, tt.offset)
		}
	}
	if s.Bytes() != 768 {
		t.Errorf("slot of %d bytes, want 768", s.Bytes())
	}
}
