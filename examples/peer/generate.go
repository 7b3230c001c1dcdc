// Package peer is the Go side of the comparison with PyTorch's DataLoader
// over zarr-python (make peer): a loader generated from dataset.yaml, and
// the command peer-bench that writes the store and times the loader.
package peer

// Inside the loadergen module the tool runs from source; a user module
// writes `go tool loadergen generate dataset.yaml` instead.
//go:generate go run ../../cmd/loadergen generate dataset.yaml
