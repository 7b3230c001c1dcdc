// Package remotetest holds the servers that tests of remote data run
// against: a real S3 server (versitygw, serving a directory on the
// loopback with its posix backend: a bucket is a directory, an object a
// file below it) and a proxy that injects faults between a client and a
// server.
package remotetest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/loadergen/loadergen/internal/envswitch"
)

// Access and Secret are the server's only credentials.
const (
	Access = "loadergen-test"
	Secret = "loadergen-test-secret"
)

// RequireEnv, set to 1 (make test sets it), makes a missing versitygw fail
// the tests that need it instead of skipping them.
const RequireEnv = "LOADERGEN_REQUIRE_VERSITYGW"

// Server is a running versitygw.
type Server struct {
	Dir      string // the served directory: Dir/bucket/key
	Endpoint string // http://127.0.0.1:port
}

// Start starts versitygw serving a new temporary directory, stopped when
// the test ends. Without the binary (in PATH or GOPATH/bin) it skips the
// test, or fails it when RequireEnv is set.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := binary()
	if err != nil {
		if on, _, _ := envswitch.Read(RequireEnv, os.Getenv(RequireEnv)); on {
			t.Fatalf("%v (%s is set; make versitygw installs it)", err, RequireEnv)
		}
		t.Skipf("%v: make versitygw installs it", err)
	}
	dir := t.TempDir()
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--access", Access, "--secret", Secret, "--port", addr, "--keep-alive", "--quiet", "posix", "--nometa", dir)
	log, err := os.Create(filepath.Join(t.TempDir(), "versitygw.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		log.Close()
	})
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Since(start) > 20*time.Second {
			out, _ := os.ReadFile(log.Name())
			t.Fatalf("versitygw did not listen on %s within 20 s:\n%s", addr, out)
		}
	}
	return &Server{Dir: dir, Endpoint: "http://" + addr}
}

// Env sets, for the test, the environment an S3 client of the AWS SDK
// reads: the server's endpoint and credentials, and no instance metadata.
func (s *Server) Env(t testing.TB) {
	t.Setenv("AWS_ENDPOINT_URL_S3", s.Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", Access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", Secret)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(s.Dir, "no-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(s.Dir, "no-credentials"))
}

// Bucket creates bucket name and returns its directory.
func (s *Server) Bucket(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(s.Dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// binary finds versitygw.
func binary() (string, error) {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		home, _ := os.UserHomeDir()
		gopath = filepath.Join(home, "go")
	}
	p := filepath.Join(gopath, "bin", "versitygw")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no versitygw in PATH or %s", filepath.Dir(p))
	}
	return p, nil
}

// freeAddr returns a loopback address with a port free at the time.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
