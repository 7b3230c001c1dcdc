//go:build !purego

package images

// simdMode is a way this build runs: set switches to it and returns what
// switches back.
type simdMode struct {
	name string
	set  func() (restore func())
}

// simdModes are Go alone and, where the CPU has it, AVX2. Benchmarks
// switch hasAVX2 for their sub-benchmarks, never while another runs.
func simdModes() []simdMode {
	modes := []simdMode{{"go", func() func() {
		was := hasAVX2
		hasAVX2 = false
		return func() { hasAVX2 = was }
	}}}
	if hasAVX2 {
		modes = append(modes, simdMode{"avx2", func() func() { return func() {} }})
	}
	return modes
}
