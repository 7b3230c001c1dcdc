package storage

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loadergen/loadergen/internal/testenv/remotetest"
)

// bg is the context of the tests' reads, never done.
var bg = context.Background()

// big is the maximum of the tests' whole reads that no object comes near.
const big = 1 << 30

// quick retries for tests: the faults they inject pass at once.
var quick = Retry{Attempts: 5, First: time.Millisecond, Max: 5 * time.Millisecond, Timeout: 10 * time.Second}

// TestDriverMissing: a URL whose scheme has no driver linked is an error
// that names the import adding it, and one whose scheme no driver of this
// module reads says which locations are read.
func TestDriverMissing(t *testing.T) {
	drivers.mu.Lock()
	s3 := drivers.m["s3"]
	delete(drivers.m, "s3")
	drivers.mu.Unlock()
	t.Cleanup(func() { Register("s3", s3) })
	want := `s3://bucket/x: no storage driver for s3:// is linked into this program: import _ "github.com/loadergen/loadergen/runtime/storage/s3" (generated loaders do)`
	if _, err := Open("s3://bucket/x"); err == nil || err.Error() != want {
		t.Errorf("Open(s3://...) without its driver: %v\nwant %s", err, want)
	}
	if _, err := OpenWritable("s3://bucket/x"); err == nil || err.Error() != want {
		t.Errorf("OpenWritable(s3://...) without its driver: %v\nwant %s", err, want)
	}
}

// objects are the files every root of the tests serves.
var objects = map[string][]byte{
	"a.bin":       bytes.Repeat([]byte("0123456789"), 1000),
	"dir/b.txt":   []byte("hello, world"),
	"dir/c/d.bin": {},
	"big.bin":     bytes.Repeat([]byte{7}, 1<<20),
}

// writeObjects writes objects under dir.
func writeObjects(t *testing.T, dir string) {
	t.Helper()
	for name, data := range objects {
		file := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// roots returns the three kinds of root over the same objects: a local
// directory, a web server (TLS, net/http's file server, which answers
// ranges) and an S3 bucket served by versitygw.
func roots(t *testing.T) map[string]Root {
	t.Helper()
	local := t.TempDir()
	writeObjects(t, local)
	web := httptest.NewTLSServer(http.FileServer(http.Dir(local)))
	t.Cleanup(web.Close)
	w, err := openRemote(web.URL+"/", Options{Retry: quick, Client: web.Client()})
	if err != nil {
		t.Fatal(err)
	}
	srv := remotetest.Start(t)
	srv.Env(t)
	writeObjects(t, filepath.Join(srv.Bucket(t, "data"), "pre", "fix"))
	s3, err := openRemote("s3://data/pre/fix", Options{Retry: quick})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]Root{"local": Local(local), "https": w, "s3": s3}
}

// TestRoots: every kind of root reads the same bytes, whole and by range,
// gives the same sizes, and says the same of missing objects, of reads
// past an object's end and of names that would leave the root.
func TestRoots(t *testing.T) {
	for kind, r := range roots(t) {
		t.Run(kind, func(t *testing.T) {
			for name, want := range objects {
				got, err := r.ReadAll(bg, name, []byte("stale"), big)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("ReadAll(%s) = %d bytes, %v; want %d", name, len(got), err, len(want))
				}
				if n, err := r.Size(bg, name); err != nil || n != int64(len(want)) {
					t.Errorf("Size(%s) = %d, %v; want %d", name, n, err, len(want))
				}
			}
			if got, err := r.ReadAll(bg, "a.bin", nil, 10000); err != nil || len(got) != 10000 {
				t.Errorf("ReadAll(a.bin) of at most its 10000 bytes = %d bytes, %v", len(got), err)
			}
			_, err := r.ReadAll(bg, "a.bin", nil, 9999)
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "a.bin: 10000 bytes, more than the 9999 this read takes") {
				t.Errorf("ReadAll(a.bin) of at most 9999 bytes: %v, want ErrTooLarge naming it and both sizes", err)
			}
			p := make([]byte, 25)
			if err := r.ReadAt(bg, "a.bin", p, 9973); err != nil || string(p) != "3456789012345678901234567" {
				t.Errorf("ReadAt(a.bin, 9973) = %q, %v", p, err)
			}
			if err := r.ReadAt(bg, "a.bin", make([]byte, 30), 9990); !errors.Is(err, ErrShort) {
				t.Errorf("ReadAt past the end: %v, want ErrShort", err)
			}
			for _, c := range []struct {
				name string
				n    int
				want string // the tail; "" with short
				size int64
				err  error
			}{
				{"a.bin", 25, "5678901234567890123456789", 10000, nil},
				{"dir/b.txt", 12, "hello, world", 12, nil},
				{"dir/b.txt", 13, "", 12, ErrShort},
				{"dir/c/d.bin", 1, "", 0, ErrShort},
				{"dir/missing.bin", 1, "", 0, fs.ErrNotExist},
			} {
				p := make([]byte, c.n)
				size, err := r.ReadTail(bg, c.name, p)
				if !errors.Is(err, c.err) || size != c.size || c.err == nil && string(p) != c.want ||
					err != nil && !strings.Contains(err.Error(), c.name) {
					t.Errorf("ReadTail(%s, %d) = %q, %d, %v; want %q, %d, %v naming it", c.name, c.n, p, size, err, c.want, c.size, c.err)
				}
			}
			sub := r.Sub("dir")
			if got, err := sub.ReadAll(bg, "b.txt", nil, big); err != nil || string(got) != "hello, world" {
				t.Errorf("Sub(dir).ReadAll(b.txt) = %q, %v", got, err)
			}
			_, err = r.ReadAll(bg, "dir/missing.bin", nil, big)
			if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "missing.bin") {
				t.Errorf("ReadAll of a missing object: %v, want fs.ErrNotExist naming it", err)
			}
			for _, bad := range []string{"../a.bin", "/a.bin", "dir/../a.bin", "dir//b.txt"} {
				if _, err := r.ReadAll(bg, bad, nil, big); err == nil || !strings.Contains(err.Error(), "plain relative path") {
					t.Errorf("ReadAll(%q): %v, want a refusal", bad, err)
				}
			}
			if kind == "https" {
				if _, err := r.List(bg, ""); err == nil || !strings.Contains(err.Error(), "cannot be listed") {
					t.Errorf("List on a web server: %v", err)
				}
				return
			}
			if got, err := r.List(bg, "dir"); err != nil || !slices.Equal(got, []string{"b.txt", "c/"}) {
				t.Errorf("List(dir) = %q, %v", got, err)
			}
		})
	}
}

