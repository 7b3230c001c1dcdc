//go:build race

package images

// raceEnabled says the race detector is on: its shadow memory stays
// resident, so resident memory says nothing of what the code holds.
const raceEnabled = true
