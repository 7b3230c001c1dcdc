package loaderimpl

import (
	"errors"
	"fmt"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strings"

	"github.com/loadergen/loadergen/runtime"
)

// newReadError wraps a source's failure on sample index of batch, taking
// the key from a KeyError inside err.
func newReadError(batch, index int, err error) *runtime.ReadError {
	re := &runtime.ReadError{Index: index, Batch: batch, Err: err}
	var ke *runtime.KeyError
	if errors.As(err, &ke) {
		re.Key = ke.Key
	}
	return re
}

// errGoexit reports a Source method that ended its goroutine with
// runtime.Goexit (as testing.T.FailNow does) instead of returning.
var errGoexit = errors.New("source called runtime.Goexit instead of returning")

// recovered makes the PanicError for v. It must be called from the deferred
// function that recovered v, so that the panicking frames are still on the
// stack.
func recovered(v any) *runtime.PanicError {
	return &runtime.PanicError{Value: v, At: culprit(), Stack: debug.Stack()}
}

// culprit is the frame that panicked: the first one below runtime.gopanic
// outside Go's own runtime package (which raises index, nil-pointer and
// division panics on behalf of the code that caused them).
func culprit() string {
	pcs := make([]uintptr, 64)
	frames := goruntime.CallersFrames(pcs[:goruntime.Callers(2, pcs)])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			panicking = true
		case panicking && !strings.HasPrefix(f.Function, "runtime."):
			return fmt.Sprintf("%s (%s:%d)", f.Function, filepath.Base(f.File), f.Line)
		}
		if !more {
			return ""
		}
	}
}