func TestLocations(t *testing.T) {
	for _, c := range []struct {
		base, rel, joined string
	}{
		{"data", "raw.zarr", "data/raw.zarr"},
		{"/data", "/other/raw.zarr", "/other/raw.zarr"},
		{"s3://bucket/prefix", "raw.zarr", "s3://bucket/prefix/raw.zarr"},
		{"s3://bucket", "a/b", "s3://bucket/a/b"},
		{"https://host/x/", "raw.zarr", "https://host/x/raw.zarr"},
		{"data", "s3://bucket/raw.zarr", "s3://bucket/raw.zarr"},
		{"s3://bucket/p", "https://host/raw.zarr", "https://host/raw.zarr"},
	} {
		if got := Join(c.base, c.rel); got != c.joined {
			t.Errorf("Join(%q, %q) = %q, want %q", c.base, c.rel, got, c.joined)
		}
	}
	for _, c := range []struct{ loc, dir, name string }{
		{"data/volumes.csv", "data", "volumes.csv"},
		{"s3://bucket/x/volumes.csv", "s3://bucket/x", "volumes.csv"},
		{"https://host/volumes.csv", "https://host", "volumes.csv"},
	} {
		if dir, name := Split(c.loc); dir != c.dir || name != c.name {
			t.Errorf("Split(%q) = %q, %q; want %q, %q", c.loc, dir, name, c.dir, c.name)
		}
	}
	for loc, want := range map[string]bool{"s3://b/p": true, "https://h/p": true, "HTTP://h": true,
		"data/x": false, "/abs/x": false, `C:\data`: false, "a:b": false} {
		if IsURL(loc) != want {
			t.Errorf("IsURL(%q) = %v", loc, !want)
		}
	}
	if _, err := Open("ftp://host/x"); err == nil || !strings.Contains(err.Error(), `unknown scheme "ftp"`) {
		t.Errorf("Open(ftp://...): %v", err)
	}
	for _, bad := range []string{"s3://", "s3://bucket/a/../b", "https://host/x?y=1"} {
		if _, err := Open(bad); err == nil {
			t.Errorf("Open(%q) accepted", bad)
		}
	}
}

