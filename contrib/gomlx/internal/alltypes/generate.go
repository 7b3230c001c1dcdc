// Package alltypes is a loader with a key of every loadergen dtype,
// generated from alltypes.yaml, for the adapter's tests.
package alltypes

//go:generate go tool loadergen generate alltypes.yaml
