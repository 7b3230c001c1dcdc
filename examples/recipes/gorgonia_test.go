package recipes_test

import (
	"context"
	"fmt"
	"log"

	"gorgonia.org/tensor"

	"github.com/loadergen/loadergen/golden/small"
)

// A gorgonia.org/tensor Dense backed by a key's host view: tensor.WithBacking
// keeps the slice itself, so nothing is copied, and the tensor is valid
// until the loop advances (the loader then refills the slot).
func Example_gorgoniaTensor() {
	l, err := small.NewSmallLoader(indexed(6), quietOptions)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	for b, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			log.Fatal(err)
		}
		images := tensor.New(tensor.WithShape(b.Image.Shape...), tensor.WithBacking(b.ImageData()))
		labels := tensor.New(tensor.WithShape(b.Label.Shape...), tensor.WithBacking(b.LabelData()))
		// Use them here, before the loop advances.
		fmt.Println(images.Shape(), labels.Data(), &images.Float32s()[0] == &b.ImageData()[0])
	}
	// Output:
	// (4, 3, 4, 4) [2 4 3 0] true
	// (2, 3, 4, 4) [5 1] true
}
