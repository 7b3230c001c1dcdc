package storage

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Hinter is a root that can read objects, or byte ranges of them, ahead.
// Remote roots opened by Open are Hinters.
type Hinter interface {
	// Hint says that object name will be read whole (ReadAll, Lend) soon,
	// about how many bytes it holds (expect; 0 when unknown) and the most
	// it may hold (max, as ReadAll's): a larger one is not read ahead.
	Hint(name string, expect, max int64)
	// HintRange says that bytes [off, off+n) of object name will be read
	// soon (ReadAt or LendRange of exactly that range): an inner chunk of
	// a zarr shard, found through the shard's index.
	HintRange(name string, off, n int64)
}

// Read-ahead's environment variables and defaults.
const (
	AheadEnv         = "LOADERGEN_READAHEAD_MB" // the memory bound of objects read ahead, process-wide; 0 turns read-ahead off
	DefaultAheadMiB  = 512
	AheadRequests    = 64             // requests in flight at most, process-wide
	aheadStale       = time.Minute    // a fetched object unread this long is dropped (an epoch stopped early)
	aheadExpectGuess = int64(1) << 20 // the bytes counted for an object of unknown size until it arrives
)

// Lender is a root that can lend the bytes of an object it read ahead,
// rather than copying them into the caller's buffer as ReadAll does.
// Remote roots opened by Open are Lenders.
type Lender interface {
	// Lend returns object name's bytes, which the caller must not change,
	// and release, which it calls once when done with them. It waits for
	// an object in flight, until ctx is done. release is nil (and data
	// too) when the object was neither hinted nor is held, or did not fit
	// the read-ahead's bound: read it with ReadAll then. An object larger
	// than its hint's max is an error wrapping ErrTooLarge.
	Lend(ctx context.Context, name string) (data []byte, release func(), err error)
	// LendRange is Lend for bytes [off, off+n) of object name, hinted by
	// HintRange.
	LendRange(ctx context.Context, name string, off, n int64) (data []byte, release func(), err error)
}

// ahead is a remote root whose reads of hinted objects come from the
// process's read-ahead.
type ahead struct {
	Root
	ra  *readAhead
	own *owner // shared with the roots Sub makes of it
	sub bool   // made by Sub: Close leaves own to the root it came from
}

// owner is what a root that Open returned has in the read-ahead: the
// entries it hinted are fetched under ctx, which its Close cancels.
type owner struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// withAhead wraps remote root r in the process's read-ahead, unless
// LOADERGEN_READAHEAD_MB is 0.
func withAhead(r Root) (Root, error) {
	ra, err := processAhead()
	if err != nil || ra == nil {
		return r, err
	}
	return newAhead(r, ra), nil
}

// newAhead returns r reading ahead through ra, as a new owner.
func newAhead(r Root, ra *readAhead) *ahead {
	ctx, cancel := context.WithCancel(context.Background())
	return &ahead{Root: r, ra: ra, own: &owner{ctx: ctx, cancel: cancel}}
}

// Hint queues object name, of at most max bytes, for reading ahead.
func (a *ahead) Hint(name string, expect, max int64) {
	a.ra.hint(a.own, a.Root, name, 0, -1, expect, max)
}

// HintRange queues bytes [off, off+n) of object name for reading ahead.
func (a *ahead) HintRange(name string, off, n int64) {
	if off >= 0 && n > 0 {
		a.ra.hint(a.own, a.Root, name, off, n, n, n)
	}
}

// ReadAll copies object name from the read-ahead into buf when it was
// hinted, waiting for it if it is in flight, and else reads it.
func (a *ahead) ReadAll(ctx context.Context, name string, buf []byte, max int64) ([]byte, error) {
	f, data, err := a.ra.lend(ctx, aheadKey(a.Root.URL(name), 0, -1))
	if f == nil {
		if err != nil {
			return buf[:0], fmt.Errorf("read %s: %w", a.Root.URL(name), err)
		}
		return a.Root.ReadAll(ctx, name, buf, max)
	}
	defer a.ra.release(f)
	if int64(len(data)) > max {
		return buf[:0], fmt.Errorf("read %s: %w", a.Root.URL(name), errTooLarge(int64(len(data)), max))
	}
	return append(buf[:0], data...), err
}

