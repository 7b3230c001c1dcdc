// Package storage reads the objects a dataset is made of, whole or by byte
// range, from where they live: a local directory, or a remote root of a
// URL scheme whose driver the program links (Register):
// runtime/storage/s3 reads S3 buckets (s3://bucket/prefix),
// runtime/storage/https web servers (https://host/path); generated
// loaders link both. Local and S3 roots can be written too (OpenWritable:
// whole objects, atomically). Remote reads are retried with backoff on
// throttling, server errors, timeouts and dropped connections (see
// Retry), can be read ahead (Hinter) and kept in a bounded cache on disk
// (CacheDirEnv); errors name the object's URL. Remote, which every
// driver's roots embed, reads and checks the answers of their requests.
package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

// Root is a directory of objects. Names are "/"-separated paths relative
// to it. A Root is safe for concurrent use. A read stops once its ctx is
// done (between a remote root's attempts, and within one), with an error
// wrapping ctx's.
type Root interface {
	// ReadAll returns the whole of object name in buf, grown as needed:
	// one request for a remote root. An object of more than max bytes is
	// an error wrapping ErrTooLarge, given before anything is allocated
	// for it when its size is declared (a file's, or a server's
	// Content-Length), and once max bytes are read when it is not: a
	// response is never read past max. The error of a missing object
	// wraps fs.ErrNotExist.
	ReadAll(ctx context.Context, name string, buf []byte, max int64) ([]byte, error)
	// ReadAt fills p with the bytes of object name from offset off. An
	// object that ends before off+len(p) is an error wrapping ErrShort.
	ReadAt(ctx context.Context, name string, p []byte, off int64) error
	// ReadTail fills p with the last len(p) bytes of object name and
	// returns the object's size: one request for a remote root (a suffix
	// range), where Size then ReadAt take two. An object shorter than
	// len(p) gives its size and an error wrapping ErrShort.
	ReadTail(ctx context.Context, name string, p []byte) (size int64, err error)
	// Size returns the size of object name in bytes.
	Size(ctx context.Context, name string) (int64, error)
	// List returns the names of the objects and directories directly in
	// directory dir ("" is the root), sorted; a directory's name ends in
	// "/". Web servers cannot be listed.
	List(ctx context.Context, dir string) ([]string, error)
	// Sub returns the root of directory dir of this one.
	Sub(dir string) Root
	// Local returns the directory of a local root, for what only a local
	// file allows (mapping it into memory); ok is false for remote roots.
	Local() (dir string, ok bool)
	// URL names object name for messages: a path, or a URL without its
	// secrets (see Redact).
	URL(name string) string
	// Close stops what the root does in the background for its reads
	// and drops what it holds for them (its read-ahead: queued fetches
	// are dropped, those in flight cancelled, fetched bytes let go), and
	// returns once none is left. It closes the roots Sub made of it too;
	// Close of such a Sub does nothing. Reads after it still work, but
	// are not read ahead.
	Close() error
}

// Open returns the root at loc: a URL of a scheme whose driver the
// program links ("s3://bucket/prefix" with runtime/storage/s3,
// "https://host/path" with runtime/storage/https; see Register), or else
// a local directory. Remote roots read through the process's disk cache
// when LOADERGEN_REMOTE_CACHE_DIR names a directory, and read ahead what
// they are hinted unless LOADERGEN_READAHEAD_MB is 0: Close the root once
// done with it, which stops that. A URL whose scheme has no driver here
// is an error naming the import that adds it.
func Open(loc string) (Root, error) {
	if !IsURL(loc) {
		return Local(loc), nil
	}
	r, err := openRemote(loc, Options{})
	if err != nil {
		return nil, err
	}
	return withProcessLayers(r)
}

// The bound of a metadata file read whole (ReadMetadata), in MiB, and the
// environment variable that sets it.
const (
	MetadataMBEnv      = "LOADERGEN_MAX_METADATA_MB"
	DefaultMetadataMiB = 64
)

// metadataMax is the bound of ReadMetadata in bytes, read from the
// environment once.
var metadataMax = sync.OnceValues(func() (int64, error) {
	mib, err := envMiB(MetadataMBEnv, DefaultMetadataMiB, 1)
	return mib << 20, err
})

// ReadMetadata reads metadata file name of r whole (zarr's .zmetadata,
// zarr.json, .zarray, .zgroup and .zattrs, a volume manifest): at most
// LOADERGEN_MAX_METADATA_MB, 64 MiB by default, which no such file nears;
// a larger one is an error wrapping ErrTooLarge that names the variable.
func ReadMetadata(ctx context.Context, r Root, name string) ([]byte, error) {
	max, err := metadataMax()
	if err != nil {
		return nil, err
	}
	data, err := r.ReadAll(ctx, name, nil, max)
	if errors.Is(err, ErrTooLarge) {
		return nil, fmt.Errorf("%w (a metadata file's bound: %s)", err, MetadataMBEnv)
	}
	return data, err
}

