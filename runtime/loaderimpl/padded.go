package loaderimpl

// falseSharingPad keeps apart what different goroutines write: two cache
// lines, since CPUs fetch lines in adjacent pairs.
const falseSharingPad = 128

// Padded holds one filler's state (its Run, or a generated loader's
// Sample) between paddings, on cache lines of its own. Fillers write
// theirs for every sample; laid side by side in a slice, two fillers'
// states would share a line, and each write would steal it from the other
// core (false sharing).
type Padded[T any] struct {
	_ [falseSharingPad]byte
	V T // the filler's state
	_ [falseSharingPad]byte
}
