//go:build cgo

package recipes_test

import (
	"context"
	"fmt"
	"log"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/loadergen/loadergen/golden/small"
)

// An onnxruntime_go input tensor over a key's host view, for inference:
// ort.NewTensor wraps the slice without copying (ort.NewCustomDataTensor
// does the same with b.Mask.Data for bool keys, and for float16 or
// bfloat16 ones, whose raw bytes are ONNX's layout). Destroy it before the
// loop advances. The example needs the onnxruntime shared library and a
// model, so it is compiled but not run.
func Example_onnxruntime() {
	ort.SetSharedLibraryPath("/usr/local/lib/libonnxruntime.so")
	if err := ort.InitializeEnvironment(); err != nil {
		log.Fatal(err)
	}
	defer ort.DestroyEnvironment()
	session, err := ort.NewDynamicAdvancedSession("classifier.onnx", []string{"image"}, []string{"logits"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Destroy()

	l, err := small.NewSmallLoader(indexed(6), quietOptions)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	for b, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			log.Fatal(err)
		}
		shape := make(ort.Shape, len(b.Image.Shape))
		for i, d := range b.Image.Shape {
			shape[i] = int64(d)
		}
		image, err := ort.NewTensor(shape, b.ImageData())
		if err != nil {
			log.Fatal(err)
		}
		outputs := []ort.Value{nil} // allocated by Run
		err = session.Run([]ort.Value{image}, outputs)
		image.Destroy()
		if err != nil {
			log.Fatal(err)
		}
		logits := outputs[0].(*ort.Tensor[float32])
		fmt.Println(b.Indices, logits.GetShape())
		logits.Destroy()
	}
}
