//go:build !race

package images

// raceEnabled says the race detector is on (race_test.go).
const raceEnabled = false
