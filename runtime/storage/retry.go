package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"syscall"
	"time"
)

// Retry is how a remote root retries a request that failed for a reason
// that may pass: throttling (HTTP 429, S3's 503 SlowDown), a server error
// (500, 502, 503, 504), a timeout, or a connection refused, reset or cut
// mid-body. Other failures (403, 404, a bad request) fail at once.
type Retry struct {
	Attempts int           // tries in all, the first included
	First    time.Duration // the wait after the first failure; it doubles after each, up to Max
	Max      time.Duration
	Timeout  time.Duration // the limit of one attempt, its body read included
}

// DefaultRetry is the policy of roots opened with zero Options: 10
// attempts, waits from 50 ms doubling to at most 5 s (with full jitter, as
// AWS advises: a random wait up to the bound), 60 s per attempt. A server
// that keeps failing is given up on after 9 waits: their bounds add up to
// 16.35 s, and they last half that on average.
var DefaultRetry = Retry{Attempts: 10, First: 50 * time.Millisecond, Max: 5 * time.Second, Timeout: time.Minute}

// Options configure a remote root. The zero value means the defaults.
type Options struct {
	Retry  Retry        // zero: DefaultRetry
	Client *http.Client // the HTTP client (its Transport for S3); nil: one of the package's
}

// retry returns o's retry policy.
func (o Options) retry() Retry {
	if o.Retry.Attempts == 0 {
		return DefaultRetry
	}
	return o.Retry
}

// client returns o's HTTP client.
func (o Options) client() *http.Client {
	if o.Client != nil {
		return o.Client
	}
	return defaultClient
}

// maxIdlePerHost is the idle connections a remote root's client keeps per
// host: enough for the requests a read-ahead keeps in flight.
const maxIdlePerHost = 2 * AheadRequests

// defaultClient is the client of web roots opened without one. It asks
// for no compression (see transport).
var defaultClient = &http.Client{Transport: func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	transport(t)
	return t
}()}

// transport sets up the transport of a client of the package's: idle
// connections for the read-ahead's requests, and no compression asked
// for, so that a response's declared length is what its body holds and
// a small gzip answer cannot inflate past it as it is read.
func transport(t *http.Transport) {
	t.MaxIdleConnsPerHost = maxIdlePerHost
	t.DisableCompression = true
}

// do runs op until it succeeds, fails for good, or runs out of attempts,
// each attempt under its own timeout. The error of the last attempt is
// returned, saying how many were made when more than one.
func (r Retry) do(op func(ctx context.Context) error) error {
	wait := r.First
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), r.Timeout)
		err := op(ctx)
		cancel()
		switch {
		case err == nil:
			return nil
		case !retryable(err):
			if attempt > 1 {
				return fmt.Errorf("%w (attempt %d)", err, attempt)
			}
			return err
		case attempt >= r.Attempts:
			return fmt.Errorf("%w (gave up after %d attempts)", err, attempt)
		}
		time.Sleep(rand.N(wait) + 1)
		wait = min(2*wait, r.Max)
	}
}

// retryable reports whether a request that failed with err may succeed if
// tried again.
func retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		switch se.Status {
		case 429, 500, 502, 503, 504:
			return true
		}
		return se.Code == "SlowDown" || se.Code == "RequestTimeout"
	}
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) ||
		errors.As(err, &ne) && ne.Timeout() ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}
