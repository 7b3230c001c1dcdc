package main

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"math/rand/v2"
	"os"
	"time"

	"github.com/loadergen/loadergen/examples/peer/turned"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/loaderimpl"
)

// The rotated case of make peer (examples/peer/turned): turned-crops
// writes what torch_turned.py reads, turned-epoch times one cold epoch of
// one of its three loaders over the store.

// turnedCrops writes epoch 0's crops of the turned loader over dir (as
// runtime.Crop JSON, by index, each with its angles and matrix) and the
// bytes its source reads for the first k of them: raw, then labels, both
// float32.
func turnedCrops(dir, jsonFile, binFile string, k int) error {
	src, err := turned.OpenTurnedVolumes([]turned.TurnedVolume{{Raw: dir, Labels: dir}})
	if err != nil {
		return err
	}
	defer src.Close()
	byIndex := make([]int, src.Len())
	for i := range byIndex {
		byIndex[i] = i
	}
	if err := writeCrops(jsonFile, byIndex, src.Crop); err != nil {
		return err
	}
	l, err := turned.NewTurnedLoader(src, runtime.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	p := l.Plan()
	l.Close()
	var out []byte
	for i := range min(k, src.Len()) {
		s := turned.TurnedSample{Index: i, Epoch: 0, Raw: make([]float32, p.Keys[0].SampleElems()), Labels: make([]float32, p.Keys[1].SampleElems())}
		var pcg rand.PCG
		loaderimpl.SeedSample(&pcg, loaderimpl.EpochSeed(p.Loader.Seed, 0), i)
		s.Rand = rand.New(&pcg)
		if err := src.Read(&s); err != nil {
			return err
		}
		out = append(append(out, runtime.Bytes(s.Raw)...), runtime.Bytes(s.Labels)...)
	}
	return os.WriteFile(binFile, out, 0o644)
}

// turnedEpoch runs epoch 0 of the named loader of examples/peer/turned
// (turned, flat or augmented) over dir with GOMAXPROCS workers and prints
// its crops per second, from opening the source to the last batch.
func turnedEpoch(dir, name string) error {
	start := time.Now()
	var n int
	var err error
	switch name {
	case "turned":
		src, oerr := turned.OpenTurnedVolumes([]turned.TurnedVolume{{Raw: dir, Labels: dir}})
		if oerr != nil {
			return oerr
		}
		defer src.Close()
		n, err = epochCount[turned.TurnedSource, *turned.TurnedLoader, *turned.TurnedBatch](src, turned.NewTurnedLoader)
	case "flat":
		src, oerr := turned.OpenFlatVolumes([]turned.FlatVolume{{Raw: dir, Labels: dir}})
		if oerr != nil {
			return oerr
		}
		defer src.Close()
		n, err = epochCount[turned.FlatSource, *turned.FlatLoader, *turned.FlatBatch](src, turned.NewFlatLoader)
	case "augmented":
		src, oerr := turned.OpenAugmentedVolumes([]turned.AugmentedVolume{{Raw: dir, Labels: dir}})
		if oerr != nil {
			return oerr
		}
		defer src.Close()
		n, err = epochCount[turned.AugmentedSource, *turned.AugmentedLoader, *turned.AugmentedBatch](src, turned.NewAugmentedLoader)
	default:
		return fmt.Errorf("turned-epoch: loader %q (want turned, flat or augmented)", name)
	}
	if err != nil {
		return err
	}
	fmt.Printf("%.1f\n", float64(n)/time.Since(start).Seconds())
	return nil
}

// epochCount runs epoch 0 of a loader over src, its logger discarded, and
// returns the samples it yielded.
func epochCount[S any, L interface {
	Epoch(context.Context, int) iter.Seq2[B, error]
	Close() error
}, B interface{ Staged() *runtime.Batch }](src S, newLoader func(S, runtime.Options) (L, error)) (int, error) {
	l, err := newLoader(src, runtime.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return 0, err
	}
	defer l.Close()
	n := 0
	for b, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			return 0, err
		}
		n += len(b.Staged().Indices)
	}
	return n, nil
}
