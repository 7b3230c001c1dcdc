// Package s3 is the storage driver of S3 buckets and S3-compatible
// stores: importing it registers the scheme s3 with runtime/storage (see
// storage.Register), whose Open then reads roots at s3://bucket/prefix
// and OpenWritable writes them, through the AWS SDK. Generated loaders
// import it.
package s3

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

	"github.com/loadergen/loadergen/runtime/storage"
)

func init() { storage.Register("s3", open) }

// bucket is a root in an S3 bucket (or an S3-compatible store): object
// name is the key prefix+name.
type bucket struct {
	storage.Remote
	client *s3.Client
	name   string // the bucket
	prefix string // "" or a key prefix ending in "/"
}

// DefaultRegion is the region of S3 requests when the configuration names
// none: OpenOrganelle's public buckets are there.
const DefaultRegion = "us-east-1"

// Open returns the root at s3://bucket/prefix, under the retry policy of
// o (the first of o; none: the defaults). Credentials come from
// the AWS SDK's standard chain (the AWS_* environment variables, the
// shared config and credentials files and their profiles, SSO, web
// identity, the EC2 or ECS instance role). When the chain finds none, the
// requests are anonymous, which public buckets answer, unless something
// configured credentials (an AWS_* variable of the chain, a profile with
// keys, a role, SSO or a process): then Open returns the chain's error,
// naming what was set. AWS_ENDPOINT_URL_S3
// or AWS_ENDPOINT_URL points the client at an S3-compatible store (then
// addressed path-style: endpoint/bucket/key); AWS_REGION or the profile's
// region apply, else DefaultRegion. It makes no request to the bucket.
// The roots a process opens without an HTTP client in o, under the same
// AWS_* variables, share one client: the configuration is loaded once.
func Open(loc string, o ...storage.Options) (storage.Writable, error) {
	var opt storage.Options
	if len(o) > 0 {
		opt = o[0]
	}
	b, err := openBucket(loc, opt)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// open is Open for storage.Open and storage.OpenWritable.
func open(loc string, o storage.Options) (storage.Root, error) {
	b, err := openBucket(loc, o)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// openBucket is Open.
func openBucket(loc string, opt storage.Options) (*bucket, error) {
	u, err := url.Parse(loc)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%s: want s3://bucket/prefix (credentials come from the AWS configuration, not the URL)", storage.Redact(loc))
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		if err := storage.CheckName(prefix); err != nil {
			return nil, fmt.Errorf("%s: %w", storage.Redact(loc), err)
		}
		prefix += "/"
	}
	client, err := s3Client(opt)
	if err != nil {
		return nil, fmt.Errorf("%s: AWS configuration: %w", storage.Redact(loc), err)
	}
	b := &bucket{client: client, name: u.Host, prefix: prefix}
	b.Remote = storage.NewRemote(b, opt.RetryPolicy())
	return b, nil
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
func s3Client(opt storage.Options) (*s3.Client, error) {
	if opt.Client != nil {
		return newS3Client(opt.Client, opt.RetryPolicy().Timeout)
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
	c, err := newS3Client(awshttp.NewBuildableClient().WithTransportOptions(storage.ConfigureTransport), opt.RetryPolicy().Timeout)
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

func (b *bucket) Sub(dir string) storage.Root {
	c := *b
	if d := strings.Trim(dir, "/"); d != "" {
		c.prefix = b.prefix + d + "/"
	}
	c.Remote = b.Remote.For(&c)
	return &c
}

// Endpoint names the server of the bucket's requests when the
// configuration points them elsewhere than AWS's (AWS_ENDPOINT_URL_S3,
// ...), "" for AWS's own: an s3:// URL does not name it, and the disk
// cache keys what it keeps by it.
func (b *bucket) Endpoint() string { return aws.ToString(b.client.Options().BaseEndpoint) }

// Check refuses names that would leave the root (storage.CheckName), and
// the empty key: a root at the bucket itself names no object.
func (b *bucket) Check(name string) error {
	if b.prefix+name == "" {
		return fmt.Errorf("s3://%s names a bucket, not an object in it: give the object's key after the bucket (s3://%s/path/to/object)", b.name, b.name)
	}
	return storage.CheckName(name)
}

// Get makes one GetObject of name (see storage.Requester).
func (b *bucket) Get(ctx context.Context, name string, off, n int64) (*storage.Response, error) {
	in := &s3.GetObjectInput{Bucket: &b.name, Key: aws.String(b.prefix + name)}
	rng := storage.RangeHeader(off, n)
	if rng != "" {
		in.Range = &rng
	}
	out, err := b.client.GetObject(ctx, in)
	if err != nil {
		return nil, b.fail(name, err)
	}
	length := int64(-1)
	if out.ContentLength != nil {
		length = *out.ContentLength
	}
	// S3 answers a range it holds with a 206, whose Content-Range says
	// what it sent.
	return &storage.Response{Body: out.Body, Length: length, Partial: rng != "", Range: aws.ToString(out.ContentRange)}, nil
}

// Stat makes one HeadObject of name: its size and its ETag.
func (b *bucket) Stat(ctx context.Context, name string) (int64, string, error) {
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.name, Key: aws.String(b.prefix + name)})
	if err != nil {
		return 0, "", b.fail(name, err)
	}
	return aws.ToInt64(out.ContentLength), aws.ToString(out.ETag), nil
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
	if err := storage.CheckName(dir); err != nil {
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
		err := b.Do(ctx, func(ctx context.Context) error {
			var err error
			out, err = b.client.ListObjectsV2(ctx, in)
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

// fail turns an S3 client error into a storage.StatusError when the server
// answered, naming the object's URL; a missing object's matches
// fs.ErrNotExist. The SDK wraps a request that got no answer (a
// connection refused or reset, a timeout) in a response error of status
// 0: that is the transport's error, returned as it is (storage.Retry
// decides whether it is retried).
func (b *bucket) fail(name string, err error) error {
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() == 0 {
		return noAnswer(err)
	}
	se := &storage.StatusError{URL: b.URL(name), Status: re.HTTPStatusCode()}
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
