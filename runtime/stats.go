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
}

type counters struct {
	batches, samples, bytes atomic.Int64
	wait, busy              atomic.Int64 // nanoseconds
}

func (c *counters) snapshot() Stats {
	return Stats{
		Batches:    c.batches.Load(),
		Samples:    c.samples.Load(),
		Bytes:      c.bytes.Load(),
		Wait:       time.Duration(c.wait.Load()),
		WorkerBusy: time.Duration(c.busy.Load()),
	}
}
