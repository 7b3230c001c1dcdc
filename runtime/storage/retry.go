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
	// Idle is the longest an attempt waits for the server's next bytes:
	// its answer's head, then each read of its body. A server silent that
	// long (a stalled connection, one that drip-feeds) fails the attempt
	// as a timeout, which is retried. 0: Timeout alone bounds an attempt.
	Idle time.Duration
}

// DefaultRetry is the policy of roots opened with zero Options: 10
// attempts, waits from 50 ms doubling to at most 5 s (with full jitter, as
// AWS advises: a random wait up to the bound), 60 s per attempt and 20 s
// without a byte from the server. A server that keeps failing is given up
// on after 9 waits: their bounds add up to 16.35 s, and they last half
// that on average.
var DefaultRetry = Retry{Attempts: 10, First: 50 * time.Millisecond, Max: 5 * time.Second, Timeout: time.Minute, Idle: 20 * time.Second}

// Options configure a remote root. The zero value means the defaults.
type Options struct {
	Retry  Retry        // zero: DefaultRetry
	Client *http.Client // the HTTP client (its Transport for S3); nil: the driver's, set up by ConfigureTransport
}

// RetryPolicy returns o's retry policy: o.Retry, or DefaultRetry when it
// is zero.
func (o Options) RetryPolicy() Retry {
	if o.Retry.Attempts == 0 {
		return DefaultRetry
	}
	return o.Retry
}

// maxIdlePerHost is the idle connections a remote root's client keeps per
// host: enough for the requests a read-ahead keeps in flight.
const maxIdlePerHost = 2 * AheadRequests

// ConfigureTransport sets up the transport of a driver's own HTTP client
// (the one its roots use when Options give none): idle connections for
// the read-ahead's requests, and no compression asked for, so that a
// response's declared length is what its body holds and a small gzip
// answer cannot inflate past it as it is read.
func ConfigureTransport(t *http.Transport) {
	t.MaxIdleConnsPerHost = maxIdlePerHost
	t.DisableCompression = true
}

// do runs op until it succeeds, fails for good, runs out of attempts or
// ctx is done, each attempt under its own deadlines (see attempt). The
// error of the last attempt is returned, saying how many were made when
// more than one; once ctx is done, it wraps ctx's error.
func (r Retry) do(ctx context.Context, op func(a *attempt) error) error {
	wait := r.First
	for attempt := 1; ; attempt++ {
		err := r.try(ctx, op)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return stopped(ctx, err)
		case !retryable(err):
			if attempt > 1 {
				return fmt.Errorf("%w (attempt %d)", err, attempt)
			}
			return err
		case attempt >= r.Attempts:
			return fmt.Errorf("%w (gave up after %d attempts)", err, attempt)
		}
		pause := time.NewTimer(rand.N(wait) + 1)
		select {
		case <-pause.C:
		case <-ctx.Done():
			pause.Stop()
			return stopped(ctx, err)
		}
		wait = min(2*wait, r.Max)
	}
}

// stopped is the error of a request that ctx stopped, after an attempt
// that failed with err: it wraps ctx's error.
func stopped(ctx context.Context, err error) error {
	if errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("%w (after %v)", ctx.Err(), err)
}

// attempt is one try of a request: its context is done once the
// policy's Timeout passes, or its Idle without a byte from the server
// (see alive and body), the cause then a timeout.
type attempt struct {
	ctx  context.Context
	idle *time.Timer // cancels ctx when it fires; nil without an Idle
	wait time.Duration
}

// try makes one attempt of op within ctx, and returns its error, the
// attempt's timeout when it ran out of time.
func (r Retry) try(ctx context.Context, op func(a *attempt) error) error {
	ctx, cancel := context.WithTimeoutCause(ctx, r.Timeout, timeout{d: r.Timeout})
	defer cancel()
	a := &attempt{ctx: ctx, wait: r.Idle}
	if r.Idle > 0 {
		var stall context.CancelCauseFunc
		a.ctx, stall = context.WithCancelCause(ctx)
		defer stall(nil)
		a.idle = time.AfterFunc(r.Idle, func() { stall(timeout{d: r.Idle, idle: true}) })
		defer a.idle.Stop()
	}
	err := op(a)
	if t, ok := context.Cause(a.ctx).(timeout); ok && err != nil {
		return t
	}
	return err
}

// alive puts off the attempt's idle deadline: the server sent something.
func (a *attempt) alive() {
	if a.idle != nil {
		a.idle.Reset(a.wait)
	}
}

// body returns a response's body, whose reads put off the attempt's idle
// deadline.
func (a *attempt) body(b io.ReadCloser) io.ReadCloser {
	if a.idle == nil {
		return b
	}
	return &aliveBody{ReadCloser: b, a: a}
}

// aliveBody is a response's body that calls alive when bytes arrive.
type aliveBody struct {
	io.ReadCloser
	a *attempt
}

func (b *aliveBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.a.alive()
	}
	return n, err
}

// timeout is the cause of an attempt that ran out of time: its Timeout,
// or (idle) its Idle without a byte from the server. It matches
// context.DeadlineExceeded, and is retried.
type timeout struct {
	d    time.Duration
	idle bool
}

func (t timeout) Error() string {
	if t.idle {
		return fmt.Sprintf("no byte from the server for %v", t.d)
	}
	return fmt.Sprintf("no whole answer within %v", t.d)
}

// Is makes a timeout match context.DeadlineExceeded.
func (t timeout) Is(target error) bool { return target == context.DeadlineExceeded }

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
