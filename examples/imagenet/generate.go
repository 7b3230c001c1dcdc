// Package imagenet is an example user package for image records: a
// committed loader generated from dataset.yaml, reading WebDataset shards
// of JPEG photos (make demo-images writes synthetic ones).
package imagenet

// Inside the loadergen module the tool runs from source; a user module
// writes `go tool loadergen generate dataset.yaml` instead.
//go:generate go run ../../cmd/loadergen generate dataset.yaml
