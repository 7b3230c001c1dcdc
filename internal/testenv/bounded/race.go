//go:build race

package bounded

// raceEnabled says the test binary runs under the race detector.
const raceEnabled = true
