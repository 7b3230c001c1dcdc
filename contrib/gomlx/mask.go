package gomlx

import (
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/pkg/errors"
)

// Mask returns the mask of a variable-length key's rows, built in the
// graph from its lengths: a bool node of shape [n, maxRows] that is true
// where the row is below the sample's length (row < lengths[i]) and false
// on the padding.
//
// lengths is the key's lengths as the dataset yields them: the int32 [n]
// tensor of the plan key runtime.LengthsKey(key), right after the key
// itself (any integer dtype of rank 1 is taken). maxRows is the key's
// maximum, the first axis of its padded tensor [n, maxRows, ...]. A
// lengths value past maxRows marks every row; a negative one marks none.
//
// The lengths, and not a mask, are what reach GoMLX: 4 bytes a sample
// instead of maxRows bytes of mask copied from the host on every step.
// Models that want a mask (an attention layer's key or query mask, a
// masked mean, a masked loss) build it in the graph with Mask, where XLA
// fuses it into the ops that read it. Mask panics, as GoMLX's graph
// functions do, when lengths is not an integer vector or maxRows < 1.
func Mask(lengths *graph.Node, maxRows int) *graph.Node {
	if lengths.Rank() != 1 || !lengths.DType().IsInt() {
		panic(errors.Errorf("gomlx: Mask: lengths must be an integer vector [n], got %s", lengths.Shape()))
	}
	if maxRows < 1 {
		panic(errors.Errorf("gomlx: Mask: maxRows is %d, want 1 or more", maxRows))
	}
	n := lengths.Shape().Dimensions[0]
	rows := graph.Iota(lengths.Graph(), shapes.Make(lengths.DType(), n, maxRows), 1)
	limits := graph.BroadcastToDims(graph.ExpandAxes(lengths, -1), n, maxRows)
	return graph.LessThan(rows, limits)
}
