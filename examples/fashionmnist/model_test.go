package fashionmnist

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego" // registers the "go" backend
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// newBackend returns a simplego backend that runs a graph's ops one after
// another: simplego v0.26.0's parallel op executor trips the race detector
// (go test -race) inside GoMLX.
func newBackend(t testing.TB) backends.Backend {
	t.Helper()
	b, err := backends.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Finalize)
	return b
}

// TestMatMulGradient checks matMul's product and gradients against
// GoMLX's own Dot, for a loss sum(r ⊙ x·w) with arbitrary r.
func TestMatMulGradient(t *testing.T) {
	backend := newBackend(t)
	gradients := func(product func(x, w *graph.Node) *graph.Node) []*tensors.Tensor {
		exec := graph.MustNewExec(backend, func(x, w, r *graph.Node) []*graph.Node {
			y := product(x, w)
			grads := graph.Gradient(graph.ReduceAllSum(graph.Mul(y, r)), x, w)
			return []*graph.Node{y, grads[0], grads[1]}
		})
		x := tensors.FromValue([][]float32{{1, -2, 3}, {0.5, 4, -1}})
		w := tensors.FromValue([][]float32{{2, 0, -1, 1}, {1, 3, 0.5, -2}, {-1, 1, 2, 0}})
		r := tensors.FromValue([][]float32{{1, 2, -3, 0.5}, {-1, 0.25, 2, 1}})
		return exec.MustExec(x, w, r)
	}
	want := gradients(graph.Dot)
	got := gradients(matMul)
	for i, name := range []string{"x·w", "gradient of x", "gradient of w"} {
		g, w := tensors.MustCopyFlatData[float32](got[i]), tensors.MustCopyFlatData[float32](want[i])
		if !got[i].Shape().Equal(want[i].Shape()) {
			t.Fatalf("%s: shape %s, want %s", name, got[i].Shape(), want[i].Shape())
		}
		for j := range g {
			if math.Abs(float64(g[j]-w[j])) > 1e-5 {
				t.Errorf("%s: %v, want %v", name, g, w)
				break
			}
		}
	}
}
