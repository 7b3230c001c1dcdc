package gputest_test

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/envswitch"
	"github.com/loadergen/loadergen/internal/testenv/gputest"
)

// recorder is a testing.TB that records a skip or a failure and, as
// testing's own do, ends its goroutine there.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	goruntime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	goruntime.Goexit()
}

// TestNeed: with CUDA usable the test runs, whatever
// LOADERGEN_REQUIRE_GPU says; without, it is skipped with the reason, or
// fails with it when the variable is 1 or true.
func TestNeed(t *testing.T) {
	noDevice := errors.New("no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)")
	tests := []struct {
		why     error
		env     string
		outcome string // "ran", "skipped" or "failed"
	}{
		{nil, "", "ran"},
		{nil, "1", "ran"},
		{noDevice, "", "skipped"},
		{noDevice, "0", "skipped"},
		{noDevice, "false", "skipped"},
		{noDevice, "1", "failed"},
		{noDevice, "true", "failed"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("unusable=%v,env=%s", tt.why != nil, tt.env), func(t *testing.T) {
			t.Setenv(envswitch.RequireGPU, tt.env)
			r := &recorder{TB: t}
			ran := false
			done := make(chan struct{})
			go func() {
				defer close(done)
				gputest.Need(r, tt.why)
				ran = true
			}()
			<-done
			got, msg := "ran", ""
			switch {
			case r.skipped != "":
				got, msg = "skipped", r.skipped
			case r.failed != "":
				got, msg = "failed", r.failed
			case !ran:
				t.Fatal("Need ended the test's goroutine without a skip or a failure")
			}
			if got != tt.outcome {
				t.Fatalf("the test %s (%q), want %s", got, msg, tt.outcome)
			}
			if tt.why != nil && !strings.Contains(msg, tt.why.Error()) {
				t.Errorf("the test %s with %q, which does not give the reason %q", got, msg, tt.why)
			}
		})
	}
}
