// Package unified writes unified diffs (the "diff -u" format that patch and
// git apply read) from the line diff of go-udiff's lcs package.
//
// go-udiff's own Unified (v0.4.1) miscounts the new side's line numbers
// after a hunk that joins two changes (it prints "@@ -41,10 +40,10 @@" with
// no line added before it), so this package numbers hunks itself: each
// hunk's old and new starts come from the line indices of its first change,
// shifted by the lines every earlier change added or removed.
package unified

import (
	"fmt"
	"strings"

	"github.com/aymanbagabas/go-udiff/lcs"
)

// Context is the number of unchanged lines shown around each change.
const Context = 3

// Diff returns the unified diff that turns old into new, with the given
// file labels, or "" when they are equal.
func Diff(oldLabel, newLabel, old, new string) string {
	a, b := lines(old), lines(new)
	changes := lcs.DiffLines(a, b)
	if len(changes) == 0 {
		return ""
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldLabel, newLabel)
	for len(changes) > 0 {
		n := hunkLen(changes)
		writeHunk(&out, a, b, changes[:n])
		changes = changes[n:]
	}
	return out.String()
}

// hunkLen is how many of changes go into one hunk: the following change
// joins while at most 2*Context unchanged lines separate it from the last.
func hunkLen(changes []lcs.Diff) int {
	n := 1
	for n < len(changes) && changes[n].Start-changes[n-1].End <= 2*Context {
		n++
	}
	return n
}

// writeHunk writes one hunk of changes, with context, and its header.
func writeHunk(out *strings.Builder, a, b []string, changes []lcs.Diff) {
	first, last := changes[0], changes[len(changes)-1]
	// The new side lines up with the old side before the first change:
	// the same count of unchanged lines precede it on both sides.
	aStart := max(first.Start-Context, 0)
	bStart := first.ReplStart - (first.Start - aStart)
	aEnd := min(last.End+Context, len(a))
	bEnd := last.ReplEnd + (aEnd - last.End)

	var body strings.Builder
	at := aStart
	for _, c := range changes {
		writeLines(&body, ' ', a[at:c.Start])
		writeLines(&body, '-', a[c.Start:c.End])
		writeLines(&body, '+', b[c.ReplStart:c.ReplEnd])
		at = c.End
	}
	writeLines(&body, ' ', a[at:aEnd])
	fmt.Fprintf(out, "@@ -%s +%s @@\n", span(aStart, aEnd-aStart), span(bStart, bEnd-bStart))
	out.WriteString(body.String())
}

// span is a hunk's range of one side as GNU diff writes it: "start,count"
// with a 1-based start, the count left out when it is 1, and for an empty
// range the line before it ("0,0" at the top of the file).
func span(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, count)
}

// writeLines writes each line behind its mark, noting a last line without
// a newline as diff does.
func writeLines(out *strings.Builder, mark byte, ls []string) {
	for _, l := range ls {
		out.WriteByte(mark)
		out.WriteString(l)
		if !strings.HasSuffix(l, "\n") {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// lines splits s after each newline; a last line without one is kept.
func lines(s string) []string {
	ls := strings.SplitAfter(s, "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}