func TestEnvMiB(t *testing.T) {
	for _, c := range []struct {
		value string
		want  int64
		err   string
	}{
		{"", 512, ""},
		{"0", 0, ""},
		{"2048", 2048, ""},
		{"-1", 0, `environment LOADERGEN_TEST_MB="-1": want a whole number of MiB from 0`},
		{"1.5", 0, `environment LOADERGEN_TEST_MB="1.5": want a whole number of MiB from 0`},
	} {
		t.Setenv("LOADERGEN_TEST_MB", c.value)
		got, err := envMiB("LOADERGEN_TEST_MB", 512, 0)
		if got != c.want || (err == nil) != (c.err == "") || err != nil && err.Error() != c.err {
			t.Errorf("%q: %d, %v; want %d, %q", c.value, got, err, c.want, c.err)
		}
	}
}

func TestRedact(t *testing.T) {
	for loc, want := range map[string]string{
		"https://alice:pw@host/x/a.bin":                                 "https://host/x/a.bin",
		"http://alice@host:8080/x":                                      "http://host:8080/x",
		"https://host/b/v.csv?X-Amz-Signature=s&X-Amz-Security-Token=t": "https://host/b/v.csv",
		"https://alice:p?w@host/x#frag":                                 "https://host/x",
		"https://host/x#frag":                                           "https://host/x",
		"s3://bucket/pre/fix":                                           "s3://bucket/pre/fix",
		"data/a@b?c.zarr":                                               "data/a@b?c.zarr",
	} {
		if got := Redact(loc); got != want {
			t.Errorf("Redact(%q) = %q, want %q", loc, got, want)
		}
	}
}

// TestSecretsNotShown: a URL's user and password and a presigned URL's
// query are sent with requests (basic authentication, the signature) and
// never shown: not in errors of refusals, of faults below HTTP, of
// locations refused at open; the AWS credentials hint is for S3 only.
func TestSecretsNotShown(t *testing.T) {
	const user, pw, sig, token = "u-alice", "pw-0xs3cr3t", "sig-0xf00", "tok-0xba4"
	dir := t.TempDir()
	writeObjects(t, filepath.Join(dir, "x"))
	url := remotetest.Guarded(t, dir, user, pw, sig)
	host := strings.TrimPrefix(url, "http://")
	query := "?X-Amz-Signature=" + sig + "&X-Amz-Security-Token=" + token
	shown := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error", what)
			return
		}
		for _, s := range []string{user, pw, sig, token} {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: %v shows %q", what, err, s)
			}
		}
		if strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
			t.Errorf("%s: %v gives the AWS credentials hint to a web root", what, err)
		}
	}
	r, err := Open("http://" + user + ":" + pw + "@" + host + "/x")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadAll(bg, "dir/b.txt", nil, big); err != nil || string(got) != "hello, world" {
		t.Errorf("ReadAll with basic authentication = %q, %v", got, err)
	}
	_, err = r.ReadAll(bg, "missing.txt", nil, big)
	shown("a missing object", err)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), url+"/x/missing.txt") {
		t.Errorf("a missing object: %v, want fs.ErrNotExist naming %s/x/missing.txt", err, url)
	}
	loc, name := Split(url + "/x/dir/b.txt" + query)
	signed, err := Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := signed.ReadAll(bg, name, nil, big); err != nil || string(got) != "hello, world" {
		t.Errorf("ReadAll of a presigned URL = %q, %v", got, err)
	}
	_, err = signed.ReadAll(bg, "b.txt?X-Amz-Signature=wrong&X-Amz-Security-Token="+token, nil, big)
	shown("a presigned URL refused", err)
	if err == nil || !strings.Contains(err.Error(), url+"/x/dir/b.txt: HTTP 403") {
		t.Errorf("a presigned URL refused: %v, want HTTP 403 naming %s/x/dir/b.txt", err, url)
	}
	gone, err := openRemote("http://"+user+":"+pw+"@"+strings.TrimPrefix(remotetest.Refused(t), "http://"), Options{Retry: quick})
	if err != nil {
		t.Fatal(err)
	}
	_, err = gone.ReadAll(bg, "b.txt"+query, nil, big)
	shown("a refused port", err)
	for _, loc := range []string{
		"http://" + user + ":" + pw + "@" + host + "/x" + query,
		"ftp://" + user + ":" + pw + "@host/x",
		"s3://" + user + ":" + pw + "@bucket/x",
		"http://" + user + ":" + pw + "@[::1/x",
	} {
		_, err := Open(loc)
		shown("Open of a refused location", err)
	}
	if msg := (&StatusError{URL: "s3://b/x", Status: 403}).Error(); !strings.Contains(msg, "AWS_ACCESS_KEY_ID") {
		t.Errorf("an S3 403 says %q, want the credentials hint", msg)
	}
}
