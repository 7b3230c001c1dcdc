package pattern

import (
	"fmt"
	"iter"
	"slices"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// A Rule is what a batch of type B must satisfy, given the dataset indices
// of its samples: one key's pattern (Key), one key's device copy
// (OnDevice, in the cuda build) or a test's own.
type Rule[B any] func(b B, indices []int) error

// Key is the rule that key number key of a batch holds its samples'
// pattern values: data gives the batch's elements of the key (a generated
// batch's <Key>Data method), per elements a sample.
func Key[B any, T runtime.Element](key int, data func(B) []T, per int) Rule[B] {
	return func(b B, indices []int) error { return Check(data(b), key, indices, per) }
}

// Batch applies each rule to b, whose samples are the dataset indices
// given, and returns the first failure.
func Batch[B any](b B, indices []int, rules ...Rule[B]) error {
	for _, rule := range rules {
		if err := rule(b, indices); err != nil {
			return err
		}
	}
	return nil
}

// Staged is a generated loader's batch, which knows the runtime's batch
// behind it.
type Staged interface{ Staged() *runtime.Batch }

// Epoch runs an epoch of a generated loader, applies the rules to every
// batch and fails tb at an error or at the first batch that breaks a rule,
// naming the batch. It returns the dataset indices of each batch, in order.
func Epoch[B Staged](tb testing.TB, epoch iter.Seq2[B, error], rules ...Rule[B]) [][]int {
	tb.Helper()
	batches, err := run(epoch, rules)
	if err != nil {
		tb.Fatal(err)
	}
	return batches
}

// run is Epoch's loop. It returns the error rather than failing the test
// in the loop's body, a function that tb.Helper does not mark, which would
// make the failure point into this file.
func run[B Staged](epoch iter.Seq2[B, error], rules []Rule[B]) ([][]int, error) {
	var batches [][]int
	for b, err := range epoch {
		if err != nil {
			return nil, err
		}
		st := b.Staged()
		if err := Batch(b, st.Indices, rules...); err != nil {
			return nil, fmt.Errorf("batch %d: %w", st.Number, err)
		}
		batches = append(batches, slices.Clone(st.Indices))
	}
	return batches, nil
}
