// Package pattern gives tests of generated loaders a deterministic value
// for every element of every sample, so that each staged element can be
// checked against what the source wrote, and runs their epochs checking
// each batch against rules: these values, or a test's own.
package pattern

import (
	"fmt"

	"github.com/loadergen/loadergen/runtime"
)

// Value is element j of dataset sample index of key number key.
func Value(key, index, j int) int { return (index*31 + key*17 + j) % 97 }

// Fill writes sample index of key into dst.
func Fill[T runtime.Element](dst []T, key, index int) {
	for j := range dst {
		dst[j] = T(Value(key, index, j))
	}
}

// Check verifies a staged batch of key: got holds len(indices) samples of
// per elements each, sample i filled from dataset index indices[i].
func Check[T runtime.Element](got []T, key int, indices []int, per int) error {
	if len(got) != len(indices)*per {
		return fmt.Errorf("key %d: %d elements for %d samples of %d", key, len(got), len(indices), per)
	}
	for i, index := range indices {
		for j, v := range got[i*per : (i+1)*per] {
			if want := T(Value(key, index, j)); v != want {
				return fmt.Errorf("key %d, sample %d (index %d), element %d: got %v, want %v", key, i, index, j, v, want)
			}
		}
	}
	return nil
}