// Redact returns location loc as errors and logs show it: a URL without
// its userinfo (user:password@), query and fragment (a presigned URL's
// signature and token), which only its requests carry; a local path as
// it is.
func Redact(loc string) string {
	if !IsURL(loc) {
		return loc
	}
	i := strings.Index(loc, "://") + 3
	rest := loc[i:]
	authority, _, _ := strings.Cut(rest, "/")
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		rest = rest[at+1:]
	}
	if j := strings.IndexAny(rest, "?#"); j >= 0 {
		rest = rest[:j]
	}
	return loc[:i] + rest
}

// IsURL reports whether loc names a remote root (it has a scheme such as
// s3:// or https://) rather than a local path.
func IsURL(loc string) bool { return scheme(loc) != "" }

// scheme returns loc's URL scheme in lower case, or "" for a local path
// (Windows drive letters included).
func scheme(loc string) string {
	i := strings.Index(loc, "://")
	if i <= 1 {
		return ""
	}
	s := loc[:i]
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return ""
		}
	}
	return strings.ToLower(s)
}

// Join returns location rel taken relative to the directory base: rel
// itself when it is a URL or an absolute path, else rel joined to base
// (with "/" for a URL base, with the system's separator for a path).
func Join(base, rel string) string {
	if IsURL(rel) || filepath.IsAbs(rel) {
		return rel
	}
	if !IsURL(base) {
		return filepath.Join(base, rel)
	}
	u, err := url.Parse(base)
	if err != nil {
		return strings.TrimSuffix(base, "/") + "/" + rel
	}
	u.Path = path.Join(u.Path, rel)
	return u.String()
}

// Split returns the directory of location loc and its last element, for
// a URL as for a path: Split("s3://b/x/m.csv") is "s3://b/x", "m.csv". A
// URL's query stays with its last element (a presigned URL's signature),
// which a web root sends with that object's request.
func Split(loc string) (dir, name string) {
	if !IsURL(loc) {
		return filepath.Dir(loc), filepath.Base(loc)
	}
	at := strings.IndexByte(loc, '?')
	if at < 0 {
		at = len(loc)
	}
	i := strings.LastIndex(loc[:at], "/")
	if i < len(scheme(loc))+3 { // "s3://bucket": the root itself
		return loc, ""
	}
	return loc[:i], loc[i+1:]
}

// CheckName refuses object names that would leave their root: absolute
// ones, and ".", ".." or empty elements. Every root checks the names it
// is given by it.
func CheckName(name string) error {
	if name == "" {
		return nil
	}
	if strings.HasPrefix(name, "/") || path.Clean("/" + name)[1:] != strings.TrimSuffix(name, "/") {
		return fmt.Errorf("object name %q: use a plain relative path (no leading /, ., .. or doubled slashes)", name)
	}
	return nil
}

// StatusError is a remote server's refusal: the URL (redacted, see
// Redact), the HTTP status and, for S3, its error code.
type StatusError struct {
	URL    string
	Status int    // HTTP status code
	Code   string // S3 error code (SlowDown, AccessDenied, ...), or ""
}

// Error gives the status and code, and for an S3 refusal of access where
// its credentials come from; the errors of this package that wrap it name
// the URL.
func (e *StatusError) Error() string {
	msg := fmt.Sprintf("HTTP %d", e.Status)
	if e.Code != "" {
		msg += " " + e.Code
	}
	if (e.Status == 401 || e.Status == 403) && scheme(e.URL) == "s3" {
		msg += " (check the credentials: AWS_ACCESS_KEY_ID, AWS_PROFILE, ...)"
	}
	return msg
}

// Is makes a 404 match fs.ErrNotExist.
func (e *StatusError) Is(target error) bool {
	return target == fs.ErrNotExist && e.Status == 404
}

// ErrShort is wrapped by the error of a read past an object's end.
var ErrShort = errors.New("the object ends before the read's last byte")

// ErrTooLarge is matched by the error of a read refused for its size: an
// object larger than the read's maximum (see Root.ReadAll).
var ErrTooLarge = errors.New("an object larger than the read takes")

// tooLarge is the error of a whole read, of at most max bytes, of an
// object that declares size bytes, or (size -1) whose body ran past max.
type tooLarge struct{ size, max int64 }

func errTooLarge(size, max int64) error { return &tooLarge{size, max} }

func (e *tooLarge) Error() string {
	if e.size < 0 {
		return fmt.Sprintf("more than %d bytes, the most this read takes", e.max)
	}
	return fmt.Sprintf("%d bytes, more than the %d this read takes", e.size, e.max)
}

// Is makes a tooLarge match ErrTooLarge.
func (e *tooLarge) Is(target error) bool { return target == ErrTooLarge }

// errTail is the error of a ReadTail of n bytes from an object of size
// bytes, fewer.
func errTail(u string, n, size int64) error {
	return fmt.Errorf("%s: its last %d bytes, but the object holds %d: %w", u, n, size, ErrShort)
}

// errShort is the error of an object that ends before a read's last byte.
func errShort(u string, off, n, got int64) error {
	return fmt.Errorf("%s: %d bytes at offset %d, but the object gave %d (truncated while in use?): %w", u, n, off, got, ErrShort)
}
