package s3

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/loadergen/loadergen/runtime/storage"
)

// maxDeletes is the most keys one DeleteObjects request takes.
const maxDeletes = 1000

// Put makes one PutObject of name, retried as reads are: S3 stores an
// object whole or not at all.
func (b *bucket) Put(ctx context.Context, name string, data []byte) error {
	if err := storage.CheckName(name); err != nil {
		return err
	}
	err := b.Do(ctx, func(ctx context.Context) error {
		_, err := b.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &b.name, Key: aws.String(b.prefix + name),
			Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))})
		if err != nil {
			return b.fail(name, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", b.URL(name), err)
	}
	return nil
}

// Walk lists the keys under dir's prefix, without a delimiter.
func (b *bucket) Walk(ctx context.Context, dir string) ([]string, error) {
	return b.list(ctx, dir, false)
}

// RemoveAll deletes the object dir and every key under dir's prefix, by
// DeleteObjects requests of up to 1000 keys.
func (b *bucket) RemoveAll(ctx context.Context, dir string) error {
	d := strings.Trim(dir, "/")
	if d == "" {
		return fmt.Errorf("remove %s: refusing to remove the root itself", b.URL(dir))
	}
	names, err := b.Walk(ctx, d)
	if err != nil {
		return err
	}
	keys := []string{b.prefix + d}
	for _, n := range names {
		keys = append(keys, b.prefix+d+"/"+n)
	}
	for len(keys) > 0 {
		part := keys[:min(len(keys), maxDeletes)]
		keys = keys[len(part):]
		objs := make([]types.ObjectIdentifier, len(part))
		for i, k := range part {
			objs[i] = types.ObjectIdentifier{Key: aws.String(k)}
		}
		var out *s3.DeleteObjectsOutput
		err := b.Do(ctx, func(ctx context.Context) error {
			var err error
			out, err = b.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &b.name,
				Delete: &types.Delete{Objects: objs, Quiet: aws.Bool(true)}})
			if err != nil {
				return b.fail(d, err)
			}
			return nil
		})
		if err == nil && len(out.Errors) > 0 {
			e := out.Errors[0]
			err = fmt.Errorf("%d keys not deleted, the first s3://%s/%s: %s %s", len(out.Errors), b.name, aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
		}
		if err != nil {
			return fmt.Errorf("remove %s: %w", b.URL(d), err)
		}
	}
	return nil
}
