// Package imagepeer is the Go side of the GPU comparison with PyTorch's
// DataLoader (make gpu-suite): a loader generated from dataset.yaml that
// copies .npy samples to the GPU, and the command image-peer that writes
// the files and times the loader.
package imagepeer

// Inside the loadergen module the tool runs from source; a user module
// writes `go tool loadergen generate dataset.yaml` instead.
//go:generate go run ../../cmd/loadergen generate dataset.yaml
