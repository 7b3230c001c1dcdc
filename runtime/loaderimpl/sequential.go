package loaderimpl

import "github.com/loadergen/loadergen/runtime"

// NewSequentialEngine starts an engine over the n samples of a Sequential
// source: in their order, rank r taking positions [r·n/W, (r+1)·n/W) of
// it. runtime.Options.Locality is refused, as for a source without locality
// keys.
func NewSequentialEngine(p runtime.Plan, n int, o runtime.Options, fill FillFunc) (*Engine, error) {
	p.Loader.Shuffle = false // p is a copy; newEngine clones its slices
	e, err := newEngine(p, n, nil, nil, o, fill)
	if err != nil {
		return nil, err
	}
	// No epoch has started: the sampler is read by Epoch and Start only.
	e.sampler.Blocks = true
	return e, nil
}
