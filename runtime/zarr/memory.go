package zarr

import (
	"fmt"
	"sync"

	"github.com/loadergen/loadergen/internal/envlimit"
)

// DefaultDecodeMiB bounds the memory that the chunks being decoded at one
// time take, across the process, unless DecodeEnv or SetDecodeMemory says
// otherwise: 1 GiB, hundreds of the MiB-sized chunks of EM volumes. Each
// load of a chunk takes its decoded size (and its decoder's scratch, see
// chain.scratch) before allocating anything, and waits while others hold
// the rest; a chunk that needs more than the whole bound is refused. A
// 2 GiB chunk (what the metadata may declare) stored in a 65 KB zstd file
// otherwise took 2 GiB per worker reading it at once.
const DefaultDecodeMiB = 1024

// DecodeEnv names the environment variable that sets the decode memory's
// bound, in MiB per process.
const DecodeEnv = "LOADERGEN_ZARR_DECODE_MB"

// decodeMiB is the bound of decode memory, in MiB: up to 2^30.
var decodeMiB = envlimit.New(DecodeEnv, "MiB", DefaultDecodeMiB, 1<<30)

// SetDecodeMemory sets the bound of the memory that chunks being decoded
// take at one time, in MiB for the whole process, over DecodeEnv, for the
// loads that start after it; mib < 1 undoes it.
func SetDecodeMemory(mib int) { decodeMiB.Set(int64(mib)) }

// decoding is the process's decode memory: every Array's loads take from
// it.
var decoding budget

// budget counts the bytes that decodes hold against the bound, and queues
// the decodes that wait for bytes, first come first served.
type budget struct {
	// mu guards used and queue: acquire and release, from any goroutine
	// that loads a chunk, take it; a waiter's bytes are added to used by
	// the release that wakes it, before it wakes.
	mu    sync.Mutex
	used  int64
	queue []*waiter
}

// waiter is an acquire waiting for n bytes; ready closes once they are its.
type waiter struct {
	n     int64
	ready chan struct{}
}

// limit is the bound in bytes.
func (b *budget) limit() (int64, error) {
	mib, err := decodeMiB.Get()
	return mib << 20, err
}

// acquire takes n bytes, waiting while others hold the rest. n past the
// whole bound is refused, as is every acquire under a bad DecodeEnv.
func (b *budget) acquire(n int64) error {
	if n == 0 {
		return nil
	}
	limit, err := b.limit()
	if err != nil {
		return err
	}
	if n > limit {
		return fmt.Errorf("decoding it takes %d bytes, more than the %d that the process's decodes may hold at once (raise %s, in MiB, or call zarr.SetDecodeMemory)", n, limit, DecodeEnv)
	}
	b.mu.Lock()
	if len(b.queue) == 0 && b.used+n <= limit {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	w := &waiter{n: n, ready: make(chan struct{})}
	b.queue = append(b.queue, w)
	b.mu.Unlock()
	<-w.ready
	return nil
}

// release gives back n bytes and wakes the waiters they make room for, in
// order; the first waiter is woken when nothing is held, whatever it asks
// (the bound may have been lowered since it came).
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	limit, _ := b.limit() // acquire read it without an error
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	for len(b.queue) > 0 && (b.used == 0 || b.used+b.queue[0].n <= limit) {
		w := b.queue[0]
		b.queue[0] = nil
		b.queue = b.queue[1:]
		b.used += w.n
		close(w.ready)
	}
}
