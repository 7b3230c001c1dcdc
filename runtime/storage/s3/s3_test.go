package s3

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/loadergen/loadergen/internal/testenv/remotetest"
	"github.com/loadergen/loadergen/runtime/storage"
)

// bg is the context of the tests' reads, never done.
var bg = context.Background()

// big is the maximum of the tests' whole reads that no object comes near.
const big = 1 << 30

// quick retries for tests: the faults they inject pass at once.
var quick = storage.Retry{Attempts: 5, First: time.Millisecond, Max: 5 * time.Millisecond, Timeout: 10 * time.Second}

// aBin is the object a.bin of the tests' buckets: 10000 bytes,
// "0123456789" again and again.
var aBin = bytes.Repeat([]byte("0123456789"), 1000)

// writeABin writes a.bin into the bucket's directory dir.
func writeABin(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "a.bin"), aBin, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRegistered: importing the package registers s3, whose roots
// storage.Open opens and storage.OpenWritable writes.
func TestRegistered(t *testing.T) {
	srv := remotetest.MiniS3(t)
	srv.Env(t)
	r, err := storage.Open("s3://data/x")
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := storage.OpenWritable("s3://data/x"); err != nil {
		t.Errorf("OpenWritable(s3://data/x): %v", err)
	}
}

// TestBucketWithoutKey: a root at a bucket itself names no object, and a
// read of it says what is missing before any request (the SDK's words
// were "input member Key must not be empty"), as does a manifest at
// s3://bucket, which Split makes the empty name of that root.
func TestBucketWithoutKey(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:1", "AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_REGION": "us-east-1",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
	} {
		t.Setenv(k, v)
	}
	const want = "s3://bkt names a bucket, not an object in it: give the object's key after the bucket (s3://bkt/path/to/object)"
	for _, loc := range []string{"s3://bkt", "s3://bkt/"} {
		root, name := storage.Split(loc)
		r, err := Open(root, storage.Options{Retry: quick})
		if err != nil {
			t.Fatal(err)
		}
		_, errAll := r.ReadAll(bg, name, nil, big)
		errAt := r.ReadAt(bg, name, make([]byte, 4), 0)
		_, errTail := r.ReadTail(bg, name, make([]byte, 4))
		_, errSize := r.Size(bg, name)
		for i, err := range []error{errAll, errAt, errTail, errSize} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s, read %d: %v, want %q", loc, i, err, want)
			}
		}
	}
}

