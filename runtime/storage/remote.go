package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// A Requester makes the requests of a remote root for its Remote, one
// attempt each: Remote retries them (see Retry), reads their bodies and
// checks what they say against what was asked. A storage driver
// implements it over its protocol (runtime/storage/s3 over the AWS SDK,
// runtime/storage/https over net/http).
type Requester interface {
	// URL names object name for messages: a URL without its secrets (see
	// Redact).
	URL(name string) string
	// Check refuses a name that would leave the root (see CheckName), or
	// that names no object.
	Check(name string) error
	// Get asks for object name: whole when n < 0, else its bytes [off,
	// off+n), or its last n bytes when off is -1, as RangeHeader spells
	// them. The error of a missing object matches fs.ErrNotExist; a
	// server's refusal is a *StatusError (416 for a range the object does
	// not hold); a request that got no answer gives the transport's or the
	// context's error, unwrapped of what names the URL with its secrets.
	Get(ctx context.Context, name string, off, n int64) (*Response, error)
	// Stat returns the size of object name and its version: its ETag, or
	// else its Last-Modified, "" when the server gives neither. Its errors
	// are Get's.
	Stat(ctx context.Context, name string) (size int64, version string, err error)
}

// Response is a server's answer to a Requester's Get, which Remote reads
// and closes.
type Response struct {
	Body io.ReadCloser
	// Length is the body's declared length (Content-Length), -1 when the
	// server declared none.
	Length int64
	// Partial tells an answer of the range asked for (HTTP 206), whose
	// bytes Range says, from one of the whole object: a server may ignore
	// a range.
	Partial bool
	Range   string // a partial answer's Content-Range: "bytes first-last/size"
}

// RangeHeader spells the HTTP Range of a Requester's Get of bytes [off,
// off+n) ("bytes=off-last"), of the last n bytes when off is -1
// ("bytes=-n"), and "" for the whole object (n < 0).
func RangeHeader(off, n int64) string {
	switch {
	case off < 0:
		return fmt.Sprintf("bytes=-%d", n)
	case n >= 0:
		return fmt.Sprintf("bytes=%d-%d", off, off+n-1)
	}
	return ""
}

// Remote is what every remote root does the same way over its driver's
// Requester: ReadAll, ReadAt, ReadTail and Size, each a retried request
// whose answer is checked against what it asked for, and Local and Close.
// A driver's root embeds it and adds URL, List and Sub (and, for a
// writable root, Writable's methods).
type Remote struct {
	req   Requester
	retry Retry
}

// NewRemote returns the Remote of a root whose requests req makes,
// retried as retry says.
func NewRemote(req Requester, retry Retry) Remote { return Remote{req: req, retry: retry} }

// For returns r for another Requester, under the same retry policy: the
// Remote of a root that Sub made of r's.
func (r Remote) For(req Requester) Remote { return Remote{req: req, retry: r.retry} }

// Do runs op, a request of the root's driver other than its reads (a
// listing, a write), retried as the reads are; op's ctx bounds one
// attempt.
func (r Remote) Do(ctx context.Context, op func(ctx context.Context) error) error {
	return r.retry.do(ctx, func(a *attempt) error { return op(a.ctx) })
}

// Local returns false: a remote root is no local directory.
func (r Remote) Local() (string, bool) { return "", false }

// Close does nothing: a driver's root holds nothing of its own (its
// client is the process's); Open's layers above it hold what Close stops.
func (r Remote) Close() error { return nil }

// get makes one Get of attempt a, whose body's reads put off the
// attempt's idle deadline.
func (r Remote) get(a *attempt, name string, off, n int64) (*Response, error) {
	resp, err := r.req.Get(a.ctx, name, off, n)
	if err != nil {
		return nil, err
	}
	a.alive()
	resp.Body = a.body(resp.Body)
	return resp, nil
}

// ReadAll reads object name whole, of at most max bytes, into buf.
func (r Remote) ReadAll(ctx context.Context, name string, buf []byte, max int64) ([]byte, error) {
	return r.readSized(ctx, name, max, reuse(buf))
}

