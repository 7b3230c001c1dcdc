package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
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
// requests are anonymous, which public buckets answer. AWS_ENDPOINT_URL_S3
// or AWS_ENDPOINT_URL points the client at an S3-compatible store (then
// addressed path-style: endpoint/bucket/key); AWS_REGION or the profile's
// region apply, else DefaultRegion. It makes no request to the bucket.
func OpenS3(loc string, o ...Options) (Root, error) {
	u, err := url.Parse(loc)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%s: want s3://bucket/prefix", loc)
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		if err := checkName(prefix); err != nil {
			return nil, fmt.Errorf("%s: %w", loc, err)
		}
		prefix += "/"
	}
	opt := first(o)
	ctx, cancel := context.WithTimeout(context.Background(), opt.retry().Timeout)
	defer cancel()
	// The SDK's own client, unless Options give one: AWS_CA_BUNDLE needs
	// its transport options.
	var client config.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConnsPerHost = maxIdlePerHost
	})
	if opt.Client != nil {
		client = opt.Client
	}
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithHTTPClient(client),
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }), // Retry retries
	)
	if err != nil {
		return nil, fmt.Errorf("%s: AWS configuration: %w", loc, err)
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		cfg.Credentials = aws.AnonymousCredentials{}
	}
	s3c := s3.NewFromConfig(cfg, func(so *s3.Options) {
		so.UsePathStyle = so.BaseEndpoint != nil
		// Ranged reads of objects written without checksums are the norm.
		so.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return &bucket{client: s3c, name: u.Host, prefix: prefix, retry: opt.retry()}, nil
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

func (b *bucket) ReadAll(name string, buf []byte) ([]byte, error) {
	if err := checkName(name); err != nil {
		return buf, err
	}
	err := b.retry.do(func(ctx context.Context) error {
		out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.name, Key: aws.String(b.prefix + name)})
		if err != nil {
			return b.fail(name, err)
		}
		defer out.Body.Close()
		buf, err = readBody(out.Body, aws.ToInt64(out.ContentLength), buf)
		return err
	})
	if err != nil {
		return buf, fmt.Errorf("read %s: %w", b.URL(name), err)
	}
	return buf, nil
}

func (b *bucket) ReadAt(name string, p []byte, off int64) error {
	if err := checkName(name); err != nil {
		return err
	}
	if len(p) == 0 {
		return nil
	}
	n := int64(len(p))
	err := b.retry.do(func(ctx context.Context) error {
		out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.name, Key: aws.String(b.prefix + name),
			Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))})
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

func (b *bucket) Size(name string) (int64, error) {
	if err := checkName(name); err != nil {
		return 0, err
	}
	var size int64
	err := b.retry.do(func(ctx context.Context) error {
		out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.name, Key: aws.String(b.prefix + name)})
		if err != nil {
			return b.fail(name, err)
		}
		size = aws.ToInt64(out.ContentLength)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", b.URL(name), err)
	}
	return size, nil
}

func (b *bucket) List(dir string) ([]string, error) {
	if err := checkName(dir); err != nil {
		return nil, err
	}
	prefix := b.prefix
	if d := strings.Trim(dir, "/"); d != "" {
		prefix += d + "/"
	}
	var names []string
	var token *string
	for {
		var out *s3.ListObjectsV2Output
		err := b.retry.do(func(ctx context.Context) error {
			var err error
			out, err = b.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b.name, Prefix: &prefix,
				Delimiter: aws.String("/"), ContinuationToken: token})
			if err != nil {
				return b.fail(dir, err)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", b.URL(dir), err)
		}
		for _, o := range out.Contents {
			names = append(names, strings.TrimPrefix(aws.ToString(o.Key), prefix))
		}
		for _, p := range out.CommonPrefixes {
			names = append(names, strings.TrimPrefix(aws.ToString(p.Prefix), prefix))
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		token = out.NextContinuationToken
	}
	slices.Sort(names)
	return names, nil
}

// fail turns an S3 client error into a StatusError when the server
// answered, naming the object's URL; a missing object's matches
// fs.ErrNotExist.
func (b *bucket) fail(name string, err error) error {
	var re *awshttp.ResponseError
	if !errors.As(err, &re) {
		return err // no answer: a connection or timeout error
	}
	se := &StatusError{URL: b.URL(name), Status: re.HTTPStatusCode()}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		se.Code = ae.ErrorCode()
	}
	return se
}
