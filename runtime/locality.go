package runtime

// Locality is the order of crops for reuse (crops.locality): within each
// window of Window batches of an epoch's order, samples are sorted by a
// locality key (a volume source's: the volume, then the chunk where the
// crop's box starts), so that crops that read the same chunks run close
// together and find them in the chunk cache; then the batches are
// shuffled, as length bucketing does. Only the order changes: the epoch
// visits the same samples, each the same crop.
type Locality struct {
	Window int `json:"window,omitempty"` // batches per window; 0 (or less) turns it off
}

// LocalityOff is Options.Locality that turns crop locality off for a run,
// whatever the schema says.
const LocalityOff = -1

// LocalityKeyer is a source that gives locality keys: generated volume
// sources are, and a loader over one groups its crops (crops.locality).
type LocalityKeyer interface {
	LocalityKeys(epoch int, indices []int, keys []uint64)
}
