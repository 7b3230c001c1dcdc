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
	Wait       time.Duration // time the consumer was blocked waiting for a batch, not counting the samples it filled itself
	WorkerBusy time.Duration // time spent filling samples, summed over the workers and the consumer's help
	// Copy is, per planned stream, the device time of its completed
	// host-to-device copies (CUDA backend), measured with events around
	// each batch's copies on the stream: it includes any time they queued
	// for a copy engine, so streams that share one overlap. On the CPU
	// backend there is nothing to copy and every entry is zero.
	Copy []time.Duration
	// HostStall is the time the loader blocked the host on the device:
	// waiting for a slot's copies before workers refill it. Near zero when
	// copies keep up; it grows when the device is the bottleneck.
	HostStall time.Duration
}

type counters struct {
	batches, samples, bytes atomic.Int64
	wait, busy, stall       atomic.Int64   // nanoseconds
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
		HostStall:  time.Duration(c.stall.Load()),
	}
	for i := range c.copy {
		s.Copy[i] = time.Duration(c.copy[i].Load())
	}
	return s
}
