package small_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/loadergen/loadergen/golden/small"
	"github.com/loadergen/loadergen/runtime"
)

// squares is a Source: sample i's label is i*i, and its image and mask are
// filled with i. A real Source reads files or decodes records here.
type squares struct{ n int }

func (s squares) Len() int { return s.n }

func (squares) Read(s *small.SmallSample) error {
	for j := range s.Image {
		s.Image[j] = float32(s.Index)
	}
	for j := range s.Mask {
		s.Mask[j] = uint8(s.Index)
	}
	s.Label[0] = int64(s.Index * s.Index) // a scalar key: one element
	return nil
}

// A generated loader over a hand-written Source: each batch holds
// SmallBatchSize samples in the staged order (shuffled with the schema's
// seed), with typed views of every key.
func ExampleNewSmallLoader() {
	l, err := small.NewSmallLoader(squares{n: 10}, runtime.Options{
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	for b, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			panic(err)
		}
		fmt.Println(b.Indices, b.LabelData(), b.Image.Shape)
	}
	// Output:
	// [7 8 6 4] [49 64 36 16] [4 3 4 4]
	// [3 5 1 0] [9 25 1 0] [4 3 4 4]
	// [9 2] [81 4] [2 3 4 4]
}
