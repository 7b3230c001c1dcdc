// Package gen turns a validated schema into a plan (batch memory, the stream
// decision, the key-to-stream map) and the plan into a specialised Go loader.
package gen

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/schema"
)

// Defaults of the stream thresholds, used when neither flags, environment
// nor schema set them.
const (
	DefaultMinBatchSize     = 8
	DefaultMinBatchMemoryMB = 100
	DefaultMaxStreams       = 4
	DefaultAssign           = "round_robin"
	DefaultMaxStagingMB     = 16 << 10 // 16 GiB
)

// Environment variables that override the schema's stream thresholds.
const (
	EnvMinBatchSize     = "MIN_BATCH_SIZE_FOR_STREAMS"
	EnvMinBatchMemoryMB = "MIN_BATCH_MEMORY_FOR_STREAMS_MB"
	EnvMaxStreams       = "MAX_CONCURRENT_CUDA_STREAMS"
)

// Thresholds are the effective settings of the stream decision.
type Thresholds struct {
	MinBatchSize     int
	MinBatchMemoryMB float64
	MaxStreams       int
	Assign           string // "round_robin" or "balanced"
}

// String is the form written into generated files and printed by plan.
func (t Thresholds) String() string {
	return fmt.Sprintf("min_batch_size=%d min_batch_memory_mb=%s max_streams=%d assign=%s",
		t.MinBatchSize, strconv.FormatFloat(t.MinBatchMemoryMB, 'f', -1, 64), t.MaxStreams, t.Assign)
}

// Overrides are settings from outside the schema (flags, environment). A nil
// field leaves the setting to the next layer down.
type Overrides struct {
	Device           *schema.Device
	MinBatchSize     *int
	MinBatchMemoryMB *float64
	MaxStreams       *int
	Assign           *string
	MaxStagingMB     *float64
}

// Over returns o with its unset fields taken from base: o takes precedence.
func (o Overrides) Over(base Overrides) Overrides {
	return Overrides{
		Device:           cmp.Or(o.Device, base.Device),
		MinBatchSize:     cmp.Or(o.MinBatchSize, base.MinBatchSize),
		MinBatchMemoryMB: cmp.Or(o.MinBatchMemoryMB, base.MinBatchMemoryMB),
		MaxStreams:       cmp.Or(o.MaxStreams, base.MaxStreams),
		Assign:           cmp.Or(o.Assign, base.Assign),
		MaxStagingMB:     cmp.Or(o.MaxStagingMB, base.MaxStagingMB),
	}
}

// Settings are the overridable settings, named as the CLI's flags spell
// them, with their help text.
var Settings = []struct{ Name, Help string }{
	{"device", "target device: cpu, cuda or cuda:N"},
	{"min-batch-size", "smallest batch size that uses several streams"},
	{"min-batch-memory-mb", "smallest batch memory (MiB) that uses several streams"},
	{"max-streams", "most CUDA streams to use"},
	{"assign", "key-to-stream assignment: round_robin or balanced"},
	{"max-staging-mb", "largest staging memory, (prefetch+1) x batch, in MiB (default 16384)"},
}

// envSettings maps the environment variables to the settings they set.
var envSettings = []struct{ env, setting string }{
	{EnvMinBatchSize, "min-batch-size"},
	{EnvMinBatchMemoryMB, "min-batch-memory-mb"},
	{EnvMaxStreams, "max-streams"},
}

// Set parses value into the named setting (see Settings). It is the one
// parser of override values, for flags and environment alike.
func (o *Overrides) Set(setting, value string) error {
	switch setting {
	case "device":
		d, err := schema.ParseDevice(value)
		o.Device = &d
		return err
	case "min-batch-size":
		return setNumber(&o.MinBatchSize, value, strconv.Atoi, "an integer")
	case "min-batch-memory-mb":
		return setNumber(&o.MinBatchMemoryMB, value, parseFloat, "a number")
	case "max-streams":
		return setNumber(&o.MaxStreams, value, strconv.Atoi, "an integer")
	case "assign":
		o.Assign = &value
		return nil
	case "max-staging-mb":
		return setNumber(&o.MaxStagingMB, value, parseFloat, "a number")
	}
	return fmt.Errorf("unknown setting %q", setting)
}

