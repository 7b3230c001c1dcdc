package runtime

// The interfaces a Source may implement, beyond its generated one, for
// what the loader does with it.

// ReadAheader is a Source that can start reading samples' data before
// they are filled, such as a volume source on a remote store fetching the
// chunks their crops will read. Generated loaders hand its ReadAhead to
// their engine.
type ReadAheader interface {
	// ReadAhead is told the dataset indices of a batch of epoch, a batch
	// or more before workers start filling it. It must return at once
	// (queue its reads), must not keep indices, and must not change what
	// is read: a hint that is not acted on costs only time.
	ReadAhead(epoch int, indices []int)
}

// Sequential is implemented by a source read in its own order, such as
// the tiles of a volume source (Open<Name>Tiles), whose order keeps the
// tiles that fill one output chunk together: a loader over it neither
// shuffles it (whatever the schema's loader.shuffle says) nor regroups
// it by locality, and splits it across ranks into contiguous runs.
type Sequential interface {
	Sequential()
}
