package unified

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestHeaders(t *testing.T) {
	old := numbered(60, nil)
	tests := []struct {
		name, new string
		want      []string // hunk headers
	}{
		// The case go-udiff v0.4.1 gets wrong: a line removed in a joined
		// hunk, then a change 30 lines later that must be -42 +41.
		{"joined hunk then later change", numbered(60, map[int]string{5: "", 9: "x\n", 45: "y\n"}),
			[]string{"@@ -3,11 +3,10 @@", "@@ -43,7 +42,7 @@"}},
		{"insert at top", "new\n" + old, []string{"@@ -1,3 +1,4 @@"}},
		{"delete the last line", numbered(59, nil), []string{"@@ -57,4 +57,3 @@"}},
		{"one changed line", numbered(60, map[int]string{30: "z\n"}), []string{"@@ -28,7 +28,7 @@"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Diff("a", "b", old, tt.new)
			var got []string
			for _, l := range strings.Split(d, "\n") {
				if strings.HasPrefix(l, "@@") {
					got = append(got, l)
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("headers %q, want %q\n%s", got, tt.want, d)
			}
			applies(t, old, tt.new, d)
		})
	}
	if d := Diff("a", "b", old, old); d != "" {
		t.Errorf("equal inputs: %q, want \"\"", d)
	}
}

// TestRandomEditsApply: diffs of random edits apply cleanly with both git
// apply and GNU patch, and give back the new text.
func TestRandomEditsApply(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 40 {
		old := numbered(rng.IntN(80), nil)
		edits := map[int]string{}
		for range rng.IntN(8) + 1 {
			switch line := rng.IntN(90); rng.IntN(3) {
			case 0:
				edits[line] = ""
			case 1:
				edits[line] = fmt.Sprintf("changed %d\n", rng.IntN(1000))
			default:
				edits[line] = fmt.Sprintf("line %d\ninserted %d\n", line, rng.IntN(1000))
			}
		}
		new := numbered(rng.IntN(80), edits)
		if i%5 == 0 {
			new = strings.TrimSuffix(new, "\n") // no newline at the end
		}
		applies(t, old, new, Diff("old.txt", "new.txt", old, new))
	}
}

// numbered is n lines "line i", with the lines in edits replaced.
func numbered(n int, edits map[int]string) string {
	var b strings.Builder
	for i := range n {
		if e, ok := edits[i]; ok {
			b.WriteString(e)
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// applies checks that git apply and patch both accept diff exactly (no
// offset, no fuzz) and turn old into new.
func applies(t *testing.T, old, new, diff string) {
	t.Helper()
	if old == new {
		return
	}
	for _, tool := range [][]string{
		{"git", "apply", "--unidiff-zero", "-p0", "--verbose", "patch.diff"},
		{"patch", "-p0", "--fuzz=0", "-i", "patch.diff", "old.txt"},
	} {
		if _, err := exec.LookPath(tool[0]); err != nil {
			t.Fatalf("%s is needed to check the diffs: %v", tool[0], err)
		}
		dir := t.TempDir()
		write(t, filepath.Join(dir, "old.txt"), old)
		_, hunks, _ := strings.Cut(diff, "\n@@")
		write(t, filepath.Join(dir, "patch.diff"), "--- old.txt\n+++ old.txt\n@@"+hunks)
		cmd := exec.Command(tool[0], tool[1:]...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "offset") || strings.Contains(string(out), "fuzz") {
			t.Fatalf("%s: %v\n%s\ndiff:\n%s", tool[0], err, out, diff)
		}
		got, err := os.ReadFile(filepath.Join(dir, "old.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != new {
			t.Fatalf("%s turned old into %q, want %q\ndiff:\n%s", tool[0], got, new, diff)
		}
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
