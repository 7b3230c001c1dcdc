package runtime

// Sequential is implemented by a source read in its own order, such as
// the tiles of a volume source (Open<Name>Tiles), whose order keeps the
// tiles that fill one output chunk together: a loader over it neither
// shuffles it (whatever the schema's loader.shuffle says) nor regroups
// it by locality, and splits it across ranks into contiguous runs
// (Sampler.Blocks). Generated loaders start such a source's engine with
// NewSequentialEngine.
type Sequential interface {
	Sequential()
}

// NewSequentialEngine starts an engine over the n samples of a Sequential
// source: in their order, rank r taking positions [r·n/W, (r+1)·n/W) of
// it. Options.Locality is refused, as for a source without locality
// keys.
func NewSequentialEngine(p Plan, n int, o Options, fill FillFunc) (*Engine, error) {
	p.Loader.Shuffle = false // p is a copy; newEngine clones its slices
	e, err := newEngine(p, n, nil, nil, o, fill)
	if err != nil {
		return nil, err
	}
	// No epoch has started: the sampler is read by Epoch and Start only.
	e.sampler.Blocks = true
	return e, nil
}
