package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// bucket is a root in an S3 bucket (or an S3-compatible store): object
// name is the key prefix+name.
type bucket struct {
	client *s3.Client
	name   string // the bucket
	prefix string // "" or a key prefix ending in "/"
	retry  Retry
}

// DefaultRegion is the region of S3 requests when the configuration names
// none: OpenOrganelle's public buckets are there.
const DefaultRegion = "us-east-1"

// OpenS3 returns the root at s3://bucket/prefix. Credentials come from
// the AWS SDK's standard chain (the AWS_* environment variables, the
// shared config and credentials files and their profiles, SSO, web
// identity, the EC2 or ECS instance role). When the chain finds none, the
// requests are anonymous, which public buckets answer, unless something
// configured credentials (an AWS_* variable of the chain, a profile with
// keys, a role, SSO or a process): then OpenS3 returns the chain's error,
// naming what was set. AWS_ENDPOINT_URL_S3
// or AWS_ENDPOINT_URL points the client at an S3-compatible store (then
// addressed path-style: endpoint/bucket/key); AWS_REGION or the profile's
// region apply, else DefaultRegion. It makes no request to the bucket.
// The roots a process opens without an HTTP client in o, under the same
// AWS_* variables, share one client: the configuration is loaded once.
func OpenS3(loc string, o ...Options) (Root, error) {
	u, err := url.Parse(loc)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%s: want s3://bucket/prefix (credentials come from the AWS configuration, not the URL)", Redact(loc))
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		if err := checkName(prefix); err != nil {
			return nil, fmt.Errorf("%s: %w", Redact(loc), err)
		}
		prefix += "/"
	}
	opt := first(o)
	client, err := s3Client(opt)
	if err != nil {
		return nil, fmt.Errorf("%s: AWS configuration: %w", Redact(loc), err)
	}
	return &bucket{client: client, name: u.Host, prefix: prefix, retry: opt.retry()}, nil
}

// s3Clients are the process's S3 clients of roots opened without an
// HTTP client of their own, one for each set of AWS_* environment
// variables (what the configuration is read from): the roots of a
// process share one configuration load, one credential look-up and one
// pool of connections.
var s3Clients struct {
	mu sync.Mutex // guards m: s3Client reads and adds clients under it
	m  map[string]*s3.Client
}

// s3Client returns the S3 client of a root opened with opt: the
// process's for the environment when opt gives no HTTP client, else a new
// one on opt's.
func s3Client(opt Options) (*s3.Client, error) {
	if opt.Client != nil {
		return newS3Client(opt.Client, opt.retry().Timeout)
	}
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	slices.Sort(env)
	key := strings.Join(env, "\x00")
	s3Clients.mu.Lock()
	defer s3Clients.mu.Unlock()
	if c, ok := s3Clients.m[key]; ok {
		return c, nil
	}
	// The SDK's own HTTP client: AWS_CA_BUNDLE needs its transport options.
	c, err := newS3Client(awshttp.NewBuildableClient().WithTransportOptions(transport), opt.retry().Timeout)
	if err != nil {
		return nil, err
	}
	if s3Clients.m == nil {
		s3Clients.m = map[string]*s3.Client{}
	}
	s3Clients.m[key] = c
	return c, nil
}

// newS3Client loads the AWS configuration, within timeout, and returns an
// S3 client on it that sends its requests through client.
func newS3Client(client config.HTTPClient, timeout time.Duration) (*s3.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithHTTPClient(client),
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }), // Retry retries
	)
	if err != nil {
		return nil, err
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		if set := credentialSettings(cfg); len(set) > 0 {
			return nil, fmt.Errorf("credentials are configured (%s), but the chain found none: %w", strings.Join(set, ", "), err)
		}
		cfg.Credentials = aws.AnonymousCredentials{}
	}
	return s3.NewFromConfig(cfg, func(so *s3.Options) {
		so.UsePathStyle = so.BaseEndpoint != nil
		so.HTTPClient = errorBodies{so.HTTPClient}
		// Ranged reads of objects written without checksums are the norm.
		so.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}), nil
}

// credentialEnv are the environment variables that configure the
// credential chain.
var credentialEnv = []string{"AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY",
	"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
	"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"}

