package storage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// web is a root on a web server: object name is the URL base/name. It is
// read-only and cannot be listed. A name may end in a query, which its
// requests carry (a presigned object's, see Split) and messages do not.
type web struct {
	base   string // the root's URL, without a trailing slash, as requests use it
	shown  string // base redacted (see Redact): what URL and messages show
	client *http.Client
	retry  Retry
}

// OpenHTTP returns the root at URL loc (https:// or http://), which may
// hold a user and password (user:password@host: basic authentication).
// It makes no request: a wrong URL shows at the first read.
func OpenHTTP(loc string, o ...Options) (Root, error) {
	u, err := url.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Redact(loc), unwrapURL(err))
	}
	if u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%s: want http(s)://host/path, with no query or fragment (a presigned URL names an object, not a root)", Redact(loc))
	}
	opt := first(o)
	base := strings.TrimSuffix(loc, "/")
	return &web{base: base, shown: Redact(base), client: opt.client(), retry: opt.retry()}, nil
}

// unwrapURL returns the error within a *url.Error, which names the URL it
// was about whole, secrets included; the errors of this package name the
// URL redacted instead.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// first returns the first of o, or zero Options.
func first(o []Options) Options {
	if len(o) == 0 {
		return Options{}
	}
	return o[0]
}

func (w *web) URL(name string) string {
	path, _, _ := strings.Cut(name, "?")
	return w.shown + escaped(path)
}

// request returns the URL that requests for object name go to.
func (w *web) request(name string) string {
	path, query, ok := strings.Cut(name, "?")
	if ok {
		query = "?" + query
	}
	return w.base + escaped(path) + query
}

// escaped returns "/" and path escaped for a URL, or "" for no path.
func escaped(path string) string {
	if path == "" {
		return ""
	}
	return "/" + (&url.URL{Path: path}).EscapedPath()
}

// check refuses names whose path would leave the root (see checkName).
func (w *web) check(name string) error {
	path, _, _ := strings.Cut(name, "?")
	return checkName(path)
}

func (w *web) Sub(dir string) Root {
	c := *w
	dir = strings.TrimSuffix(dir, "/")
	c.base, c.shown = w.request(dir), w.URL(dir)
	return &c
}

func (w *web) Local() (string, bool) { return "", false }

// Close does nothing: a web root holds nothing of its own (its client's
// connections are the process's).
func (w *web) Close() error { return nil }

func (w *web) List(ctx context.Context, dir string) ([]string, error) {
	return nil, fmt.Errorf("%s: a web server cannot be listed: name its objects (a shard pattern, a manifest) instead", w.URL(dir))
}

// get makes one GET of name, for bytes [off, off+n) when n >= 0 (its last
// n bytes when off is -1), and
// hands the response to read; a 404 is fs.ErrNotExist, other statuses
// than 200 and 206 a StatusError.
func (w *web) get(a *attempt, method, name string, off, n int64, read func(*http.Response) error) error {
	req, err := http.NewRequestWithContext(a.ctx, method, w.request(name), nil)
	if err != nil {
		return unwrapURL(err)
	}
	switch {
	case off < 0: // the last n bytes
		req.Header.Set("Range", fmt.Sprintf("bytes=-%d", n))
	case n >= 0:
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return unwrapURL(err)
	}
	defer resp.Body.Close()
	a.alive()
	resp.Body = a.body(resp.Body)
	switch resp.StatusCode {
	case http.StatusOK, http.StatusPartialContent:
		return read(resp)
	case http.StatusRequestedRangeNotSatisfiable:
		if off < 0 {
			return errTail(w.URL(name), n, 0) // only an empty object has no suffix
		}
		return errShort(w.URL(name), off, n, 0)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096)) // lets the connection be reused
	return &StatusError{URL: w.URL(name), Status: resp.StatusCode}
}

func (w *web) ReadAll(ctx context.Context, name string, buf []byte, max int64) ([]byte, error) {
	return w.readSized(ctx, name, max, reuse(buf))
}

func (w *web) readSized(ctx context.Context, name string, max int64, buffer func(n int64) ([]byte, error)) ([]byte, error) {
	if err := w.check(name); err != nil {
		return nil, err
	}
	var buf []byte
	err := w.retry.do(ctx, func(a *attempt) error {
		return w.get(a, http.MethodGet, name, 0, -1, func(resp *http.Response) error {
			var err error
			buf, err = readSizedBody(resp.Body, resp.ContentLength, max, buffer)
			return err
		})
	})
	if err != nil {
		return buf, fmt.Errorf("read %s: %w", w.URL(name), err)
	}
	return buf, nil
}

func (w *web) ReadAt(ctx context.Context, name string, p []byte, off int64) error {
	if err := w.check(name); err != nil {
		return err
	}
	if len(p) == 0 {
		return nil
	}
	err := w.retry.do(ctx, func(a *attempt) error {
		return w.get(a, http.MethodGet, name, off, int64(len(p)), func(resp *http.Response) error {
			if resp.StatusCode == http.StatusOK { // the server ignored the range: skip to it
				if resp.ContentLength >= 0 && resp.ContentLength < off+int64(len(p)) {
					return errShort(w.URL(name), off, int64(len(p)), max(0, resp.ContentLength-off))
				}
				if _, err := io.CopyN(io.Discard, resp.Body, off); err != nil {
					return shortOrCut(w.URL(name), off, int64(len(p)), err)
				}
			} else if err := checkRange(resp.Header.Get("Content-Range"), off, int64(len(p))); err != nil {
				return fmt.Errorf("%s: %w", w.URL(name), err)
			}
			got, err := io.ReadFull(resp.Body, p)
			if err != nil {
				return shortOrCut(w.URL(name), off, int64(len(p)), fmt.Errorf("%d bytes: %w", got, err))
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", w.URL(name), err)
	}
	return nil
}

func (w *web) ReadTail(ctx context.Context, name string, p []byte) (int64, error) {
	if err := w.check(name); err != nil {
		return 0, err
	}
	n := int64(len(p))
	var size int64
	err := w.retry.do(ctx, func(a *attempt) error {
		return w.get(a, http.MethodGet, name, -1, n, func(resp *http.Response) error {
			cr := resp.Header.Get("Content-Range")
			if resp.StatusCode == http.StatusOK {
				cr = "" // the server ignored the range
			}
			var err error
			size, err = readTail(w.URL(name), cr, resp.ContentLength, resp.Body, p)
			return err
		})
	})
	if err != nil {
		return size, fmt.Errorf("read %s: %w", w.URL(name), err)
	}
	return size, nil
}

func (w *web) Size(ctx context.Context, name string) (int64, error) {
	size, _, err := w.stat(ctx, name)
	return size, err
}

// stat returns the size of object name and its version: its ETag, or
// else its Last-Modified.
func (w *web) stat(ctx context.Context, name string) (size int64, version string, err error) {
	if err := w.check(name); err != nil {
		return 0, "", err
	}
	err = w.retry.do(ctx, func(a *attempt) error {
		return w.get(a, http.MethodHead, name, 0, -1, func(resp *http.Response) error {
			if resp.ContentLength < 0 {
				return fmt.Errorf("%s: the server gave no Content-Length", w.URL(name))
			}
			size, version = resp.ContentLength, cmp.Or(resp.Header.Get("ETag"), resp.Header.Get("Last-Modified"))
			return nil
		})
	})
	if err != nil {
		return 0, "", fmt.Errorf("size of %s: %w", w.URL(name), err)
	}
	return size, version, nil
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
