//go:build linux

// Package bounded runs a test in a child process and holds it to a bound on
// its peak resident memory: the hostile-input tests' way of showing that a
// lying server or a crafted file ends in an error, not in a process that
// grows until the kernel kills it. A child that passes the bound is killed
// at once, so a regression fails the test without taking the machine's
// memory.
//
//	func TestBomb(t *testing.T) {
//		if !bounded.Child(t, bounded.HostileRSS) {
//			return // the parent: the child ran the body, under the bound
//		}
//		... the body, in the child
//	}
package bounded

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// HostileRSS is the bound of the hostile-input suite: no bad file or
// server answer may take a loader past 1 GB of resident memory.
const HostileRSS = 1 << 30

// raceScale is how much more resident memory a child under -race may take:
// the race detector shadows every word of the heap.
const raceScale = 2

// childEnv marks the child process, naming the test it runs.
const childEnv = "LOADERGEN_BOUNDED_CHILD"

// poll is how often the parent reads the child's resident memory.
const poll = 5 * time.Millisecond

// Child runs the calling test (t.Name(), subtests included) again in a
// child process, and reports whether this process is that child: the
// caller runs the test's body only then. In the parent it waits for the
// child, fails t with the child's output when the child fails, and fails
// t when the child's peak resident memory passed maxRSS bytes (killing it
// as soon as it does). The child inherits the environment; extra adds
// variables ("K=V") to it. Under -race the bound is raceScale times
// maxRSS: the race detector's shadow of the heap (which took one test
// from 236 MB to 568 MB, and to 957 MB on a loaded machine) is not memory
// the code holds.
func Child(t *testing.T, maxRSS int64, extra ...string) bool {
	t.Helper()
	if os.Getenv(childEnv) == t.Name() {
		return true
	}
	if raceEnabled {
		maxRSS *= raceScale
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.count=1", "-test.v")
	cmd.Env = append(append(os.Environ(), childEnv+"="+t.Name()), extra...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the child: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var peak int64
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var err error
wait:
	for {
		select {
		case err = <-exited:
			break wait
		case <-tick.C:
			if rss := residentBytes(cmd.Process.Pid); rss > peak {
				peak = rss
			}
			if peak > maxRSS {
				cmd.Process.Kill()
				<-exited
				t.Fatalf("the child passed %d MB of resident memory (bound %d MB) and was killed\n%s", peak>>20, maxRSS>>20, out.Bytes())
			}
		}
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		peak = max(peak, ru.Maxrss<<10) // kilobytes on Linux
	}
	switch {
	case err != nil:
		t.Fatalf("the child: %v\n%s", err, out.Bytes())
	case peak > maxRSS:
		t.Fatalf("the child's peak resident memory was %d MB, over the bound of %d MB\n%s", peak>>20, maxRSS>>20, out.Bytes())
	case !bytes.Contains(out.Bytes(), []byte("--- PASS: "+t.Name())) && !bytes.Contains(out.Bytes(), []byte("--- SKIP: "+t.Name())):
		t.Fatalf("the child ran no test named %s\n%s", t.Name(), out.Bytes())
	}
	t.Logf("the child's peak resident memory: %d MB (bound %d MB)", peak>>20, maxRSS>>20)
	return false
}

// residentBytes is process pid's resident memory now (VmRSS), or 0 when
// it cannot be read (the process has ended).
func residentBytes(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
