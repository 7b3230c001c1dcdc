// Package sizes holds the size arithmetic that the generator fixes in a
// plan and the runtime relies on: overflow-checked products and sums of
// sizes, the layout of a staging slot, and the limits of staging memory.
// The schema, the generator and the runtime all use it, so each rule has
// this one home; runtime.KeyBytes, a key's sample and batch bytes, is
// built on Mul.
package sizes

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
)

// Mul is a*b and whether ok still holds: neither negative, and the
// product within int64. It is the one overflow-checked multiply of sizes:
// plans (runtime.KeyBytes) and .npy files (runtime/npy) both use it.
func Mul(a, b int64, ok bool) (int64, bool) {
	if !ok || a < 0 || b < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return int64(lo), hi == 0 && lo <= math.MaxInt64
}

// Add is a + b for non-negative sizes, with ok false when the sum
// overflows int64: the batch's total over its keys.
func Add(a, b int64) (int64, bool) {
	if s := a + b; s >= a && b >= 0 {
		return s, true
	}
	return 0, false
}

// MaxSlotBytes is the largest staging slot (a batch of every key, at its
// aligned offsets) a loader stages: 64 TiB, far above any real batch, so
// that the size arithmetic of the backends cannot overflow. The generator
// refuses a larger plan, so that no generated loader fails to start for it.
const MaxSlotBytes = 1 << 46

// SlotAlign is the alignment of each key's region inside a staging slot. It
// matches the allocation granularity of CUDA device memory.
const SlotAlign = 256

// A Slot lays out a staging slot: each key's batch region, in the order
// they are placed (the plan's), at an offset aligned to SlotAlign. The
// zero value is an empty slot.
type Slot struct{ bytes int64 }

// Place returns the offset of the next region, of n bytes. Callers have
// checked that the sizes fit in int64.
func (s *Slot) Place(n int64) int64 {
	offset := s.bytes
	s.bytes = (offset + n + SlotAlign - 1) / SlotAlign * SlotAlign
	return offset
}

// Bytes is the slot's size: the end of its last region, rounded up to
// SlotAlign.
func (s *Slot) Bytes() int64 { return s.bytes }

// CheckStaging refuses a staging ring of prefetch+1 slots of batchMiB each
// whose total exceeds limitMB (0: no limit). It is the one check of the
// limit: the generator applies it to the schema's prefetch, the runtime to
// Options.Prefetch.
func CheckStaging(prefetch int, batchMiB, limitMB float64) error {
	slots := prefetch + 1
	if need := float64(slots) * batchMiB; limitMB > 0 && need > limitMB {
		return fmt.Errorf("staging needs %d slots (prefetch %d + 1) x %.1f MiB = %.1f MiB, over the limit of %s MiB",
			slots, prefetch, batchMiB, need, strconv.FormatFloat(limitMB, 'f', -1, 64))
	}
	return nil
}