func setNumber[T any](dst **T, value string, parse func(string) (T, error), want string) error {
	v, err := parse(strings.TrimSpace(value))
	if err != nil {
		return fmt.Errorf("not %s", want)
	}
	*dst = &v
	return nil
}

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }

// EnvOverrides reads the stream thresholds from the environment through
// getenv (os.Getenv in the CLI). Empty variables are unset.
func EnvOverrides(getenv func(string) string) (Overrides, error) {
	var o Overrides
	for _, e := range envSettings {
		v := strings.TrimSpace(getenv(e.env))
		if v == "" {
			continue
		}
		if err := o.Set(e.setting, v); err != nil {
			return o, fmt.Errorf("environment %s=%q: %w", e.env, v, err)
		}
	}
	if err := o.Check(); err != nil {
		return o, fmt.Errorf("environment: %w", err)
	}
	return o, nil
}

// Check reports an override outside the range the schema allows.
func (o Overrides) Check() error {
	switch {
	case o.MinBatchSize != nil && *o.MinBatchSize < 1:
		return fmt.Errorf("min batch size %d: must be at least 1", *o.MinBatchSize)
	case o.MinBatchMemoryMB != nil && !(*o.MinBatchMemoryMB >= 0 && *o.MinBatchMemoryMB <= math.MaxFloat64):
		return fmt.Errorf("min batch memory %v MB: must be a finite number >= 0", *o.MinBatchMemoryMB)
	case o.MaxStreams != nil && (*o.MaxStreams < 1 || *o.MaxStreams > schema.MaxStreams):
		return fmt.Errorf("max streams %d: must be in [1, %d]", *o.MaxStreams, schema.MaxStreams)
	case o.Assign != nil && *o.Assign != "round_robin" && *o.Assign != "balanced":
		return fmt.Errorf("assign %q: must be round_robin or balanced", *o.Assign)
	case o.MaxStagingMB != nil && !(*o.MaxStagingMB > 0 && *o.MaxStagingMB <= math.MaxFloat64):
		return fmt.Errorf("max staging %v MB: must be a finite number > 0", *o.MaxStagingMB)
	}
	return nil
}

// Plan is a schema with everything decided at generation time.
type Plan struct {
	Dataset    *schema.Dataset
	Thresholds Thresholds
	Runtime    runtime.Plan // what the generated loader embeds
}

// NewPlan computes sizes, the stream decision and the key-to-stream map for
// ds, with o layered over the schema's settings.
func NewPlan(ds *schema.Dataset, o Overrides) (*Plan, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	s := ds.Streams
	t := Thresholds{
		MinBatchSize:     deref(cmp.Or(o.MinBatchSize, s.MinBatchSize), DefaultMinBatchSize),
		MinBatchMemoryMB: deref(cmp.Or(o.MinBatchMemoryMB, s.MinBatchMemoryMB), DefaultMinBatchMemoryMB),
		MaxStreams:       deref(cmp.Or(o.MaxStreams, s.MaxStreams), DefaultMaxStreams),
		Assign:           cmp.Or(deref(o.Assign, ""), s.Assign, DefaultAssign),
	}
	device := deref(o.Device, ds.Device)
	rp := runtime.Plan{
		Name:      ds.Name,
		BatchSize: ds.BatchSize,
		Device:    device.String(),
		Loader:    ds.Loader,
	}
	for _, k := range ds.Keys {
		key, err := layoutKey(ds, k)
		if err != nil {
			return nil, err
		}
		var ok bool
		if rp.BatchBytes, ok = add(rp.BatchBytes, key.BatchBytes); !ok {
			return nil, fmt.Errorf("%s: batch bytes overflow int64 at key %q", ds.File, k.Name)
		}
		rp.Keys = append(rp.Keys, key)
	}
	if rp.BatchBytes > math.MaxInt64/2 {
		return nil, fmt.Errorf("%s: batch of %d bytes is too large to stage", ds.File, rp.BatchBytes)
	}
	rp.BatchMiB = float64(rp.BatchBytes) / (1 << 20)
	rp.Loader.MaxStagingMB = deref(cmp.Or(o.MaxStagingMB, ds.MaxStagingMB), DefaultMaxStagingMB)
	if err := runtime.CheckStaging(ds.Loader.Prefetch, rp.BatchMiB, rp.Loader.MaxStagingMB); err != nil {
		return nil, fmt.Errorf("%s: %w (raise loader.max_staging_mb or -max-staging-mb, or shrink the batch)", ds.File, err)
	}
	rp.UseStreams, rp.Reason = decide(device, ds.BatchSize, rp.BatchMiB, t)
	rp.NumStreams = 1
	if rp.UseStreams {
		rp.NumStreams = min(t.MaxStreams, len(rp.Keys))
	}
	assign(rp.Keys, rp.NumStreams, t.Assign)
	rp.SlotBytes = runtime.Layout(rp.Keys)
	return &Plan{Dataset: ds, Thresholds: t, Runtime: rp}, nil
}

