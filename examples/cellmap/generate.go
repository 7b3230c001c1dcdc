// Package cellmap is an example user package: a committed loader generated
// from dataset.yaml, and a writer of synthetic data in the same layout.
package cellmap

// Inside the loadergen module the tool runs from source; a user module
// writes `go tool loadergen generate dataset.yaml` instead.
//go:generate go run ../../cmd/loadergen generate dataset.yaml
