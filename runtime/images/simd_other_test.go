//go:build !amd64 || purego

package images

// simdMode is a way this build runs: set switches to it and returns what
// switches back.
type simdMode struct {
	name string
	set  func() (restore func())
}

// simdModes is Go alone: these builds have no assembly.
func simdModes() []simdMode {
	return []simdMode{{"go", func() func() { return func() {} }}}
}
