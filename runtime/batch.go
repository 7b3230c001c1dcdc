package runtime

import "github.com/loadergen/loadergen/runtime/internal/staged"

// Batch is one staged batch, as a generated batch's Staged method and a
// Cursor hand it out. It lives in its staging slot and is valid until the
// loop advances, unless kept (Keep).
type Batch struct {
	Slot    int      // staging slot that holds it
	Number  int      // batch number within the epoch
	Indices []int    // dataset indices of the samples, in batch order
	Tensors []Tensor // one per key, in plan order

	slots staged.Slots  // the engine's ring that holds the slot: Keep and Release
	gpu   staged.Device // the CUDA backend's side of the slot; nil on the CPU
}

// Keep holds the batch's staging slot past the loop's advance: the ring
// does not refill it until Release has been called once for each Keep.
// Call it while the batch is handed out (in the loop's body) or still
// kept. The loop goes on with the other slots, and waits for a kept one
// only when every slot is kept; Stats.Kept counts them. This is how the
// Python bridge lets tensors outlive the loop's step without a copy. On
// the CUDA backend, mark the batch Done on the streams that read its
// device buffers before the last Release.
func (b *Batch) Keep() { b.slots.Keep(b.Slot, b.Number) }

// Release ends one Keep of the batch. The last one gives the slot back to
// the ring, once the loop has moved on from it; when the loader was closed
// meanwhile, it releases the staging memory.
func (b *Batch) Release() { b.slots.Release(b.Slot, b.Number) }

func init() {
	staged.NewBatch = func(slot int, s staged.Slots, d staged.Device) any {
		return &Batch{Slot: slot, slots: s, gpu: d}
	}
	staged.NewCursor = func(w staged.Walk) any { return &Cursor{walk: w} }
}
