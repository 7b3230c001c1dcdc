package recipes_test

import (
	"log/slog"

	"github.com/loadergen/loadergen/golden/small"
	"github.com/loadergen/loadergen/runtime"
)

// quietOptions keeps the loaders' start-up lines out of the examples' output.
var quietOptions = runtime.Options{Logger: slog.New(slog.DiscardHandler)}

// indexed is a source of n samples of the small golden schema whose image
// and label hold the dataset index, so a batch's labels show its order.
type indexed int

func (n indexed) Len() int { return int(n) }

func (indexed) Read(smp *small.SmallSample) error {
	for j := range smp.Image {
		smp.Image[j] = float32(smp.Index)
	}
	clear(smp.Mask)
	smp.Label[0] = int64(smp.Index)
	return nil
}