// TestS3ClientShared: roots opened under the same AWS_* variables share
// one client (one configuration load, one pool of connections); other
// variables, or an HTTP client of the caller's, get another.
func TestS3ClientShared(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")
	t.Setenv("AWS_ACCESS_KEY_ID", "a")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "no-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "no-credentials"))
	t.Setenv("AWS_CA_BUNDLE", "") // restored after the test; a bundle needs the SDK's own HTTP client
	os.Unsetenv("AWS_CA_BUNDLE")
	client := func(loc string, o ...storage.Options) *s3.Client {
		t.Helper()
		r, err := Open(loc, o...)
		if err != nil {
			t.Fatal(err)
		}
		return r.(*bucket).client
	}
	first := client("s3://a/x")
	for _, tc := range []struct {
		name   string
		setup  func()
		opt    storage.Options
		shared bool
	}{
		{"another bucket", func() {}, storage.Options{}, true},
		{"another retry policy", func() {}, storage.Options{Retry: quick}, true},
		{"an HTTP client of the caller's", func() {}, storage.Options{Client: &http.Client{}}, false},
		{"another endpoint", func() { t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:2") }, storage.Options{}, false},
	} {
		tc.setup()
		if got := client("s3://b/y", tc.opt); (got == first) != tc.shared {
			t.Errorf("%s: shares the first root's client: %v, want %v", tc.name, got == first, tc.shared)
		}
	}
}

// TestS3WrongCredentials: a wrong secret is an error naming the URL and
// the status, after one request, not a hang or a retry loop.
func TestS3WrongCredentials(t *testing.T) {
	srv := remotetest.Start(t)
	writeABin(t, srv.Bucket(t, "data"))
	srv.Env(t)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	r, err := Open("s3://data", storage.Options{Retry: quick})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = r.ReadAll(bg, "a.bin", nil, big)
	if err == nil || !strings.Contains(err.Error(), "s3://data/a.bin") || !strings.Contains(err.Error(), "HTTP 403") ||
		strings.Contains(err.Error(), "attempt") {
		t.Errorf("wrong secret: %v, want one HTTP 403 naming s3://data/a.bin", err)
	}
	t.Log(err)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("wrong secret took %v", d)
	}
}

// TestS3FaultsBelowHTTP: faults below HTTP on an S3 root (a refused port,
// a connection reset mid-body, a server that never answers) are retried
// as a web root's are, and the error keeps its cause, not "HTTP 0".
func TestS3FaultsBelowHTTP(t *testing.T) {
	srv := remotetest.MiniS3(t)
	writeABin(t, srv.Bucket(t, "data"))
	srv.Env(t)
	cuts := remotetest.Proxy(t, srv.Endpoint)
	brief := quick
	brief.Timeout = 200 * time.Millisecond
	for _, c := range []struct {
		name     string
		endpoint string
		policy   storage.Retry
		cause    error // nil: the read succeeds
	}{
		{"refused", remotetest.Refused(t), quick, syscall.ECONNREFUSED},
		{"reset mid-body", cuts.URL, quick, nil},
		{"silent", remotetest.Silent(t), brief, context.DeadlineExceeded},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("AWS_ENDPOINT_URL_S3", c.endpoint)
			r, err := Open("s3://data", storage.Options{Retry: c.policy})
			if err != nil {
				t.Fatal(err)
			}
			cuts.Set(0, 0, 2)
			got, err := r.ReadAll(bg, "a.bin", nil, big)
			if c.cause == nil {
				if err != nil || !bytes.Equal(got, aBin) {
					t.Errorf("ReadAll = %d bytes, %v; want the object after 2 cut bodies", len(got), err)
				}
				return
			}
			if !errors.Is(err, c.cause) || !strings.Contains(err.Error(), "s3://data/a.bin") ||
				!strings.Contains(err.Error(), "gave up after 5 attempts") || strings.Contains(err.Error(), "HTTP 0") || strings.Contains(err.Error(), "StatusCode: 0") {
				t.Errorf("ReadAll: %v; want %v named, after 5 attempts", err, c.cause)
			}
			t.Log(err)
		})
	}
}

// TestS3Credentials: requests go unsigned when nothing configured
// credentials, and signed when the environment gives them; credentials
// configured that the chain cannot use (a key without its secret, a
// profile whose process fails) are an error at open naming them, not
// anonymous requests refused later.
func TestS3Credentials(t *testing.T) {
	var mu sync.Mutex // guards signed, which the server's goroutines write
	var signed bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		signed = r.Header.Get("Authorization") != ""
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	config := filepath.Join(dir, "config")
	if err := os.WriteFile(config, []byte("[profile broken]\ncredential_process = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		env  []string // K=V
		want string   // the error at open; "" when it opens
		sign bool
	}{
		{"nothing", nil, "", false},
		{"keys", []string{"AWS_ACCESS_KEY_ID=a", "AWS_SECRET_ACCESS_KEY=s"}, "", true},
		{"a key without its secret", []string{"AWS_ACCESS_KEY_ID=a"}, "credentials are configured (AWS_ACCESS_KEY_ID), but the chain found none", false},
		{"a profile whose process fails", []string{"AWS_PROFILE=broken"}, `credentials are configured (AWS_PROFILE, profile "broken"), but the chain found none`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, kv := range os.Environ() {
				if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
					t.Setenv(k, "")
					os.Unsetenv(k)
				}
			}
			t.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
			t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
			t.Setenv("AWS_CONFIG_FILE", config)
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "no-credentials"))
			for _, kv := range c.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			r, err := Open("s3://data", storage.Options{Retry: quick})
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("OpenS3: %v; want it to say %q", err, c.want)
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, err := r.ReadAll(bg, "x", nil, big); err != nil || string(got) != "ok" {
				t.Fatalf("ReadAll = %q, %v", got, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if signed != c.sign {
				t.Errorf("the request was signed: %v, want %v", signed, c.sign)
			}
		})
	}
}
