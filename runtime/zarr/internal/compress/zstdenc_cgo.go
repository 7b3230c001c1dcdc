//go:build cgo && !purego

package compress

import (
	"fmt"
	"sync"

	"github.com/DataDog/zstd"
)

// zstdContexts recycles libzstd compression contexts: one goroutine uses
// one between Get and Put.
var zstdContexts = sync.Pool{New: func() any { return zstd.NewCtx() }}

// ZstdEncode encodes src as one zstd frame at level (1 to 22), which
// records its content size (numcodecs' decoder needs it), through
// libzstd, and returns it in dst's memory when dst can hold it.
func ZstdEncode(dst, src []byte, level int) ([]byte, error) {
	c := zstdContexts.Get().(zstd.Ctx)
	defer zstdContexts.Put(c)
	out, err := c.CompressLevel(dst[:cap(dst)], src, level)
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	return out, nil
}
