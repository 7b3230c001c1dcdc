// Package envlimit is the one rule for the runtime's process-wide limits
// on what a hostile file may make it allocate (the .npy header's length,
// an image's pixels): a default, which an environment variable replaces
// and a call of the program's (Set) replaces in turn. A variable's value
// is a whole number from 1 to the limit's maximum; empty is unset, and
// anything else is an error naming the variable, which every use of the
// limit returns.
package envlimit

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
)

// Limit is one such limit. Its methods are safe for concurrent use.
type Limit struct {
	name      string // the environment variable
	unit      string // what it counts, for messages: "characters", "pixels"
	def, most int64
	env       func() (int64, error) // the variable's value, read once
	set       atomic.Int64          // Set's value, 0 when unset; any goroutine may set it
}

// New returns the limit that variable name sets, counting unit, from 1 to
// most, def when nothing sets it.
func New(name, unit string, def, most int64) *Limit {
	l := &Limit{name: name, unit: unit, def: def, most: most}
	l.env = sync.OnceValues(func() (int64, error) { return l.From(os.Getenv) })
	return l
}

// From reads the limit's variable through getenv: its value, or the
// default when it is unset or empty.
func (l *Limit) From(getenv func(string) string) (int64, error) {
	v := getenv(l.name)
	if v == "" {
		return l.def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > l.most {
		return 0, fmt.Errorf("environment %s=%q: want a number of %s from 1 to %d", l.name, v, l.unit, l.most)
	}
	return n, nil
}

// Set sets the limit over the variable; n < 1 undoes it, and n above the
// maximum is taken as the maximum.
func (l *Limit) Set(n int64) { l.set.Store(min(max(n, 0), l.most)) }

// Get returns the limit: Set's value, else the variable's, else the
// default. The error is that of a bad variable.
func (l *Limit) Get() (int64, error) {
	if n := l.set.Load(); n > 0 {
		return n, nil
	}
	return l.env()
}
