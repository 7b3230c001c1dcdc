package runtime

import (
	"fmt"
	"time"
)

// Stats are a loader's running totals since it was created.
type Stats struct {
	Batches int64 // batches handed to the consumer
	Samples int64 // samples in those batches
	Bytes   int64 // staged bytes in those batches
	// InLoader is the time the consumer's loop spent inside the loader's
	// iterator: from asking for a batch (the loop's next iteration, or the
	// epoch's start) to getting it. It counts the samples the consumer
	// filled itself, its waits for the workers and the dispatch of later
	// batches: the whole of what the loop would save with a faster loader.
	InLoader time.Duration
	// SelfFill is the part of InLoader the consumer spent filling samples
	// itself, rather than waiting: rather than sleep while a worker fills
	// its next batch, the consumer fills that batch's unclaimed samples.
	SelfFill   time.Duration
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
	// CopyTimesLost counts the copy times, one per batch and stream, that
	// the CUDA backend could not measure and left out of Copy: the copies
	// of a failed graph launch, or events the driver failed to time. The
	// copies themselves completed; only the statistics are short.
	CopyTimesLost int64
	// Rows and Spanned measure the padding of ragged keys, summed over
	// them and the batches handed out: Rows counts the samples' own rows,
	// Spanned each batch's samples times its longest sample's rows, the
	// rows a model computes on when it cuts the batch at its longest
	// sample (the staged batch always holds the key's maximum). Both are 0
	// without ragged keys.
	Rows, Spanned int64
	// Truncated counts the samples of ragged keys with overflow: truncate
	// that had more rows than their key's maximum and were cut to it, in
	// the batches handed out: once per key cut, and again each epoch.
	Truncated int64
	// Skipped counts the bad samples that on_error: skip replaced by the
	// next that reads, in the batches handed out: again each epoch. The
	// first few are logged with their reason.
	Skipped int64
	// Prefetch is the batches the ring stages ahead of the one in use, at
	// the time of the snapshot: fixed by the schema or Options, or, with
	// prefetch auto, the depth the loader has grown it to so far.
	Prefetch int
	// MissingChunks counts the chunks that a volume source's reads found
	// not stored in their zarr arrays (a file absent, or marked empty in
	// its shard's index), once per read whose box touches one: under a
	// key's missing: fill they read as the array's fill value, under
	// missing: error the read failed. 0 for other sources.
	MissingChunks int64
	// Kept is the staging slots that kept batches hold now (Batch.Keep):
	// the loop has moved on from them, and the ring refills them only when
	// they are released. The Python bridge keeps a batch while a tensor
	// taken from it lives.
	Kept int
}

// MissingCounter is a source whose reads count the chunks they found not
// stored (Stats.MissingChunks): generated volume sources are. A loader
// over one reports the count.
type MissingCounter interface {
	MissingChunks() int64
}

// Padding is the fraction of Spanned rows that are padding: 0 when every
// batch's samples have equal lengths (or there are no ragged keys). Length
// bucketing (loader.bucket) lowers it.
func (s Stats) Padding() float64 {
	if s.Spanned == 0 {
		return 0
	}
	return float64(s.Spanned-s.Rows) / float64(s.Spanned)
}

// Rates are a loader's throughput over an interval: an epoch's, with the
// Stats taken when it started and the time it took.
type Rates struct {
	Elapsed          time.Duration
	Batches, Samples int64
	Bytes            int64 // staged
	SamplesPerSecond float64
	BytesPerSecond   float64
	// InLoader is the share of Elapsed the loop spent inside the loader's
	// iterator (Stats.InLoader): near 0 when the loader keeps ahead of the
	// loop, near 1 when the loop is loader-bound.
	InLoader float64
	// SelfFill is the share of Elapsed the loop spent filling samples
	// itself (Stats.SelfFill), a part of InLoader. When the loop is
	// loader-bound and most of InLoader is SelfFill, the workers are too
	// few for the samples' cost.
	SelfFill float64
	// Padding is Stats.Padding over the interval: of the rows up to each
	// batch's longest sample of a ragged key, the fraction that is padding.
	Padding float64
	// Truncated is Stats.Truncated over the interval: samples cut to their
	// ragged key's maximum rows (overflow: truncate).
	Truncated int64
	// MissingChunks is Stats.MissingChunks over the interval.
	MissingChunks int64
	// Skipped is Stats.Skipped over the interval: bad samples replaced
	// (on_error: skip).
	Skipped int64
}

// Since returns the rates of s's counts since before, elapsed apart:
//
//	before, t0 := l.Stats(), time.Now()
//	for b, err := range l.Epoch(ctx, epoch) { ... }
//	fmt.Println(l.Stats().Since(before, time.Since(t0)))
//
// Options.LogEpochs logs the same at the end of every epoch.
func (s Stats) Since(before Stats, elapsed time.Duration) Rates {
	r := Rates{
		Elapsed:       elapsed,
		Batches:       s.Batches - before.Batches,
		Samples:       s.Samples - before.Samples,
		Bytes:         s.Bytes - before.Bytes,
		Padding:       Stats{Rows: s.Rows - before.Rows, Spanned: s.Spanned - before.Spanned}.Padding(),
		Truncated:     s.Truncated - before.Truncated,
		MissingChunks: s.MissingChunks - before.MissingChunks,
		Skipped:       s.Skipped - before.Skipped,
	}
	if sec := elapsed.Seconds(); sec > 0 {
		r.SamplesPerSecond = float64(r.Samples) / sec
		r.BytesPerSecond = float64(r.Bytes) / sec
		r.InLoader = min(1, (s.InLoader-before.InLoader).Seconds()/sec)
		r.SelfFill = min(1, (s.SelfFill-before.SelfFill).Seconds()/sec)
	}
	return r
}

// String reads "32 batches, 256 samples, 160.0 MiB in 46ms: 5559 samples/s,
// 3.64 GB/s; the loop spent 80% of its time in the loader (30% filling
// samples itself)", and with ragged keys "; padding 12% of the rows";
// when some were cut (overflow: truncate), "; 3 samples truncated to their
// key's maximum rows"; when reads found chunks not stored "; 7 missing
// chunks read (see Stats.MissingChunks)"; and when on_error: skip replaced
// bad samples "; 2 bad samples skipped (on_error: skip; the log names the
// first)".
func (r Rates) String() string {
	s := fmt.Sprintf("%d batches, %d samples, %.1f MiB in %v: %.0f samples/s, %.2f GB/s; the loop spent %.0f%% of its time in the loader (%.0f%% filling samples itself)",
		r.Batches, r.Samples, float64(r.Bytes)/(1<<20), r.Elapsed.Round(time.Millisecond),
		r.SamplesPerSecond, r.BytesPerSecond/1e9, 100*r.InLoader, 100*r.SelfFill)
	if r.Padding > 0 {
		s += fmt.Sprintf("; padding %.0f%% of the rows", 100*r.Padding)
	}
	if r.Truncated > 0 {
		s += fmt.Sprintf("; %d samples truncated to their key's maximum rows", r.Truncated)
	}
	if r.MissingChunks > 0 {
		s += fmt.Sprintf("; %d missing chunks read (see Stats.MissingChunks)", r.MissingChunks)
	}
	if r.Skipped > 0 {
		s += fmt.Sprintf("; %d bad samples skipped (on_error: skip; the log names the first)", r.Skipped)
	}
	return s
}