// ReadAt copies bytes [off, off+len(p)) of object name from the
// read-ahead into p when that range was hinted, waiting for them if they
// are in flight, and else reads them.
func (a *ahead) ReadAt(ctx context.Context, name string, p []byte, off int64) error {
	f, data, err := a.ra.lend(ctx, aheadKey(a.Root.URL(name), off, int64(len(p))))
	if f == nil {
		if err != nil {
			return fmt.Errorf("read %s: %w", a.Root.URL(name), err)
		}
		return a.Root.ReadAt(ctx, name, p, off)
	}
	copy(p, data)
	a.ra.release(f)
	return err
}

// Lend lends object name's bytes from the read-ahead when it was hinted.
func (a *ahead) Lend(ctx context.Context, name string) ([]byte, func(), error) {
	return a.lendKey(ctx, aheadKey(a.Root.URL(name), 0, -1))
}

// LendRange lends bytes [off, off+n) of object name from the read-ahead
// when that range was hinted.
func (a *ahead) LendRange(ctx context.Context, name string, off, n int64) ([]byte, func(), error) {
	return a.lendKey(ctx, aheadKey(a.Root.URL(name), off, n))
}

// lendKey lends the bytes of read-ahead entry key (see aheadKey).
func (a *ahead) lendKey(ctx context.Context, key string) ([]byte, func(), error) {
	f, data, err := a.ra.lend(ctx, key)
	if f == nil || err != nil {
		if f != nil {
			a.ra.release(f)
		}
		return nil, nil, err
	}
	return data, func() { a.ra.release(f) }, nil
}

// Sub keeps the read-ahead, and the owner of what it holds.
func (a *ahead) Sub(dir string) Root {
	return &ahead{Root: a.Root.Sub(dir), ra: a.ra, own: a.own, sub: true}
}

// Close drops what the root (with its Subs) hinted: queued fetches,
// fetches in flight once cancelled, and fetched bytes (those a reader
// holds when their reader releases them). It returns once none of its
// fetches runs.
func (a *ahead) Close() error {
	if !a.sub {
		a.ra.close(a.own)
	}
	return a.Root.Close()
}

// aheadKey names a read-ahead entry: object u (a URL) whole when n < 0,
// else its bytes [off, off+n), as u#bytes=FIRST-LAST (HTTP's Range, last
// byte included).
func aheadKey(u string, off, n int64) string {
	if n < 0 {
		return u
	}
	return u + "#bytes=" + strconv.FormatInt(off, 10) + "-" + strconv.FormatInt(off+n-1, 10)
}

// sizedReader is a root that reads an object whole, of at most max bytes
// as ReadAll does, into a buffer it asks for once it knows the object's
// size (an HTTP response's Content-Length, before its body): buffer(n)
// returns an empty buffer of capacity n or more, or an error that ends
// the read; n is -1 when the server gives no length (the read then grows
// the buffer as it reads). buffer is called once per attempt, never for
// more than max bytes.
type sizedReader interface {
	readSized(ctx context.Context, name string, max int64, buffer func(n int64) ([]byte, error)) ([]byte, error)
}

// readSized reads object name of r whole, of at most max bytes, into the
// buffer that buffer gives for its size when r is a sizedReader, else
// (ReadAll) into the one it gives for an unknown size.
func readSized(ctx context.Context, r Root, name string, max int64, buffer func(n int64) ([]byte, error)) ([]byte, error) {
	if sr, ok := r.(sizedReader); ok {
		return sr.readSized(ctx, name, max, buffer)
	}
	buf, err := buffer(-1)
	if err != nil {
		return nil, err
	}
	return r.ReadAll(ctx, name, buf, max)
}

// errNoRoom ends a fetch whose object, its size known, does not fit the
// read-ahead's bound: the reader fetches it itself.
var errNoRoom = errors.New("no room in the read-ahead's memory bound")

