package fashionmnist

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/layers/activations"

	lgomlx "github.com/loadergen/loadergen/contrib/gomlx"
	"github.com/loadergen/loadergen/runtime"
)

// Hidden is the width of the model's hidden layer.
const Hidden = 256

// Model is a 784-256-10 perceptron with a ReLU: it takes the batch's uint8
// images [n, 28, 28], scales them to [0, 1] in the graph, and returns the
// logits [n, 10]. Its fully connected layers are the example's dense.
func Model(ctx *context.Context, _ any, inputs []*graph.Node) []*graph.Node {
	return perceptron(ctx, inputs[0], dense)
}

// A layerFunc is a fully connected layer of out units over x [n, in], with
// its variables in ctx: dense, or GoMLX's layers.Dense in BenchmarkTrainStep.
type layerFunc func(ctx *context.Context, x *graph.Node, out int) *graph.Node

// perceptron builds Model's graph over images with layer as its fully
// connected layers.
func perceptron(ctx *context.Context, images *graph.Node, layer layerFunc) []*graph.Node {
	x := graph.Reshape(graph.ConvertDType(images, dtypes.Float32), images.Shape().Dimensions[0], Side*Side)
	x = graph.MulScalar(x, 1.0/255)
	x = activations.Relu(layer(ctx.In("hidden"), x, Hidden))
	return []*graph.Node{layer(ctx.In("logits"), x, NumClasses)}
}

// Split yields the batch's image as the input and its label as the
// [n, 1] column that GoMLX's sparse categorical loss and accuracy take.
func Split(b *FashionMNISTBatch) (inputs, labels []runtime.Tensor) {
	return []runtime.Tensor{b.Image}, []runtime.Tensor{lgomlx.Column(b.Label)}
}

// dense is a fully connected layer, x·w + b, for x of shape [n, in]; w
// starts with the context's default (He) initializer and b with zeros.
func dense(ctx *context.Context, x *graph.Node, out int) *graph.Node {
	g := x.Graph()
	in := x.Shape().Dimensions[1]
	w := ctx.VariableWithShape("weights", shapes.Make(x.DType(), in, out)).ValueGraph(g)
	b := ctx.VariableWithShape("biases", shapes.Make(x.DType(), out)).ValueGraph(g)
	return graph.Add(matMul(x, w), graph.InsertAxes(b, 0))
}

// matMul returns x·w for x [n, in] and w [in, out], with gradients built
// as the matrix products v·wᵀ and xᵀ·v, where v is the gradient of the
// loss with respect to the product.
//
// GoMLX v0.26.0 builds the gradient of every Dot as a broadcast, a
// multiplication and a sum over an [n, in, out] intermediate (103 MB per
// step for the hidden layer here), which the simplego backend runs as
// written. BenchmarkTrainStep compares the training steps of this layer
// and of layers.Dense; docs/PERFORMANCE.md, "GoMLX", gives its figures.
// gomlx/gomlx#428, merged after v0.26.0, builds Dot's own gradients as
// matrix products; layers.Dense with it was not measured here.
//
// The product itself takes no gradient. Two zero-valued terms, one per
// operand, carry the back-propagation to x and w, whose custom gradients
// return the matrix products; v is captured on the way, by the identity
// around the result, which back-propagation reaches first.
func matMul(x, w *graph.Node) *graph.Node {
	var v *graph.Node
	gx := graph.IdentityWithCustomGradient(x, func(_, _ *graph.Node) *graph.Node {
		return graph.Dot(v, graph.Transpose(w, 0, 1))
	})
	gw := graph.IdentityWithCustomGradient(w, func(_, _ *graph.Node) *graph.Node {
		return graph.Dot(graph.Transpose(x, 0, 1), v)
	})
	zero := graph.Add(
		graph.ReduceAllSum(graph.Sub(gx, graph.StopGradient(gx))),
		graph.ReduceAllSum(graph.Sub(gw, graph.StopGradient(gw))))
	y := graph.Add(graph.Dot(graph.StopGradient(x), graph.StopGradient(w)), zero)
	return graph.IdentityWithCustomGradient(y, func(_, dy *graph.Node) *graph.Node {
		v = dy
		return dy
	})
}
