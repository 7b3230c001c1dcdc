package loaderimpl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loadergen/loadergen/runtime"
)

// badAt fails key b of the samples in bad with a bad sample's error.
func badAt(bad ...int) func(key, index int) error {
	return func(key, index int) error {
		if key == 1 && slices.Contains(bad, index) {
			return &runtime.BadSampleError{Err: fmt.Errorf("corrupt %d", index)}
		}
		return nil
	}
}

// skipPlan is testPlan in shuffled batches of 4 under on_error: skip.
func skipPlan() runtime.Plan {
	return testPlan(4, runtime.LoaderDefaults{Prefetch: 2, Shuffle: true, Seed: 3, OnError: runtime.OnErrorSkip})
}

// TestSkipBadSamples: under on_error: skip, a bad sample's place holds
// the next dataset index that reads (3 and 4 are bad: 5; the last, 19:
// 0, the first), and the batch's Indices say so; the batches are the same
// whatever the number of workers, a resumed epoch's are the whole epoch's,
// Stats and the epoch's line count the replacements, and the log names
// each with its reason.
func TestSkipBadSamples(t *testing.T) {
	const n = 20
	replaced := map[int]int{3: 5, 4: 5, 19: 0}
	var want [][]int
	for _, b := range collect(t, newTestEngine(t, skipPlan(), n, runtime.Options{Workers: 2}, nil), 2, 0) {
		for i, index := range b {
			if r, ok := replaced[index]; ok {
				b[i] = r
			}
		}
		want = append(want, b)
	}
	var logs bytes.Buffer
	e := newTestEngine(t, skipPlan(), n, runtime.Options{Workers: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, badAt(3, 4, 19))
	before, t0 := e.Stats(), time.Now()
	if got := collect(t, e, 2, 0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("batches %v, want %v", got, want)
	}
	if s := e.Stats(); s.Skipped != 3 || !strings.Contains(s.Since(before, time.Since(t0)).String(), "; 3 bad samples skipped (on_error: skip; the log names the first)") {
		t.Errorf("Skipped %d, epoch line %q; want 3 skipped", s.Skipped, s.Since(before, time.Since(t0)))
	}
	for _, line := range []string{
		`Test loader: epoch 2, batch `, `: sample 3 is bad, replaced by sample 5 (on_error: skip): key \"b\": corrupt 3"`,
		`: sample 19 is bad, replaced by sample 0 (on_error: skip): key \"b\": corrupt 19"`,
	} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("the log lacks %q:\n%s", line, logs.String())
		}
	}
	three := newTestEngine(t, skipPlan(), n, runtime.Options{Workers: 3}, badAt(3, 4, 19))
	if got := collect(t, three, 2, 0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("3 workers: batches %v, want %v", got, want)
	}
	if got := collect(t, three, 2, 2); fmt.Sprint(got) != fmt.Sprint(want[2:]) {
		t.Errorf("resumed at batch 2: batches %v, want %v", got, want[2:])
	}
}

// TestSkipLogsTheFirst: a loader logs its first maxSkipLogs replacements,
// the last of them saying so, and counts them all.
func TestSkipLogsTheFirst(t *testing.T) {
	var logs bytes.Buffer
	bad := []int{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23}
	e := newTestEngine(t, skipPlan(), 30, runtime.Options{Workers: 2, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, badAt(bad...))
	collect(t, e, 0, 0)
	if n := strings.Count(logs.String(), "(on_error: skip)"); n != maxSkipLogs || e.Stats().Skipped != int64(len(bad)) {
		t.Errorf("%d replacements logged of %d counted, want %d of %d:\n%s", n, e.Stats().Skipped, maxSkipLogs, len(bad), logs.String())
	}
	if n := strings.Count(logs.String(), "(the last skip logged: Stats.Skipped counts them all)"); n != 1 {
		t.Errorf("%d lines say they are the last logged, want 1", n)
	}
}

// TestSkipOnlyBadSamples: on_error: skip replaces bad samples only: any
// other failure, of a sample or of its replacement, ends the epoch naming
// its index, as a bad sample does under on_error: error; so does a run
// of bad samples longer than the dataset holds others.
func TestSkipOnlyBadSamples(t *testing.T) {
	plain := errors.New("disk error")
	tests := []struct {
		name    string
		onError runtime.OnError
		fail    func(key, index int) error
		index   int    // the ReadError's
		want    string // in its message
	}{
		{"on_error: error", runtime.OnErrorFail, badAt(6), 6, "corrupt 6"},
		{"another error", runtime.OnErrorSkip, func(key, index int) error {
			if index == 6 {
				return plain
			}
			return nil
		}, 6, "disk error"},
		{"the replacement's other error", runtime.OnErrorSkip, func(key, index int) error {
			switch index {
			case 6:
				return &runtime.BadSampleError{Err: errors.New("corrupt 6")}
			case 7:
				return plain
			}
			return nil
		}, 7, "disk error"},
		{"a cancelled read", runtime.OnErrorSkip, func(key, index int) error {
			if index == 6 {
				return &runtime.BadSampleError{Err: context.Canceled}
			}
			return nil
		}, 6, "context canceled"},
		{"every sample bad", runtime.OnErrorSkip, func(key, index int) error {
			return &runtime.BadSampleError{Err: fmt.Errorf("corrupt %d", index)}
		}, -1, "(on_error: skip found none of the 11 samples after it readable either: is the data what the schema reads?)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPlan(4, runtime.LoaderDefaults{Prefetch: 2, OnError: tt.onError})
			errs := collectErr(newTestEngine(t, p, 12, runtime.Options{Workers: 2}, tt.fail))
			var re *runtime.ReadError
			if len(errs) != 1 || !errors.As(errs[0], &re) || (tt.index >= 0 && re.Index != tt.index) || !strings.Contains(re.Error(), tt.want) {
				t.Fatalf("errors %v, want one ReadError of sample %d with %q", errs, tt.index, tt.want)
			}
		})
	}
}