// fetch is one object, or one byte range of an object, read ahead.
type fetch struct {
	own  *owner // the root that hinted it: its Close removes it
	root Root
	name string
	// off and n are the range's first byte and length; n is -1 for the
	// whole object, of at most max bytes. key is aheadKey's name of the
	// entry.
	off, n, max int64
	key         string
	// expect is the bytes counted for it: the hint's estimate until its
	// size is known, then its buffer's capacity.
	expect  int64
	started bool          // a fetcher took it from the queue
	done    chan struct{} // closed when data and err are set
	data    []byte        // never changed once done, until recycled (see lent)
	err     error
	at      time.Time     // when it arrived
	read    *list.Element // in readAhead.read once it was read, else nil
	// lent counts the readers that found it and have not released it
	// (waiting for it, or using data); gone is set when it leaves
	// readAhead.entries. data goes back to the buffer pool when both
	// hold: lent 0 and gone.
	lent int
	gone bool
}

// readAhead reads hinted objects and byte ranges, at most AheadRequests
// at a time and within a memory bound, and holds them until they are read, and then
// while the bound has room: a chunk that several crops read is often
// evicted from the chunk cache between two of them (or was cached when
// the later crop was hinted), and its second read then costs no request.
// Objects read are dropped least recently read first when a hint or an
// arriving object needs their room, and their buffers are recycled for
// later fetches once no reader holds them.
type readAhead struct {
	budget int64
	// mu guards the fields below and the fields of their entries but
	// root, name and done. Hint adds entries and queues them and drops
	// read ones for room, the fetchers (at most AheadRequests goroutines,
	// each started by hint and ending when the queue is empty) take
	// queued ones, count them at their size once known and complete them,
	// lend moves them to read (or removes those it finds queued or
	// failed), release recycles dropped ones and close removes those of
	// a closed owner; every change happens under mu.
	mu       sync.Mutex
	entries  map[string]*fetch // by aheadKey
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

// hint queues object name of root r, of owner own (bytes [off, off+n) of
// it; n < 0: all of it, of at most max bytes), unless it is held already
// (a read one is then the last to be dropped), the memory bound is
// reached (then the object is read when needed) or own is closed.
func (ra *readAhead) hint(own *owner, r Root, name string, off, n, expect, max int64) {
	if expect <= 0 {
		expect = aheadExpectGuess
	}
	key := aheadKey(r.URL(name), off, n)
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if own.ctx.Err() != nil {
		return
	}
	if f, ok := ra.entries[key]; ok {
		if f.read != nil {
			ra.read.MoveToBack(f.read)
		}
		return
	}
	if !ra.makeRoom(expect) {
		return
	}
	f := &fetch{own: own, root: r, name: name, off: off, n: n, max: max, key: key, expect: expect, done: make(chan struct{})}
	ra.entries[key] = f
	ra.queue = append(ra.queue, f)
	ra.held += expect
	if ra.fetchers < AheadRequests {
		ra.fetchers++
		go ra.fetcher()
	}
}

// makeRoom drops read objects, least recently read first, then stale
// ones, until n more bytes fit the bound, and reports whether they do.
// Called with mu held.
func (ra *readAhead) makeRoom(n int64) bool {
	for ra.held+n > ra.budget && ra.read.Len() > 0 {
		ra.remove(ra.read.Front().Value.(*fetch))
	}
	if ra.held+n > ra.budget {
		ra.dropStale()
	}
	return ra.held+n <= ra.budget
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
		ra.fetch(f.own.ctx, f)
	}
}

