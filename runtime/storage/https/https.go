// Package https is the storage driver of web servers: importing it
// registers the schemes https and http with runtime/storage (see
// storage.Register), whose Open then reads roots at https://host/path,
// by ranged GETs retried as storage.Retry says. A web root is read-only
// and cannot be listed. Generated loaders import it.
package https

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/loadergen/loadergen/runtime/storage"
)

func init() {
	storage.Register("https", open)
	storage.Register("http", open)
}

// web is a root on a web server: object name is the URL base/name. A
// name may end in a query, which its requests carry (a presigned
// object's, see storage.Split) and messages do not.
type web struct {
	storage.Remote
	base   string // the root's URL, without a trailing slash, as requests use it
	shown  string // base redacted (see storage.Redact): what URL and messages show
	client *http.Client
}

// Open returns the root at URL loc (https:// or http://), which may hold
// a user and password (user:password@host: basic authentication), under
// o's retry policy and HTTP client (the first of o; none: the defaults).
// It makes no request: a wrong URL shows at the first read.
func Open(loc string, o ...storage.Options) (storage.Root, error) {
	var opt storage.Options
	if len(o) > 0 {
		opt = o[0]
	}
	return open(loc, opt)
}

func open(loc string, o storage.Options) (storage.Root, error) {
	u, err := url.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", storage.Redact(loc), unwrapURL(err))
	}
	if u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%s: want http(s)://host/path, with no query or fragment (a presigned URL names an object, not a root)", storage.Redact(loc))
	}
	base := strings.TrimSuffix(loc, "/")
	w := &web{base: base, shown: storage.Redact(base), client: cmp.Or(o.Client, defaultClient)}
	w.Remote = storage.NewRemote(w, o.RetryPolicy())
	return w, nil
}

// defaultClient is the client of web roots opened without one. It asks
// for no compression (see storage.ConfigureTransport).
var defaultClient = &http.Client{Transport: func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	storage.ConfigureTransport(t)
	return t
}()}

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

// Check refuses names whose path would leave the root (see
// storage.CheckName).
func (w *web) Check(name string) error {
	path, _, _ := strings.Cut(name, "?")
	return storage.CheckName(path)
}

func (w *web) Sub(dir string) storage.Root {
	c := *w
	dir = strings.TrimSuffix(dir, "/")
	c.base, c.shown = w.request(dir), w.URL(dir)
	c.Remote = w.Remote.For(&c)
	return &c
}

func (w *web) List(ctx context.Context, dir string) ([]string, error) {
	return nil, fmt.Errorf("%s: a web server cannot be listed: name its objects (a shard pattern, a manifest) instead", w.URL(dir))
}

// do makes one request of name with method, for bytes [off, off+n) when
// n >= 0 (its last n bytes when off is -1), and returns the answer when
// it is 200 or 206; a 404 is fs.ErrNotExist, another status a
// storage.StatusError.
func (w *web) do(ctx context.Context, method, name string, off, n int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, w.request(name), nil)
	if err != nil {
		return nil, unwrapURL(err)
	}
	if r := storage.RangeHeader(off, n); r != "" {
		req.Header.Set("Range", r)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return nil, unwrapURL(err)
	}
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent {
		return resp, nil
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096)) // lets the connection be reused
	resp.Body.Close()
	return nil, &storage.StatusError{URL: w.URL(name), Status: resp.StatusCode}
}

// Get makes one GET of name (see storage.Requester).
func (w *web) Get(ctx context.Context, name string, off, n int64) (*storage.Response, error) {
	resp, err := w.do(ctx, http.MethodGet, name, off, n)
	if err != nil {
		return nil, err
	}
	return &storage.Response{Body: resp.Body, Length: resp.ContentLength,
		Partial: resp.StatusCode == http.StatusPartialContent, Range: resp.Header.Get("Content-Range")}, nil
}

// Stat makes one HEAD of name: its size, and its ETag or else its
// Last-Modified.
func (w *web) Stat(ctx context.Context, name string) (int64, string, error) {
	resp, err := w.do(ctx, http.MethodHead, name, 0, -1)
	if err != nil {
		return 0, "", err
	}
	resp.Body.Close()
	if resp.ContentLength < 0 {
		return 0, "", fmt.Errorf("%s: the server gave no Content-Length", w.URL(name))
	}
	return resp.ContentLength, cmp.Or(resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")), nil
}
