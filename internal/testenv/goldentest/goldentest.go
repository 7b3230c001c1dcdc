// Package goldentest is what every golden package's tests (golden/*) set
// up the same way: their TestMain, a logger that drops the loaders' lines,
// and the opening of a loader or source that the test then owns. What
// each case reads and checks stays in its own package.
package goldentest

import (
	"io"
	"log/slog"
	"testing"

	"go.uber.org/goleak"
)

// Main runs a golden package's tests, then fails the package if a
// goroutine outlives them: a worker, a read-ahead or a CUDA backend's
// goroutine that a loader's or source's Close did not stop. A golden
// package's TestMain calls it.
func Main(m *testing.M) { goleak.VerifyTestMain(m) }

// Quiet drops every record: the start-up line each loader logs, and the
// lines that its options ask for.
var Quiet = slog.New(slog.DiscardHandler)

// Closing returns c, made by a call that returned err: it fails tb when
// err is not nil, and otherwise closes c when tb ends. A loader's or a
// source's constructor is the call:
//
//	l, err := NewTinyLoader(src, opts)
//	return goldentest.Closing(tb, l, err)
func Closing[C io.Closer](tb testing.TB, c C, err error) C {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}
