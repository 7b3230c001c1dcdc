package volume

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/loadergen/loadergen/runtime/loaderimpl"
)

// errBalanceWeight is the error of a volume weight under Spec.Balance.
var errBalanceWeight = errors.New("crops.balance picks each sample's volume by the classes it annotates, so volumes have no weights (leave them 0, or drop the manifest's weight column)")

// balancer picks the volume of each sample of an epoch as cellmap-data's
// ClassBalancedSampler picks crops: at each sample, the class annotated
// by the fewest samples so far in the epoch (ties broken at random), then
// a volume annotating it, uniformly, whose classes all count once more.
// A volume annotates a class when some key with a class axis has an array
// for it there. The epoch's picks are drawn once, from (seed, epoch)
// alone, in sample index order, so they do not depend on the order
// samples are read in, on workers or on ranks.
type balancer struct {
	classes   []string
	annotated [][]int // per class, the volumes annotating it
	of        [][]int // per volume, the classes it annotates
	active    []int   // the classes some volume annotates
	perEpoch  int

	// mu guards epochs: any reader (Read, Crop, LocalityKeys, ReadAhead,
	// on any goroutine) takes it to look an epoch up, and computes a
	// missing one under it, replacing the older of the two held.
	mu     sync.Mutex
	epochs [2]balancedEpoch
}

// balancedEpoch is one epoch's picks: the volume of each sample index.
type balancedEpoch struct {
	epoch int
	vols  []int32 // nil before it is computed
}

// balanceStream is the PCG stream of an epoch's picks, which no sample's
// Rand uses (loaderimpl.SeedSample mixes its second word).
const balanceStream = 0xba1a_4ce0_c1a5_5e5

// newBalancer returns the balancer of the volumes vols under spec; an
// error when no volume annotates any class.
func newBalancer(spec *Spec, vols []*vol) (*balancer, error) {
	b := &balancer{classes: spec.Classes, annotated: make([][]int, len(spec.Classes)), of: make([][]int, len(vols)), perEpoch: spec.PerEpoch}
	for i, v := range vols {
		for c := range spec.Classes {
			for k, key := range spec.Keys {
				if key.ClassAxis && v.arrays[k][c] != nil {
					b.annotated[c] = append(b.annotated[c], i)
					b.of[i] = append(b.of[i], c)
					break
				}
			}
		}
	}
	for c, vs := range b.annotated {
		if len(vs) > 0 {
			b.active = append(b.active, c)
		}
	}
	if len(b.active) == 0 {
		return nil, fmt.Errorf("crops.balance: no volume annotates any class (%s)", strings.Join(spec.Classes, ", "))
	}
	return b, nil
}

// volume returns the volume of sample index of epoch under the schema's
// seed.
func (b *balancer) volume(seed uint64, epoch, index int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := &b.epochs[0]
	switch {
	case e.vols != nil && e.epoch == epoch:
	case b.epochs[1].vols != nil && b.epochs[1].epoch == epoch:
		e = &b.epochs[1]
	default: // the older goes, and its memory takes the new epoch's picks
		reuse := b.epochs[1].vols
		b.epochs[1] = b.epochs[0]
		*e = balancedEpoch{epoch: epoch, vols: b.picks(seed, epoch, reuse)}
	}
	return int(e.vols[index%len(e.vols)])
}

// picks draws the volumes of an epoch's samples, into reuse's memory when
// it holds them.
func (b *balancer) picks(seed uint64, epoch int, reuse []int32) []int32 {
	out := reuse
	if cap(out) < b.perEpoch {
		out = make([]int32, b.perEpoch)
	}
	out = out[:b.perEpoch]
	var pcg rand.PCG
	pcg.Seed(loaderimpl.EpochSeed(seed, epoch), balanceStream)
	r := rand.New(&pcg)
	counts := make([]int, len(b.classes))
	tied := make([]int, 0, len(b.active))
	for i := range out {
		least := -1
		tied = tied[:0]
		for _, c := range b.active {
			switch n := counts[c]; {
			case least < 0 || n < least:
				least, tied = n, append(tied[:0], c)
			case n == least:
				tied = append(tied, c)
			}
		}
		class := tied[r.IntN(len(tied))]
		v := b.annotated[class][r.IntN(len(b.annotated[class]))]
		for _, c := range b.of[v] {
			counts[c]++
		}
		out[i] = int32(v)
	}
	return out
}

// describe says how many volumes annotate each class, for the start-up
// line: "mito 3 of 4 volumes, er 1 of 4, nucleus 0 of 4 (never drawn)".
func (b *balancer) describe() string {
	parts := make([]string, len(b.classes))
	for c, name := range b.classes {
		parts[c] = fmt.Sprintf("%s %d of %d", name, len(b.annotated[c]), len(b.of))
		if c == 0 {
			parts[c] += " volumes"
		}
		if len(b.annotated[c]) == 0 {
			parts[c] += " (never drawn)"
		}
	}
	return strings.Join(parts, ", ")
}
