// Package gen turns a validated schema into a plan (batch memory, the stream
// decision, the key-to-stream map) and the plan into a specialised Go loader.
package gen

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/loadergen/loadergen/internal/sizes"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/schema"
)

// Plan is a schema with everything decided at generation time.
type Plan struct {
	// Dataset is the schema with the overrides applied: its settings
	// (schema.Settings) are those the plan was made with.
	Dataset *schema.Dataset
	// From says where each setting came from, by name: "flag
	// -max-streams", "environment MAX_CONCURRENT_CUDA_STREAMS", "schema
	// d.yaml:20:16" or "default".
	From    map[string]string
	Runtime runtime.Plan // what the generated loader embeds
}

// NewPlan computes sizes, the stream decision and the key-to-stream map for
// ds, with o layered over the schema's settings. It checks every setting
// with the schema's rules, its errors naming the flag or variable. ds
// comes from schema.Parse, which rejects bad settings and key sizes that
// overflow; a hand-built one with either gets an error saying so.
func NewPlan(ds *schema.Dataset, o Overrides) (*Plan, error) {
	ds, from, err := applyOverrides(ds, o)
	if err != nil {
		return nil, err
	}
	rp := runtime.Plan{
		Name:      ds.Name,
		BatchSize: ds.BatchSize,
		Device:    ds.Device.String(),
		Loader:    ds.Loader,
	}
	if ds.Crops != nil {
		rp.Loader.Locality = runtime.Locality{Window: ds.Crops.Locality}
		rp.Loader.OnError = ds.Crops.OnError
	}
	if ds.Records != nil {
		rp.Loader.OnError = ds.Records.OnError
	}
	var data []runtime.Key // the schema's keys; rp.Keys adds their lengths
	for _, k := range ds.Keys {
		key, ok := layoutKey(ds, k)
		if ok {
			rp.BatchBytes, ok = sizes.Add(rp.BatchBytes, key.BatchBytes)
		}
		if ok && k.Ragged {
			var lk runtime.Key
			if lk, ok = lengthsKey(key, ds.BatchSize); ok {
				rp.BatchBytes, ok = sizes.Add(rp.BatchBytes, lk.BatchBytes)
			}
		}
		if !ok {
			return nil, fmt.Errorf("key %q: batch bytes overflow int64, which schema.Parse rejects: the dataset did not come through it", k.Name)
		}
		data = append(data, key)
	}
	if rp.BatchBytes > sizes.MaxSlotBytes {
		return nil, tooLarge(ds, rp.BatchBytes)
	}
	rp.BatchMiB = float64(rp.BatchBytes) / (1 << 20)
	if err := sizes.CheckStaging(max(ds.Loader.Prefetch, 1), rp.BatchMiB, ds.Loader.MaxStagingMB); err != nil {
		auto := ""
		if ds.Loader.Prefetch == runtime.PrefetchAuto {
			auto = "prefetch auto, at its least: "
		}
		return nil, fmt.Errorf("%s: %s%w (raise %s or -%s, or shrink the batch)",
			stagingPos(ds, o), auto, err, schema.PathMaxStagingMB, schema.FlagName(schema.PathMaxStagingMB))
	}
	st := ds.Streams
	rp.UseStreams, rp.Reason = decide(ds.Device, ds.BatchSize, rp.BatchMiB, st)
	if ds.Device.CUDA {
		rp.Streams = runtime.StreamSettings{MinBatchSize: st.MinBatchSize, MinBatchMemoryMB: st.MinBatchMemoryMB, MaxStreams: st.MaxStreams}
	}
	rp.NumStreams = 1
	if rp.UseStreams {
		rp.NumStreams = min(st.MaxStreams, len(data))
	}
	assign(data, rp.NumStreams, st.Assign)
	for _, key := range data {
		rp.Keys = append(rp.Keys, key)
		if key.Ragged {
			lk, _ := lengthsKey(key, ds.BatchSize) // fits: checked above
			rp.Keys = append(rp.Keys, lk)
		}
	}
	var slot sizes.Slot
	for i := range rp.Keys {
		rp.Keys[i].Offset = slot.Place(rp.Keys[i].BatchBytes)
	}
	if rp.SlotBytes = slot.Bytes(); rp.SlotBytes > sizes.MaxSlotBytes {
		return nil, tooLarge(ds, rp.SlotBytes)
	}
	return &Plan{Dataset: ds, From: from, Runtime: rp}, nil
}

