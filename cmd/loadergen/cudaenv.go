package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"

	"github.com/loadergen/loadergen/internal/cudastub"
	"github.com/loadergen/loadergen/internal/outfile"
)

// maxCUDAVersion bounds the cuda.h a cuda build accepts: gorgonia.org/cu
// v0.9.6 builds against CUDA 11.8 and 12.x headers, not 13's.
const maxCUDAVersion = 13000

// cudaEnv prints the cgo settings that build a module with -tags cuda:
// the directory of a usable cuda.h (CUDA_HOME, /usr/local/cuda, or the
// cache of Debian's 11.8 headers, fetched there when no other is found)
// and the driver stub, built for this machine's architecture.
func cudaEnv(args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	c := newCommand("cuda-env", "", stdout, stderr)
	includeOnly := c.fs.Bool("include", false, "print only the directory of cuda.h")
	if _, err := c.parse(args); err != nil {
		return err
	}
	include, err := cudaInclude(getenv, stderr)
	if err != nil {
		return err
	}
	if *includeOnly {
		fmt.Fprintln(stdout, include)
		return nil
	}
	stub := filepath.Join(cacheRoot(getenv), "cudastub-"+goruntime.GOARCH)
	if err := cudastub.Build(stub, goruntime.GOARCH, getenv("CC")); err != nil {
		return fmt.Errorf("cuda-env: %w", err)
	}
	fmt.Fprintf(stdout, "export CGO_CFLAGS=%q\nexport CGO_LDFLAGS=%q\n", "-I"+include, "-L"+stub+" -ldl")
	fmt.Fprintln(stderr, "loadergen cuda-env: eval these, then go build -tags cuda; the binary loads libcuda.so.1 when it runs (LOADERGEN_CUDA_DRIVER=FILE loads another) and uses the CPU where there is no GPU")
	return nil
}

// cacheRoot is loadergen's cache directory: $LOADERGEN_CACHE, else the
// user cache directory's loadergen.
func cacheRoot(getenv func(string) string) string {
	if d := getenv("LOADERGEN_CACHE"); d != "" {
		return d
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "loadergen")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "loadergen")
	}
	return filepath.Join(os.TempDir(), "loadergen-cache")
}

// cudaInclude returns the first directory holding a cuda.h older than
// CUDA 13, fetching Debian's 11.8 headers into the cache when none does.
func cudaInclude(getenv func(string) string, stderr io.Writer) (string, error) {
	cache := filepath.Join(cacheRoot(getenv), "cuda-11.8", "usr", "include")
	var dirs []string
	if h := getenv("CUDA_HOME"); h != "" {
		dirs = append(dirs, filepath.Join(h, "include"))
	}
	dirs = append(dirs, "/usr/local/cuda/include", cache)
	for _, d := range dirs {
		v, err := cudaVersion(filepath.Join(d, "cuda.h"))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return "", fmt.Errorf("cuda-env: %w", err)
		case v >= maxCUDAVersion:
			fmt.Fprintf(stderr, "loadergen cuda-env: skipping %s: CUDA %d.%d headers, which gorgonia.org/cu v0.9.6 does not build against\n", d, v/1000, v%1000/10)
			continue
		}
		return d, nil
	}
	fmt.Fprintf(stderr, "loadergen cuda-env: no cuda.h found; fetching Debian's CUDA 11.8 headers into %s\n", cache)
	if err := fetchCUDAHeader(filepath.Join(cache, "cuda.h")); err != nil {
		return "", fmt.Errorf("cuda-env: fetch Debian's CUDA 11.8 headers: %w", err)
	}
	return cache, nil
}

// cudaVersion reads CUDA_VERSION from a cuda.h.
func cudaVersion(header string) (int, error) {
	f, err := os.Open(header)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if w := strings.Fields(sc.Text()); len(w) == 3 && w[0] == "#define" && w[1] == "CUDA_VERSION" {
			return strconv.Atoi(w[2])
		}
	}
	return 0, fmt.Errorf("%s defines no CUDA_VERSION", header)
}

// fetchCUDAHeader extracts usr/include/cuda.h of Debian bookworm's non-free
// nvidia-cuda-dev (CUDA 11.8) to dst, written whole or not at all. apt-get
// downloads the package through a private sources list, from this
// machine's Debian archive.
func fetchCUDAHeader(dst string) error {
	uri, err := debianArchive()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "loadergen-cuda-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	for _, d := range []string{"lists/partial", "archives/partial", "cache", "x"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o755); err != nil {
			return err
		}
	}
	list := fmt.Sprintf("deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s bookworm non-free\n", uri)
	if err := os.WriteFile(filepath.Join(work, "sources.list"), []byte(list), 0o644); err != nil {
		return err
	}
	opts := []string{
		"-o", "Dir::Etc::SourceList=" + filepath.Join(work, "sources.list"),
		"-o", "Dir::Etc::SourceParts=/dev/null",
		"-o", "Dir::State::Lists=" + filepath.Join(work, "lists"),
		"-o", "Dir::Cache=" + filepath.Join(work, "cache"),
		"-o", "Dir::Cache::Archives=" + filepath.Join(work, "archives"),
		"-o", "APT::Architecture=amd64",
		"-o", "Debug::NoLocking=1",
		// As root, fetch into our own directory without apt's _apt sandbox,
		// which cannot enter it and warns.
		"-o", "APT::Sandbox::User=root",
	}
	steps := [][]string{
		append(append([]string{"apt-get"}, opts...), "-qq", "update"),
		append(append([]string{"apt-get"}, opts...), "-qq", "download", "nvidia-cuda-dev"),
	}
	for _, s := range steps {
		cmd := exec.Command(s[0], s[1:]...)
		cmd.Dir = work
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", s[0], err, out)
		}
	}
	debs, _ := filepath.Glob(filepath.Join(work, "nvidia-cuda-dev_*.deb"))
	if len(debs) != 1 {
		return fmt.Errorf("apt-get download gave %d nvidia-cuda-dev packages", len(debs))
	}
	extract := fmt.Sprintf("dpkg-deb --fsys-tarfile %q | tar -x -C %q ./usr/include/cuda.h", debs[0], filepath.Join(work, "x"))
	if out, err := exec.Command("sh", "-c", extract).CombinedOutput(); err != nil {
		return fmt.Errorf("extract cuda.h: %v\n%s", err, out)
	}
	header, err := os.ReadFile(filepath.Join(work, "x", "usr", "include", "cuda.h"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	_, err = outfile.Write(dst, header)
	return err
}

// debianArchive returns the URI of this machine's Debian archive (not its
// security archive), from its apt sources.
func debianArchive() (string, error) {
	if b, err := os.ReadFile("/etc/apt/sources.list.d/debian.sources"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "URIs:" && !strings.Contains(f[1], "security") {
				return f[1], nil
			}
		}
	}
	if b, err := os.ReadFile("/etc/apt/sources.list"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 || f[0] != "deb" || strings.Contains(line, "security") {
				continue
			}
			for _, w := range f[1:] {
				if strings.HasPrefix(w, "http:") || strings.HasPrefix(w, "https:") {
					return w, nil
				}
			}
		}
	}
	return "", errors.New("no Debian archive in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list (set CUDA_HOME to a CUDA 11.8 or 12.x toolkit instead)")
}