// credentialSettings names what configures credentials in the
// environment and in the profile cfg was loaded with: requests go
// unsigned only when the chain finds no credentials and this names
// nothing, so that a credential set wrong is an error at open rather than
// an anonymous request's 403.
func credentialSettings(cfg aws.Config) []string {
	var set []string
	for _, v := range credentialEnv {
		if os.Getenv(v) != "" {
			set = append(set, v)
		}
	}
	for _, src := range cfg.ConfigSources {
		sc, ok := src.(config.SharedConfig)
		if ok && (sc.Credentials.AccessKeyID != "" || sc.Credentials.SecretAccessKey != "" || sc.RoleARN != "" ||
			sc.CredentialSource != "" || sc.CredentialProcess != "" || sc.WebIdentityTokenFile != "" ||
			sc.SSOSessionName != "" || sc.SSOStartURL != "") {
			set = append(set, fmt.Sprintf("profile %q", sc.Profile))
		}
	}
	return set
}

func (b *bucket) URL(name string) string { return "s3://" + b.name + "/" + b.prefix + name }

func (b *bucket) Sub(dir string) Root {
	c := *b
	if d := strings.Trim(dir, "/"); d != "" {
		c.prefix = b.prefix + d + "/"
	}
	return &c
}

func (b *bucket) Local() (string, bool) { return "", false }

// Close does nothing: a bucket root holds nothing of its own (its client
// is the process's).
func (b *bucket) Close() error { return nil }

// checkObject refuses names that would leave the root (checkName), and
// the empty key: a root at the bucket itself names no object.
func (b *bucket) checkObject(name string) error {
	if b.prefix+name == "" {
		return fmt.Errorf("s3://%s names a bucket, not an object in it: give the object's key after the bucket (s3://%s/path/to/object)", b.name, b.name)
	}
	return checkName(name)
}

// get makes one GetObject of name (rng: its Range header, or ""), whose
// body's reads put off the attempt's idle deadline.
func (b *bucket) get(a *attempt, name, rng string) (*s3.GetObjectOutput, error) {
	in := &s3.GetObjectInput{Bucket: &b.name, Key: aws.String(b.prefix + name)}
	if rng != "" {
		in.Range = &rng
	}
	out, err := b.client.GetObject(a.ctx, in)
	if err != nil {
		return nil, err
	}
	a.alive()
	out.Body = a.body(out.Body)
	return out, nil
}

func (b *bucket) ReadAll(ctx context.Context, name string, buf []byte, max int64) ([]byte, error) {
	return b.readSized(ctx, name, max, reuse(buf))
}

func (b *bucket) readSized(ctx context.Context, name string, max int64, buffer func(n int64) ([]byte, error)) ([]byte, error) {
	if err := b.checkObject(name); err != nil {
		return nil, err
	}
	var buf []byte
	err := b.retry.do(ctx, func(a *attempt) error {
		out, err := b.get(a, name, "")
		if err != nil {
			return b.fail(name, err)
		}
		defer out.Body.Close()
		n := int64(-1)
		if out.ContentLength != nil {
			n = *out.ContentLength
		}
		buf, err = readSizedBody(out.Body, n, max, buffer)
		return err
	})
	if err != nil {
		return buf, fmt.Errorf("read %s: %w", b.URL(name), err)
	}
	return buf, nil
}

