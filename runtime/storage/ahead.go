package storage

import (
	"container/list"
	"slices"
	"sync"
	"time"
)

// Hinter is a root that can read objects ahead: Hint says that object
// name will be read whole (ReadAll) soon, and about how many bytes it
// holds (expect; 0 when unknown). Remote roots opened by Open are Hinters.
type Hinter interface {
	Hint(name string, expect int64)
}

// Read-ahead's environment variables and defaults.
const (
	AheadEnv         = "LOADERGEN_READAHEAD_MB" // the memory bound of objects read ahead, process-wide; 0 turns read-ahead off
	DefaultAheadMiB  = 512
	AheadRequests    = 64             // requests in flight at most, process-wide
	aheadStale       = time.Minute    // a fetched object unread this long is dropped (an epoch stopped early)
	aheadExpectGuess = int64(1) << 20 // the bytes counted for an object of unknown size until it arrives
)

// ahead is a remote root whose reads of hinted objects come from the
// process's read-ahead.
type ahead struct {
	Root
	ra *readAhead
}

// withAhead wraps remote root r in the process's read-ahead, unless
// LOADERGEN_READAHEAD_MB is 0.
func withAhead(r Root) (Root, error) {
	ra, err := processAhead()
	if err != nil || ra == nil {
		return r, err
	}
	return &ahead{Root: r, ra: ra}, nil
}

// Hint queues object name for reading ahead.
func (a *ahead) Hint(name string, expect int64) { a.ra.hint(a.Root, name, expect) }

// ReadAll takes object name from the read-ahead when it was hinted,
// waiting for it if it is in flight, and else reads it.
func (a *ahead) ReadAll(name string, buf []byte) ([]byte, error) {
	if data, err, ok := a.ra.take(a.Root.URL(name), buf); ok {
		return data, err
	}
	return a.Root.ReadAll(name, buf)
}

// Sub keeps the read-ahead.
func (a *ahead) Sub(dir string) Root { return &ahead{Root: a.Root.Sub(dir), ra: a.ra} }

// fetch is one object read ahead.
type fetch struct {
	root    Root
	name    string
	expect  int64         // the bytes counted for it until it arrives
	started bool          // a fetcher took it from the queue
	done    chan struct{} // closed when data and err are set
	data    []byte        // never changed once done: reads copy it
	err     error
	at      time.Time     // when it arrived
	read    *list.Element // in readAhead.read once it was read, else nil
}

// readAhead reads hinted objects, at most AheadRequests at a time and
// within a memory bound, and holds them until they are read, and then
// while the bound has room: a chunk that several crops read is often
// evicted from the chunk cache between two of them (or was cached when
// the later crop was hinted), and its second read then costs a copy, not
// a request. Objects read are dropped least recently read first when a
// hint needs their room.
type readAhead struct {
	budget int64
	// mu guards the fields below. Hint adds entries and queues them and
	// drops read ones for room, the fetchers (at most AheadRequests
	// goroutines, each started by hint and ending when the queue is
	// empty) take queued ones and complete them, take moves them to read
	// (or removes those it finds queued or failed); every change happens
	// under mu.
	mu       sync.Mutex
	entries  map[string]*fetch // by URL
	queue    []*fetch          // hinted, not yet started
	read     list.List         // of *fetch: the entries read, least recently read first
	held     int64             // bytes counted for the entries
	fetchers int
}

// processAhead returns the process's read-ahead, or nil when the
// environment turns it off (LOADERGEN_READAHEAD_MB=0).
var processAhead = sync.OnceValues(func() (*readAhead, error) {
	mib, err := envMiB(AheadEnv, DefaultAheadMiB, 0)
	if err != nil || mib == 0 {
		return nil, err
	}
	return newReadAhead(mib << 20), nil
})

func newReadAhead(budget int64) *readAhead {
	return &readAhead{budget: budget, entries: map[string]*fetch{}}
}

// hint queues object name of root r, unless it is held already (a read
// one is then the last to be dropped) or the memory bound is reached
// (then the object is read when needed).
func (ra *readAhead) hint(r Root, name string, expect int64) {
	if expect <= 0 {
		expect = aheadExpectGuess
	}
	u := r.URL(name)
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if f, ok := ra.entries[u]; ok {
		if f.read != nil {
			ra.read.MoveToBack(f.read)
		}
		return
	}
	for ra.held+expect > ra.budget && ra.read.Len() > 0 {
		ra.remove(ra.read.Front().Value.(*fetch))
	}
	if ra.held+expect > ra.budget {
		if ra.dropStale(); ra.held+expect > ra.budget {
			return
		}
	}
	f := &fetch{root: r, name: name, expect: expect, done: make(chan struct{})}
	ra.entries[u] = f
	ra.queue = append(ra.queue, f)
	ra.held += expect
	if ra.fetchers < AheadRequests {
		ra.fetchers++
		go ra.fetcher()
	}
}

// fetcher reads queued objects until the queue is empty.
func (ra *readAhead) fetcher() {
	for {
		ra.mu.Lock()
		if len(ra.queue) == 0 {
			ra.fetchers--
			ra.mu.Unlock()
			return
		}
		f := ra.queue[0]
		ra.queue[0] = nil
		ra.queue = ra.queue[1:]
		f.started = true
		ra.mu.Unlock()
		ra.fetch(f)
	}
}

// fetch reads started entry f and completes it.
func (ra *readAhead) fetch(f *fetch) {
	data, err := f.root.ReadAll(f.name, nil)
	ra.mu.Lock()
	defer ra.mu.Unlock()
	f.data, f.err, f.at = data, err, time.Now()
	if ra.entries[f.root.URL(f.name)] == f { // not dropped meanwhile
		ra.held += int64(len(data)) - f.expect
		f.expect = int64(len(data))
	}
	close(f.done)
}

// take returns object u's bytes in buf (grown as needed), waiting for
// them if they are in flight or reading them itself if they are still
// queued, and keeps them for later reads; ok is false when u was not
// hinted. A failed fetch is returned once and forgotten.
func (ra *readAhead) take(u string, buf []byte) (data []byte, err error, ok bool) {
	ra.mu.Lock()
	f, hinted := ra.entries[u]
	queued := hinted && !f.started
	if queued {
		i := slices.Index(ra.queue, f)
		ra.queue = slices.Delete(ra.queue, i, i+1)
		f.started = true
	}
	ra.mu.Unlock()
	if !hinted {
		return buf, nil, false
	}
	if queued {
		ra.fetch(f)
	}
	<-f.done
	ra.mu.Lock()
	if ra.entries[u] == f { // not dropped meanwhile
		if f.err != nil {
			ra.remove(f)
		} else if f.read == nil {
			f.read = ra.read.PushBack(f)
		} else {
			ra.read.MoveToBack(f.read)
		}
	}
	ra.mu.Unlock()
	if f.err != nil {
		return buf, f.err, true
	}
	return append(buf[:0], f.data...), nil, true
}

// remove forgets entry f, done (read, stale or failed). Called with mu
// held.
func (ra *readAhead) remove(f *fetch) {
	delete(ra.entries, f.root.URL(f.name))
	ra.held -= f.expect
	if f.read != nil {
		ra.read.Remove(f.read)
		f.read = nil
	}
}

// dropStale forgets fetched objects nobody read for aheadStale after
// they arrived. Called with mu held.
func (ra *readAhead) dropStale() {
	now := time.Now()
	for _, f := range ra.entries {
		select {
		case <-f.done:
			if f.read == nil && now.Sub(f.at) > aheadStale {
				ra.remove(f)
			}
		default:
		}
	}
}
