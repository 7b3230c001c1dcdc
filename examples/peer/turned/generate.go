// Package turned holds the loaders of make peer's rotated case
// (examples/peer/run.sh): turned.yaml's crops turned by any angle, and
// for what they cost against, flat.yaml's unturned and augmented.yaml's
// with value augmentations.
package turned

// Inside the loadergen module the tool runs from source.
//go:generate go run ../../../cmd/loadergen generate turned.yaml
//go:generate go run ../../../cmd/loadergen generate flat.yaml
//go:generate go run ../../../cmd/loadergen generate augmented.yaml