// layoutKey computes the sample shape and sizes of one key:
// sample_bytes = C * prod(S) * e and batch_bytes = batch_size * sample_bytes.
func layoutKey(ds *schema.Dataset, k schema.Key) (runtime.Key, error) {
	shape := slices.Clone(k.Shape)
	if k.ClassAxis {
		shape = append([]int{len(ds.Classes)}, shape...)
	}
	sample, ok := int64(k.DType.Size()), true
	for _, d := range shape {
		if sample, ok = mul(sample, int64(d)); !ok {
			break
		}
	}
	batch, okBatch := mul(sample, int64(ds.BatchSize))
	if !ok || !okBatch {
		return runtime.Key{}, fmt.Errorf("%s:%d:%d: key %q: %d x %v x %d bytes overflows int64",
			ds.File, k.Pos.Line, k.Pos.Col, k.Name, ds.BatchSize, shape, k.DType.Size())
	}
	return runtime.Key{
		Name: k.Name, Role: k.Role, DType: k.DType, Shape: shape,
		SampleBytes: sample, BatchBytes: batch, Priority: k.Priority,
	}, nil
}

// decide applies use_streams = cuda AND batch_size >= min AND batch_mib >= min.
func decide(d schema.Device, batch int, mib float64, t Thresholds) (bool, string) {
	mem := strconv.FormatFloat(t.MinBatchMemoryMB, 'f', -1, 64)
	switch {
	case !d.CUDA:
		return false, "device is cpu"
	case batch < t.MinBatchSize:
		return false, fmt.Sprintf("batch size %d < %d", batch, t.MinBatchSize)
	case mib < t.MinBatchMemoryMB:
		return false, fmt.Sprintf("batch memory %.1f MiB < %s MiB", mib, mem)
	}
	return true, fmt.Sprintf("batch size %d >= %d and batch memory %.1f MiB >= %s MiB", batch, t.MinBatchSize, mib, mem)
}

// assign fixes each key's stream. round_robin: the i-th key goes to
// i % n. balanced: keys by batch bytes descending (ties: file order) each go
// to the stream with the fewest bytes so far (ties: lowest index).
func assign(keys []runtime.Key, n int, strategy string) {
	if strategy != "balanced" {
		for i := range keys {
			keys[i].Stream = i % n
		}
		return
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(keys[b].BatchBytes, keys[a].BatchBytes) })
	load := make([]int64, n)
	for _, i := range order {
		s := 0
		for j := range load {
			if load[j] < load[s] {
				s = j
			}
		}
		keys[i].Stream = s
		load[s] += keys[i].BatchBytes
	}
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func mul(a, b int64) (int64, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return int64(lo), hi == 0 && lo <= math.MaxInt64
}

func add(a, b int64) (int64, bool) {
	s := a + b
	return s, s >= a
}
