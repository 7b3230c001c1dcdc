package compress

import (
	"bytes"
	"errors"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// frames encodes data as zstd frames: one frame with its content size, or
// (streamed) one without, and data again as a second frame when twice.
func frames(t *testing.T, data []byte, streamed, twice bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	for range 1 + btoi(twice) {
		if streamed {
			w, err := zstd.NewWriter(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(data); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(enc.EncodeAll(data, nil))
	}
	return buf.Bytes()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestZstd: the build's decoder (libzstd with cgo, pure Go with -tags
// purego or CGO_ENABLED=0; make test runs both) decodes frames with and
// without a content size and concatenated frames into exactly the bytes
// expected, and refuses streams of another size or corrupt ones alike.
func TestZstd(t *testing.T) {
	data := bytes.Repeat([]byte("loadergen zarr chunk "), 5000)
	corrupt := frames(t, data, false, false)
	corrupt[len(corrupt)/2] ^= 0xff
	for _, tt := range []struct {
		name    string
		src     []byte
		dst     int
		want    []byte
		errSize bool // the error wraps ErrSize
		err     bool // some other error
	}{
		{"frame with content size", frames(t, data, false, false), len(data), data, false, false},
		{"streamed frame, no content size", frames(t, data, true, false), len(data), data, false, false},
		{"two frames", frames(t, data, false, true), 2 * len(data), append(bytes.Clone(data), data...), false, false},
		{"empty frame into nothing", frames(t, nil, false, false), 0, []byte{}, false, false},
		{"no input into nothing", nil, 0, []byte{}, false, false},
		{"shorter than expected", frames(t, data, false, false), len(data) + 1, nil, true, false},
		{"longer than expected", frames(t, data, false, false), len(data) - 1, nil, true, false},
		{"longer than nothing", frames(t, data, true, false), 0, nil, true, false},
		{"no input, bytes expected", nil, 8, nil, true, false},
		{"corrupt", corrupt, len(data), nil, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]byte, tt.dst)
			err := Zstd(dst, tt.src)
			switch {
			case tt.errSize && !errors.Is(err, ErrSize):
				t.Fatalf("Zstd: %v, want an error wrapping ErrSize", err)
			case tt.err && (err == nil || errors.Is(err, ErrSize)):
				t.Fatalf("Zstd: %v, want a decoding error", err)
			case !tt.errSize && !tt.err && err != nil:
				t.Fatalf("Zstd: %v", err)
			case tt.want != nil && !bytes.Equal(dst, tt.want):
				t.Fatalf("decoded %d bytes differ from the %d encoded", len(dst), len(tt.want))
			}
		})
	}
}
