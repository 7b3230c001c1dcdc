package loaderimpl

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/loadergen/loadergen/runtime"
)

// keeps is the bookkeeping of batches kept past the loop's advance
// (runtime.Batch.Keep): a slot returns to the ring only when the loop has moved on
// from its batch and every Keep of it has been released. Keep and Release
// may come from any goroutine (the Python bridge releases from DLPack
// deleters), so every field is guarded by mu.
type keeps struct {
	mu sync.Mutex
	// handed[s] is true while the loop holds slot s's batch: set by the
	// consumer when it hands the batch out, cleared when the loop advances.
	handed []bool
	// count[s] counts the Keeps of slot s's batch not yet released.
	count []int
	// kept counts the slots that the loop has moved on from but that Keeps
	// still hold (runtime.Stats.Kept).
	kept int
	// returned holds the slots whose last Keep was released after the loop
	// moved on, until the consumer takes them back into its free list.
	returned []int
	// back has a value whenever a slot was returned since the consumer last
	// looked: Release sends without blocking, the consumer waits on it.
	back chan struct{}
}

func newKeeps(slots int) keeps {
	return keeps{handed: make([]bool, slots), count: make([]int, slots), returned: make([]int, 0, slots), back: make(chan struct{}, 1)}
}

// batchSlots is the engine as its batches' staged.Slots: the ring that
// runtime.Batch.Keep and Release reach.
type batchSlots Engine

// Keep is runtime.Batch.Keep of the batch numbered number in slot s,
// which says what it does.
func (h *batchSlots) Keep(s, number int) {
	k := &h.keeps
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.handed[s] && k.count[s] == 0 {
		panic(fmt.Sprintf("loadergen: Keep of batch %d (slot %d), which is neither handed out nor kept", number, s))
	}
	k.count[s]++
}

// Release is runtime.Batch.Release of the batch numbered number in slot
// s, which says what it does.
func (h *batchSlots) Release(s, number int) {
	e := (*Engine)(h)
	k := &e.keeps
	k.mu.Lock()
	if k.count[s] == 0 {
		k.mu.Unlock()
		panic(fmt.Sprintf("loadergen: Release of batch %d (slot %d) without a Keep", number, s))
	}
	k.count[s]--
	returned := k.count[s] == 0 && !k.handed[s]
	if returned {
		k.kept--
		k.returned = append(k.returned, s)
		select {
		case k.back <- struct{}{}:
		default:
		}
	}
	k.mu.Unlock()
	if returned {
		if err := e.release(); err != nil {
			e.set.logger.Error("loadergen: releasing staging memory", "loader", e.plan.Name, "err", err)
		}
	}
}

// handOut records that the loop holds slot s's batch.
func (k *keeps) handOut(s int) {
	k.mu.Lock()
	k.handed[s] = true
	k.mu.Unlock()
}

// advance records that the loop moved on from slot s's batch, and reports
// whether the slot is free: no Keep holds it.
func (k *keeps) advance(s int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.handed[s] = false
	if k.count[s] > 0 {
		k.kept++
		return false
	}
	return true
}

// takeBack appends to free the slots returned since the last call.
func (k *keeps) takeBack(free []int) []int {
	k.mu.Lock()
	defer k.mu.Unlock()
	free = append(free, k.returned...)
	k.returned = k.returned[:0]
	return free
}

// unkept appends to free the slots below slots that no Keep holds, highest
// first, for an epoch's start; those returned meanwhile are among them.
func (k *keeps) unkept(free []int, slots int) []int {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.returned = k.returned[:0]
	for s := slots - 1; s >= 0; s-- {
		if k.count[s] == 0 {
			free = append(free, s)
		}
	}
	return free
}

// keptNow is runtime.Stats.Kept: slots the loop moved on from that Keeps hold.
func (k *keeps) keptNow() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.kept
}

// awaitBack waits until a kept slot is returned and appends it to free;
// ctx or done (Close) end the wait with their error, expired (nil: never)
// with ErrNotYet.
func (k *keeps) awaitBack(ctx context.Context, done <-chan struct{}, expired <-chan time.Time, free []int) ([]int, error) {
	for {
		if free = k.takeBack(free); len(free) > 0 {
			return free, nil
		}
		select {
		case <-k.back:
		case <-ctx.Done():
			return free, ctx.Err()
		case <-done:
			return free, runtime.ErrClosed
		case <-expired:
			return free, runtime.ErrNotYet
		}
	}
}