// fetch reads started entry f within ctx, into a recycled buffer counted
// at its capacity once the object's size is known (a range's, before it
// is read), and completes it. An entry in flight is never removed, so f
// is in entries throughout.
func (ra *readAhead) fetch(ctx context.Context, f *fetch) {
	var data []byte
	var err error
	if f.n >= 0 {
		if data, err = ra.reserve(f, f.n); err == nil {
			data = data[:f.n]
			err = f.root.ReadAt(ctx, f.name, data, f.off)
		}
	} else {
		var last []byte // an earlier attempt's buffer, free again
		limit := min(f.max, ra.budget)
		data, err = readSized(ctx, f.root, f.name, limit, func(n int64) ([]byte, error) {
			putBuf(last)
			var err error
			last, err = ra.reserve(f, n)
			return last, err
		})
		if limit < f.max && errors.Is(err, ErrTooLarge) {
			err = errNoRoom // the reader may take more than the bound holds
		}
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if err != nil {
		putBuf(data)
		data = nil
	} else if c := int64(cap(data)); c != f.expect { // its size was not known before it arrived
		ra.held += c - f.expect
		f.expect = c
	}
	f.data, f.err, f.at = data, err, time.Now()
	close(f.done)
}

// reserve counts fetch f at the capacity of the buffer for its n bytes,
// dropping read objects for the room, and returns that buffer; errNoRoom
// when the bound has no room for it (f is then counted at 0 bytes). n < 0
// (size unknown) keeps the estimate and reads into a growing buffer.
func (ra *readAhead) reserve(f *fetch, n int64) ([]byte, error) {
	if n < 0 {
		return nil, nil
	}
	size := n
	if n <= largeBuf {
		c, _ := bufClass(int(n))
		size = int64(c)
	}
	ra.mu.Lock()
	ra.held -= f.expect
	f.expect = 0
	fits := ra.makeRoom(size)
	if fits {
		ra.held += size
		f.expect = size
	}
	ra.mu.Unlock()
	if !fits {
		return nil, errNoRoom
	}
	return getBuf(int(n)), nil
}

// lend finds entry key (see aheadKey) and returns it with its bytes (or
// the error of its fetch), waiting for them if they are in flight or
// reading them itself if they are still queued, and keeps them for later
// reads; f is nil when key was not hinted, did not fit the bound or was
// cancelled by its owner's Close (then the caller reads it), or (with
// ctx's error) when ctx was done first. A failed fetch is returned once
// and forgotten. The caller releases f once done with data.
func (ra *readAhead) lend(ctx context.Context, key string) (f *fetch, data []byte, err error) {
	ra.mu.Lock()
	f, hinted := ra.entries[key]
	if !hinted {
		ra.mu.Unlock()
		return nil, nil, nil
	}
	f.lent++
	queued := !f.started
	if queued {
		i := slices.Index(ra.queue, f)
		ra.queue = slices.Delete(ra.queue, i, i+1)
		f.started = true
	}
	ra.mu.Unlock()
	if queued {
		fetchCtx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(f.own.ctx, cancel) // its owner's Close stops it too
		ra.fetch(fetchCtx, f)
		stop()
		cancel()
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		ra.release(f)
		return nil, nil, ctx.Err()
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	switch {
	case f.err != nil:
		if !f.gone {
			ra.remove(f)
		}
		if errors.Is(f.err, errNoRoom) || errors.Is(f.err, context.Canceled) && ctx.Err() == nil {
			f.lent--
			return nil, nil, nil
		}
		return f, nil, f.err
	case f.gone: // dropped meanwhile; its bytes wait for the release
	case f.read == nil:
		f.read = ra.read.PushBack(f)
	default:
		ra.read.MoveToBack(f.read)
	}
	return f, f.data, nil
}

// release ends a lend of f's bytes, recycling them if f was dropped and
// this was its last reader.
func (ra *readAhead) release(f *fetch) {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	f.lent--
	ra.recycle(f)
}

// recycle returns the buffer of f, dropped and released, to the pool.
// Called with mu held.
func (ra *readAhead) recycle(f *fetch) {
	if f.gone && f.lent == 0 && f.data != nil {
		putBuf(f.data)
		f.data = nil
	}
}

// close drops the entries of owner own, whose fetches it cancels: queued
// ones and fetched ones at once (their bytes recycled when no reader
// holds them), those in flight once their fetches end, which it waits
// for.
func (ra *readAhead) close(own *owner) {
	own.cancel()
	ra.mu.Lock()
	ra.queue = slices.DeleteFunc(ra.queue, func(f *fetch) bool { return f.own == own })
	var flying []*fetch
	for _, f := range ra.entries {
		if f.own != own {
			continue
		}
		select {
		case <-f.done:
		default:
			if f.started {
				flying = append(flying, f)
				continue
			}
		}
		ra.remove(f)
	}
	ra.mu.Unlock()
	for _, f := range flying {
		<-f.done
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	for _, f := range flying {
		if !f.gone {
			ra.remove(f)
		}
	}
}

// remove forgets entry f, done (read, stale or failed), queued or its
// owner closed. Called with mu held.
func (ra *readAhead) remove(f *fetch) {
	delete(ra.entries, f.key)
	ra.held -= f.expect
	f.gone = true
	if f.read != nil {
		ra.read.Remove(f.read)
		f.read = nil
	}
	ra.recycle(f)
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