// tooLarge is the error of a plan whose staging slot of bytes (the batch,
// its keys at aligned offsets) exceeds what a loader can stage.
func tooLarge(ds *schema.Dataset, bytes int64) error {
	return fmt.Errorf("%s: a batch of %d bytes is more than a loader stages at once (%d bytes, 64 TiB): shrink the batch or its keys",
		ds.Where(schema.PathBatchSize), bytes, int64(sizes.MaxSlotBytes))
}

// layoutKey computes the sample shape and sizes of one key:
// sample_bytes = C * prod(S) * e and batch_bytes = batch_size * sample_bytes;
// ok is false when they overflow int64, which schema.Parse rejects.
func layoutKey(ds *schema.Dataset, k schema.Key) (key runtime.Key, ok bool) {
	shape := ds.SampleShape(k)
	sample, batch, ok := runtime.KeyBytes(k.DType, shape, ds.BatchSize)
	return runtime.Key{
		Name: k.Name, Role: k.Role, DType: k.DType, Shape: shape,
		SampleBytes: sample, BatchBytes: batch, Priority: k.Priority, Ragged: k.Ragged, Overflow: k.Overflow,
	}, ok
}

// lengthsKey is the key that holds the row counts of the ragged key k, one
// int32 per sample: staged after k, on k's stream at k's priority, so that
// its copy goes to the device with k's. ok is false when its batch bytes
// overflow int64.
func lengthsKey(k runtime.Key, batchSize int) (key runtime.Key, ok bool) {
	sample, batch, ok := runtime.KeyBytes(runtime.LengthsDType, nil, batchSize)
	return runtime.Key{
		Name: runtime.LengthsKey(k.Name), Role: k.Role, DType: runtime.LengthsDType, Shape: []int{},
		SampleBytes: sample, BatchBytes: batch, Stream: k.Stream, Priority: k.Priority, LengthsOf: k.Name,
	}, ok
}

// stagingPos is where a staging-limit error points: at the limit when the
// schema sets it and no override replaces it, else at the prefetch when the
// schema sets it, else at the batch size.
func stagingPos(ds *schema.Dataset, o Overrides) string {
	_, overridden := o.set[schema.PathMaxStagingMB]
	if _, ok := ds.At[schema.PathMaxStagingMB]; ok && !overridden {
		return ds.Where(schema.PathMaxStagingMB)
	}
	if _, ok := ds.At[schema.PathPrefetch]; ok {
		return ds.Where(schema.PathPrefetch)
	}
	return ds.Where(schema.PathBatchSize)
}

// decide applies use_streams = cuda AND batch_size >= min AND batch_mib >=
// min AND max_streams > 1.
func decide(d schema.Device, batch int, mib float64, s schema.Streams) (bool, string) {
	mem := strconv.FormatFloat(s.MinBatchMemoryMB, 'f', -1, 64)
	switch {
	case !d.CUDA:
		return false, "device is cpu"
	case batch < s.MinBatchSize:
		return false, fmt.Sprintf("batch size %d < %d", batch, s.MinBatchSize)
	case mib < s.MinBatchMemoryMB:
		return false, fmt.Sprintf("batch memory %.1f MiB < %s MiB", mib, mem)
	case s.MaxStreams < 2:
		return false, fmt.Sprintf("batch size %d >= %d and batch memory %.1f MiB >= %s MiB, but max_streams is 1", batch, s.MinBatchSize, mib, mem)
	}
	return true, fmt.Sprintf("batch size %d >= %d and batch memory %.1f MiB >= %s MiB", batch, s.MinBatchSize, mib, mem)
}

// assign fixes each key's stream. round_robin: the i-th key goes to
// i % n. balanced: keys by batch bytes descending (ties: file order) each go
// to the stream with the fewest bytes so far (ties: lowest index).
func assign(keys []runtime.Key, n int, strategy schema.Assign) {
	if strategy == schema.RoundRobin {
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
