// Package recipes shows, as example tests, how a loadergen batch feeds
// libraries other than GoMLX without an adapter: a batch's typed host views
// (b.ImageData()) are ordinary Go slices over the staging slot, which
// gorgonia.org/tensor and onnxruntime_go can wrap without copying.
//
// It is a module of its own, so that neither the core module nor the GoMLX
// adapter depends on these libraries. The onnxruntime example needs cgo and
// is built only when cgo is enabled.
package recipes