func (b *bucket) ReadAt(ctx context.Context, name string, p []byte, off int64) error {
	if err := b.checkObject(name); err != nil {
		return err
	}
	if len(p) == 0 {
		return nil
	}
	n := int64(len(p))
	err := b.retry.do(ctx, func(a *attempt) error {
		out, err := b.get(a, name, fmt.Sprintf("bytes=%d-%d", off, off+n-1))
		if err != nil {
			var se *StatusError
			if err = b.fail(name, err); errors.As(err, &se) && se.Status == http.StatusRequestedRangeNotSatisfiable {
				return errShort(b.URL(name), off, n, 0)
			}
			return err
		}
		defer out.Body.Close()
		if err := checkRange(aws.ToString(out.ContentRange), off, n); err != nil {
			return fmt.Errorf("%s: %w", b.URL(name), err)
		}
		if got, err := io.ReadFull(out.Body, p); err != nil {
			return shortOrCut(b.URL(name), off, n, fmt.Errorf("%d bytes: %w", got, err))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", b.URL(name), err)
	}
	return nil
}

func (b *bucket) ReadTail(ctx context.Context, name string, p []byte) (int64, error) {
	if err := b.checkObject(name); err != nil {
		return 0, err
	}
	n := int64(len(p))
	var size int64
	err := b.retry.do(ctx, func(a *attempt) error {
		out, err := b.get(a, name, fmt.Sprintf("bytes=-%d", n))
		if err != nil {
			var se *StatusError
			if err = b.fail(name, err); errors.As(err, &se) && se.Status == http.StatusRequestedRangeNotSatisfiable {
				return errTail(b.URL(name), n, 0) // only an empty object has no suffix

			}
			return err
		}
		defer out.Body.Close()
		size, err = readTail(b.URL(name), aws.ToString(out.ContentRange), aws.ToInt64(out.ContentLength), out.Body, p)
		return err
	})
	if err != nil {
		return size, fmt.Errorf("read %s: %w", b.URL(name), err)
	}
	return size, nil
}

func (b *bucket) Size(ctx context.Context, name string) (int64, error) {
	size, _, err := b.stat(ctx, name)
	return size, err
}

// stat returns the size of object name and its version, its ETag.
func (b *bucket) stat(ctx context.Context, name string) (size int64, version string, err error) {
	if err := b.checkObject(name); err != nil {
		return 0, "", err
	}
	err = b.retry.do(ctx, func(a *attempt) error {
		out, err := b.client.HeadObject(a.ctx, &s3.HeadObjectInput{Bucket: &b.name, Key: aws.String(b.prefix + name)})
		if err != nil {
			return b.fail(name, err)
		}
		size, version = aws.ToInt64(out.ContentLength), aws.ToString(out.ETag)
		return nil
	})
	if err != nil {
		return 0, "", fmt.Errorf("size of %s: %w", b.URL(name), err)
	}
	return size, version, nil
}

func (b *bucket) List(ctx context.Context, dir string) ([]string, error) {
	names, err := b.list(ctx, dir, true)
	slices.Sort(names)
	return names, err
}

// list returns the names under directory dir, relative to it: with
// delimit, the objects and directories directly in it; else every
// object at any depth, in S3's order (by key).
func (b *bucket) list(ctx context.Context, dir string, delimit bool) ([]string, error) {
	if err := checkName(dir); err != nil {
		return nil, err
	}
	in := &s3.ListObjectsV2Input{Bucket: &b.name, Prefix: aws.String(b.prefix)}
	if d := strings.Trim(dir, "/"); d != "" {
		in.Prefix = aws.String(b.prefix + d + "/")
	}
	if delimit {
		in.Delimiter = aws.String("/")
	}
	var names []string
	for {
		var out *s3.ListObjectsV2Output
		err := b.retry.do(ctx, func(a *attempt) error {
			var err error
			out, err = b.client.ListObjectsV2(a.ctx, in)
			if err != nil {
				return b.fail(dir, err)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", b.URL(dir), err)
		}
		for _, o := range out.Contents {
			names = append(names, strings.TrimPrefix(aws.ToString(o.Key), *in.Prefix))
		}
		for _, p := range out.CommonPrefixes {
			names = append(names, strings.TrimPrefix(aws.ToString(p.Prefix), *in.Prefix))
		}
		if !aws.ToBool(out.IsTruncated) {
			return names, nil
		}
		in.ContinuationToken = out.NextContinuationToken
	}
}

// fail turns an S3 client error into a StatusError when the server
// answered, naming the object's URL; a missing object's matches
// fs.ErrNotExist. The SDK wraps a request that got no answer (a
// connection refused or reset, a timeout) in a response error of status
// 0: that is the transport's error, returned as it is (retryable decides).
func (b *bucket) fail(name string, err error) error {
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() == 0 {
		return noAnswer(err)
	}
	se := &StatusError{URL: b.URL(name), Status: re.HTTPStatusCode()}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		se.Code = ae.ErrorCode()
	}
	return se
}

// noAnswer returns the cause of an S3 request that got no answer: the
// transport's error or the context's within the SDK's wrapping, which
// names the request's URL again.
func noAnswer(err error) error {
	var send *smithyhttp.RequestSendError
	var canceled *smithy.CanceledError
	switch {
	case errors.As(err, &send):
		err = send.Err
	case errors.As(err, &canceled):
		return canceled.Err
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// maxErrorBody is the most of an S3 error's body that is read: S3's are
// a few hundred bytes of XML.
const maxErrorBody = 64 << 10

// errorBodies is an S3 client's HTTP client that cuts the body of an
// answer other than 2xx after maxErrorBody bytes: the SDK reads an
// error's body whole before it parses it.
type errorBodies struct{ config.HTTPClient }

func (c errorBodies) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.HTTPClient.Do(req)
	if err == nil && resp.StatusCode/100 != 2 {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: maxErrorBody}
	}
	return resp, err
}

// cappedBody is a body whose reads fail after left more bytes.
type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("an error's body of more than %d bytes", maxErrorBody)
	}
	n, err := b.ReadCloser.Read(p[:min(int64(len(p)), b.left)])
	b.left -= int64(n)
	return n, err
}
