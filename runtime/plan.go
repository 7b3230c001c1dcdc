package runtime

import (
	"fmt"
	"slices"

	"github.com/loadergen/loadergen/internal/sizes"
)

// Role says whether a key is a model input or a training target.
type Role uint8

// The two roles of a key.
const (
	Input Role = iota + 1
	Target
)

// String returns "input" or "target".
func (r Role) String() string {
	switch r {
	case Input:
		return "input"
	case Target:
		return "target"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// MarshalText writes the role's name.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// Priority is the CUDA stream priority a key's copies run at.
type Priority uint8

// Stream priorities. The zero value is Normal.
const (
	Normal Priority = iota
	High
	Low
)

// String returns "high", "normal" or "low".
func (p Priority) String() string {
	switch p {
	case Normal:
		return "normal"
	case High:
		return "high"
	case Low:
		return "low"
	}
	return fmt.Sprintf("Priority(%d)", uint8(p))
}

// MarshalText writes the priority's name.
func (p Priority) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// Key is the fixed layout of one key of a batch.
type Key struct {
	Name        string   `json:"name"`         // key as written in the schema
	Role        Role     `json:"role"`         // input or target
	DType       DType    `json:"dtype"`        // element type
	Shape       []int    `json:"shape"`        // one sample: [(C,) S...]
	SampleBytes int64    `json:"sample_bytes"` // bytes of one sample
	BatchBytes  int64    `json:"batch_bytes"`  // bytes of a full batch of this key
	Offset      int64    `json:"-"`            // start of this key in a staging slot
	Stream      int      `json:"stream"`       // CUDA stream that carries the key
	Priority    Priority `json:"priority"`     // priority of that stream's copies
	// Ragged says that the first sample axis is a maximum: a sample holds
	// up to Shape[0] rows, and the rows after its own are padding.
	Ragged bool `json:"ragged,omitempty"`
	// Overflow is what a ragged key does with a sample of more than
	// Shape[0] rows; OverflowError for every other key.
	Overflow Overflow `json:"overflow,omitempty"`
	// LengthsOf names the ragged key whose row counts this key holds, one
	// int32 per sample; "" for a key of the schema.
	LengthsOf string `json:"lengths_of,omitempty"`
}

// SampleElems is the number of elements in one sample of the key.
func (k Key) SampleElems() int { return int(k.SampleBytes) / k.DType.Size() }

// LoaderDefaults are the schema's loader settings; Options override the
// prefetch and workers at run time.
type LoaderDefaults struct {
	Prefetch     int     `json:"prefetch"`        // batches staged ahead of the one in use; PrefetchAuto: chosen at run time
	Workers      int     `json:"workers"`         // 0 means GOMAXPROCS
	Shuffle      bool    `json:"shuffle"`         // shuffle each epoch
	Seed         uint64  `json:"seed"`            // seeds the shuffle and each sample's Rand
	DropLast     bool    `json:"drop_last"`       // drop the short last batch and the shard remainder
	MaxStagingMB float64 `json:"max_staging_mb"`  // limit of (prefetch+1) x batch MiB; 0: none
	Bucket       Bucket  `json:"bucket,omitzero"` // length bucketing; the zero value is off
	// Locality orders a volume source's crops for reuse of the chunks they
	// read (crops.locality); the zero value is off.
	Locality Locality `json:"locality,omitzero"`
	// OnError is what a bad sample does (the source's on_error:); the
	// zero value ends the epoch.
	OnError OnError `json:"on_error,omitzero"`
}

// PrefetchAuto is LoaderDefaults.Prefetch of a schema that says
// "prefetch: auto" or nothing: the loader picks the ring's starting depth
// from its workers and batch size, and deepens the ring while it runs
// when workers idle for want of a free slot.
const PrefetchAuto = 0

// Bucket is length bucketing: within each window of Window batches of an
// epoch's order, samples are grouped by their row count in the ragged key
// Key, so that a batch holds similar lengths and little padding.
type Bucket struct {
	Key    string `json:"key,omitempty"`    // the ragged key; "" turns bucketing off
	Window int    `json:"window,omitempty"` // batches per window (CheckBucketWindow) when Key is set
}

// CheckBucketWindow says why w cannot be a Bucket's Window (the predicate
// of "loader.bucket.window ..."), or returns nil: a window is at least one
// batch. The schema reports it at loader.bucket.window, the engine for a
// plan built by hand.
func CheckBucketWindow(w int) error {
	if w < 1 {
		return fmt.Errorf("must be >= 1, got %d", w)
	}
	return nil
}

// Plan is everything fixed at generation time: memory, the stream decision
// and the key-to-stream map. Generated loaders embed theirs as a value.
type Plan struct {
	Name       string         `json:"name"`
	BatchSize  int            `json:"batch_size"`
	Device     string         `json:"device"`
	BatchBytes int64          `json:"batch_bytes"`
	BatchMiB   float64        `json:"batch_mib"`
	UseStreams bool           `json:"use_streams"`
	NumStreams int            `json:"num_streams"`
	Reason     string         `json:"reason"`
	Keys       []Key          `json:"keys"`
	SlotBytes  int64          `json:"-"` // one staging slot: keys at aligned offsets
	Loader     LoaderDefaults `json:"-"`
	// Streams are the thresholds the stream decision was made with, for a
	// plan whose device is cuda; zero for cpu, where they decide nothing.
	Streams StreamSettings `json:"-"`
}

// StreamSettings are the settings of the stream decision, as a loader was
// generated with them.
type StreamSettings struct {
	MinBatchSize     int
	MinBatchMemoryMB float64
	MaxStreams       int
}

// The environment variables that set the stream thresholds when a loader
// is generated (go generate), under the flags and over the schema. A
// running loader does not read them: it warns when one is set, as the
// plan was fixed when the loader was generated.
const (
	EnvMinBatchSize     = "MIN_BATCH_SIZE_FOR_STREAMS"
	EnvMinBatchMemoryMB = "MIN_BATCH_MEMORY_FOR_STREAMS_MB"
	EnvMaxStreams       = "MAX_CONCURRENT_CUDA_STREAMS"
)

// KeyBytes is the size arithmetic of a key of element type d whose sample
// has shape [(C,) S...]: sample = prod(shape) * d.Size() (a scalar's empty
// shape has prod 1) and batch = batchSize * sample, a Key's SampleBytes and
// BatchBytes. ok is false when either overflows int64 or a dimension or the
// batch size is negative. The sample of a Tensor's DType and Shape is the
// length of its Data. It is the one home of the rule: the schema checks it
// at each key's position, the generator lays keys out with it.
func KeyBytes(d DType, shape []int, batchSize int) (sample, batch int64, ok bool) {
	sample, ok = int64(d.Size()), true
	for _, n := range shape {
		sample, ok = sizes.Mul(sample, int64(n), ok)
	}
	batch, ok = sizes.Mul(sample, int64(batchSize), ok)
	return sample, batch, ok
}

// Clone returns a deep copy, so callers cannot change a loader's plan.
func (p Plan) Clone() Plan {
	p.Keys = slices.Clone(p.Keys)
	for i := range p.Keys {
		p.Keys[i].Shape = slices.Clone(p.Keys[i].Shape)
	}
	return p
}
