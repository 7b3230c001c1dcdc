// Package ragged is a loader with a variable-length key (tokens, up to 6
// int32 padded with -1) and a scalar label, generated from ragged.yaml,
// for the adapter's tests of variable-length keys and Mask.
package ragged

//go:generate go tool loadergen generate ragged.yaml