func (r Remote) readSized(ctx context.Context, name string, max int64, buffer func(n int64) ([]byte, error)) ([]byte, error) {
	if err := r.req.Check(name); err != nil {
		return nil, err
	}
	var buf []byte
	err := r.retry.do(ctx, func(a *attempt) error {
		resp, err := r.get(a, name, 0, -1)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		buf, err = readSizedBody(resp.Body, resp.Length, max, buffer)
		return err
	})
	if err != nil {
		return buf, fmt.Errorf("read %s: %w", r.req.URL(name), err)
	}
	return buf, nil
}

// ReadAt reads bytes [off, off+len(p)) of object name into p, by one
// ranged request; of a server that ignores the range, it skips to them.
func (r Remote) ReadAt(ctx context.Context, name string, p []byte, off int64) error {
	if err := r.req.Check(name); err != nil {
		return err
	}
	if len(p) == 0 {
		return nil
	}
	u, n := r.req.URL(name), int64(len(p))
	err := r.retry.do(ctx, func(a *attempt) error {
		resp, err := r.get(a, name, off, n)
		if unsatisfiable(err) {
			return errShort(u, off, n, 0)
		}
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if !resp.Partial { // the server ignored the range: skip to it
			if resp.Length >= 0 && resp.Length < off+n {
				return errShort(u, off, n, max(0, resp.Length-off))
			}
			if _, err := io.CopyN(io.Discard, resp.Body, off); err != nil {
				return shortOrCut(u, off, n, err)
			}
		} else if err := checkRange(resp.Range, off, n); err != nil {
			return fmt.Errorf("%s: %w", u, err)
		}
		if got, err := io.ReadFull(resp.Body, p); err != nil {
			return shortOrCut(u, off, n, fmt.Errorf("%d bytes: %w", got, err))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", u, err)
	}
	return nil
}

// ReadTail reads the last len(p) bytes of object name into p, by one
// request for a suffix range, and returns the object's size.
func (r Remote) ReadTail(ctx context.Context, name string, p []byte) (int64, error) {
	if err := r.req.Check(name); err != nil {
		return 0, err
	}
	u, n := r.req.URL(name), int64(len(p))
	var size int64
	err := r.retry.do(ctx, func(a *attempt) error {
		resp, err := r.get(a, name, -1, n)
		if unsatisfiable(err) {
			return errTail(u, n, 0) // only an empty object has no suffix
		}
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		cr := resp.Range
		if !resp.Partial {
			cr = "" // the server ignored the range
		}
		size, err = readTail(u, cr, resp.Length, resp.Body, p)
		return err
	})
	if err != nil {
		return size, fmt.Errorf("read %s: %w", u, err)
	}
	return size, nil
}

// Size returns the size of object name.
func (r Remote) Size(ctx context.Context, name string) (int64, error) {
	size, _, err := r.stat(ctx, name)
	return size, err
}

// stat returns the size of object name and its version (see
// Requester.Stat), by one request: Fetch's check of a cached file.
func (r Remote) stat(ctx context.Context, name string) (size int64, version string, err error) {
	if err := r.req.Check(name); err != nil {
		return 0, "", err
	}
	err = r.retry.do(ctx, func(a *attempt) error {
		var err error
		size, version, err = r.req.Stat(a.ctx, name)
		return err
	})
	if err != nil {
		return 0, "", fmt.Errorf("size of %s: %w", r.req.URL(name), err)
	}
	return size, version, nil
}

// unsatisfiable reports whether err is a server's refusal of a range
// (HTTP 416): the object does not hold it.
func unsatisfiable(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status == http.StatusRequestedRangeNotSatisfiable
}

// reuse is the sizedReader buffer of a ReadAll into buf: buf itself, its
// capacity grown as readBody grows it.
func reuse(buf []byte) func(int64) ([]byte, error) {
	return func(int64) ([]byte, error) { return buf[:0], nil }
}

// readSizedBody reads a response body of declared length n (-1: none)
// and at most max bytes into the buffer that buffer gives for n: a
// declared length past max is refused before buffer is asked.
func readSizedBody(body io.Reader, n, max int64, buffer func(n int64) ([]byte, error)) ([]byte, error) {
	if n > max {
		return nil, errTooLarge(n, max)
	}
	buf, err := buffer(n)
	if err != nil {
		return nil, err
	}
	return readBody(body, n, max, buf)
}

// readBody reads a response body of declared length n (-1: none), at
// most max, into buf. A body without a declared length grows buf as it
// arrives, and is refused once it passes max.
func readBody(body io.Reader, n, max int64, buf []byte) ([]byte, error) {
	if n >= 0 {
		buf = slices.Grow(buf[:0], int(n))[:n]
		if _, err := io.ReadFull(body, buf); err != nil {
			return buf, fmt.Errorf("body cut short: %w", asCut(err))
		}
		return buf, nil
	}
	body = io.LimitReader(body, max+1) // a byte past max tells a body that runs past it
	buf = buf[:0]
	for {
		buf = slices.Grow(buf, 64<<10)
		m, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		switch {
		case int64(len(buf)) > max:
			return buf, errTooLarge(-1, max)
		case errors.Is(err, io.EOF):
			return buf, nil
		case err != nil:
			return buf, err
		}
	}
}

// asCut makes the EOF of a body that ends early an unexpected EOF, which
// is retried.
func asCut(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// shortOrCut is the error of a ranged read whose body ended early: the
// connection was cut (retried).
func shortOrCut(u string, off, n int64, err error) error {
	return fmt.Errorf("%s: bytes [%d, %d): body cut short: %w", u, off, off+n, asCut(err))
}

// checkRange checks a 206's Content-Range ("bytes first-last/total")
// against the bytes [off, off+n) asked for: fewer means the object ends
// first (ErrShort).
func checkRange(cr string, off, n int64) error {
	first, last, size, ok := parseRange(cr)
	if !ok || first != off {
		return fmt.Errorf("Content-Range %q for bytes %d-%d", cr, off, off+n-1)
	}
	if last-first+1 < n {
		return fmt.Errorf("bytes %d-%d of a %d-byte object: %w", off, off+n-1, size, ErrShort)
	}
	return nil
}

// parseRange reads a 206's Content-Range, "bytes first-last/size"; size
// is -1 when the server gives "*".
func parseRange(cr string) (first, last, size int64, ok bool) {
	spec, ok := strings.CutPrefix(cr, "bytes ")
	rng, total, ok2 := strings.Cut(spec, "/")
	lo, hi, ok3 := strings.Cut(rng, "-")
	first, err1 := strconv.ParseInt(lo, 10, 64)
	last, err2 := strconv.ParseInt(hi, 10, 64)
	size, err3 := strconv.ParseInt(total, 10, 64)
	if err3 != nil && total == "*" {
		size, err3 = -1, nil
	}
	return first, last, size, ok && ok2 && ok3 && err1 == nil && err2 == nil && err3 == nil
}

// readTail reads, into p, the last len(p) bytes of object u from the
// body of the answer to a request for them, and returns the object's
// size: a 206 with Content-Range cr, or the whole object, length bytes,
// when cr is "" (a server that ignores ranges, or one that answers an
// empty object so). An object shorter than p is an error wrapping
// ErrShort.
func readTail(u, cr string, length int64, body io.Reader, p []byte) (int64, error) {
	n := int64(len(p))
	first, last, size, ok := int64(0), length-1, length, length >= 0
	if cr != "" {
		first, last, size, ok = parseRange(cr)
	}
	if !ok || size < 0 || last != size-1 || cr != "" && first != max(size-n, 0) {
		return 0, fmt.Errorf("%s: Content-Range %q, Content-Length %d, for the last %d bytes", u, cr, length, n)
	}
	if size < n {
		return size, errTail(u, n, size)
	}
	if _, err := io.CopyN(io.Discard, body, size-n-first); err != nil {
		return size, shortOrCut(u, size-n, n, err)
	}
	if got, err := io.ReadFull(body, p); err != nil {
		return size, shortOrCut(u, size-n, n, fmt.Errorf("%d bytes: %w", got, err))
	}
	return size, nil
}
