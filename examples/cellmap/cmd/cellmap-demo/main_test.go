package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// TestPlainOutputWithoutTerminal: with stderr not a terminal the demo
// writes plain lines, no progress-bar frames.
func TestPlainOutputWithoutTerminal(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(t.TempDir(), 3, 2, "", &stdout, &stderr, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr.String(), "\r") || strings.Contains(stdout.String(), "\r") {
		t.Errorf("carriage returns in the output:\nstdout %q\nstderr %q", stdout.String(), stderr.String())
	}
	if n := strings.Count(stdout.String(), "\nepoch "); n != 3 || !strings.HasPrefix(stdout.String(), "wrote a synthetic CellMap-like zarr store") {
		t.Errorf("stdout is not the data line and one line per epoch:\n%s", stdout.String())
	}
	// Its summary says where the last epoch's figures come from, as the
	// epoch's own line does: a store the cache grew to hold, once re-reading
	// paid for the memory (on a machine where new memory is dear, not
	// within three epochs), or chunks still read and decoded.
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	last, summary := lines[len(lines)-2], lines[len(lines)-1]
	inMemory := strings.Contains(summary, "the last epoch loaded none, so its figures are of a store in memory")
	switch {
	case !strings.HasPrefix(last, "epoch 3: "):
		t.Errorf("the line before the summary is not the last epoch's:\n%s", stdout.String())
	case inMemory && !strings.Contains(last, "(all from memory)") && !strings.Contains(summary, "held in part"):
		t.Errorf("the summary says the last epoch loaded nothing, but the epoch decoded chunks:\n%s", stdout.String())
	case !inMemory && (!strings.Contains(summary, "the last epoch loaded ") || strings.Contains(last, "(all from memory)")):
		t.Errorf("the summary does not say what the last epoch loaded, as its line does:\n%s", stdout.String())
	}
	// The main job's first screen must not look like a failure.
	if strings.Contains(stderr.String(), "level=WARN") || strings.Contains(stderr.String(), "level=ERROR") {
		t.Errorf("the demo warns:\n%s", stderr.String())
	}
	name, backend := "cuda", "backend: cuda\n"
	if why := runtime.CUDAUsable(); why != nil {
		name, backend = "cpu", fmt.Sprintf("backend: cpu (%v)\n", why)
	}
	if !strings.Contains(stdout.String(), backend) {
		t.Errorf("stdout does not say which backend runs:\n%s", stdout.String())
	}
	// The loader's own start-up line must name the backend stdout names.
	if !strings.Contains(stderr.String(), " backend="+name+" ") {
		t.Errorf("stdout says %q, but the loader's start-up log does not say backend=%s:\n%s", strings.TrimSpace(backend), name, stderr.String())
	}
}

// TestPredictStep: -predict writes the data if absent, predicts over its
// tiles and says so in one line, without warnings.
func TestPredictStep(t *testing.T) {
	var stdout, stderr bytes.Buffer
	dir := t.TempDir()
	if err := predictStep(dir, dir+"/predictions.zarr", 2, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stdout.String(), "predicted 48 tiles in ") || !strings.Contains(stdout.String(), "wrote 144 chunks") {
		t.Errorf("stdout is not the predict step's line:\n%s", stdout.String())
	}
	if strings.Contains(stderr.String(), "level=WARN") || strings.Contains(stderr.String(), "level=ERROR") {
		t.Errorf("the predict step warns:\n%s", stderr.String())
	}
}
