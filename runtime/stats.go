package runtime

import (
	"sync/atomic"
	"time"
)

// Stats are a loader's running totals since it was created.
type Stats struct {
	Batches    int64         // batches handed to the consumer
	Samples    int64         // samples in those batches
	Bytes      int64         // staged bytes in those batches
	Wait       time.Duration // time the consumer waited for a batch to be ready
	WorkerBusy time.Duration // time workers spent filling samples, summed over workers
	// Copy is, per planned stream, the device time its host-to-device copies
	// took (CUDA backend, counted once a slot's copies are known complete).
	// On the CPU backend there is nothing to copy and every entry is zero.
	Copy []time.Duration
}

type counters struct {
	batches, samples, bytes atomic.Int64
	wait, busy              atomic.Int64   // nanoseconds
	copy                    []atomic.Int64 // nanoseconds, per stream
}

func (c *counters) snapshot() Stats {
	s := Stats{
		Batches:    c.batches.Load(),
		Samples:    c.samples.Load(),
		Bytes:      c.bytes.Load(),
		Wait:       time.Duration(c.wait.Load()),
		WorkerBusy: time.Duration(c.busy.Load()),
		Copy:       make([]time.Duration, len(c.copy)),
	}
	for i := range c.copy {
		s.Copy[i] = time.Duration(c.copy[i].Load())
	}
	return s
}
