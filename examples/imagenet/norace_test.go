//go:build !race

package imagenet

const raceEnabled = false
