package compress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
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
			buf.Write(streamedFrame(t, data))
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

// streamedFrame encodes data as one zstd frame without a content size, as
// a stream is written whose size is not known when its first block is
// (a flush after its first half: klauspost's writer declares the size of
// what it is given before its first block), with the writer's options.
func streamedFrame(t *testing.T, data []byte, opts ...zstd.EOption) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for i, part := range [][]byte{data[:len(data)/2], data[len(data)/2:]} {
		if _, err := w.Write(part); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if content, _, ok := zstdHeader(buf.Bytes()); !ok || content >= 0 {
		t.Fatalf("the streamed frame declares its size (%d)", content)
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

// TestZstdDeclared: a frame that declares more bytes than expected is
// refused from its header, whole or in part (a prefix decoded by the
// streaming decoder read on before), naming both sizes. A frame without a
// content size whose window is larger than the whole expected decodes
// its prefix whole, not through a streaming decoder's window.
func TestZstdDeclared(t *testing.T) {
	data := bytes.Repeat([]byte("loadergen zarr chunk "), 5000)
	bigWindow := streamedFrame(t, data, zstd.WithWindowSize(8<<20))
	if _, window, _ := zstdHeader(bigWindow); window != 8<<20 {
		t.Fatalf("the streamed frame's window is %d bytes, not 8 MiB", window)
	}
	for _, tt := range []struct {
		name string
		src  []byte
		dst  int
		err  string // "" when it decodes to data[:dst]
	}{
		{"declares one more", frames(t, data, false, false), len(data) - 1, "the zstd frame declares 105000 bytes, more than the 104999 expected"},
		{"declares 2 GiB", declare(frames(t, data, false, false), 1<<31), len(data), "the zstd frame declares 2147483648 bytes, more than the 105000 expected"},
		{"window past the whole", bigWindow, len(data), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, to := range []int{tt.dst, tt.dst / 3} {
				dst := make([]byte, tt.dst)
				err := ZstdRange(dst, tt.src, 0, to)
				switch {
				case tt.err == "" && err != nil:
					t.Errorf("[0, %d): %v", to, err)
				case tt.err == "" && !bytes.Equal(dst[:to], data[:to]):
					t.Errorf("[0, %d): the bytes differ", to)
				case tt.err != "" && to == tt.dst && (!errors.Is(err, ErrSize) || !strings.Contains(err.Error(), tt.err)):
					t.Errorf("[0, %d): %v, want ErrSize with %q", to, err, tt.err)
				case tt.err != "" && to < tt.dst && (err == nil || !strings.Contains(err.Error(), tt.err)):
					t.Errorf("[0, %d): %v, want %q", to, err, tt.err)
				}
			}
		})
	}
}

// declare rewrites the content size of the single-segment frame src
// (klauspost's EncodeAll writes one, of 8 bytes when it needs them, or
// fewer) to n, in a field of 8 bytes: the header's descriptor says so, and
// the field grows to 8 bytes.
func declare(src []byte, n uint64) []byte {
	fhd := src[4]
	size := [4]int{1, 2, 4, 8}[fhd>>6]
	out := append([]byte{}, src[:4]...)
	out = append(out, fhd|0xc0)
	dict := [4]int{0, 1, 2, 4}[fhd&3]
	out = append(out, src[5:5+dict]...)
	out = binary.LittleEndian.AppendUint64(out, n)
	return append(out, src[5+dict+size:]...)
}

// BenchmarkZstd: one chunk (benchChunk) decoded by this build's Zstd (libzstd with cgo, pure Go without) and by
// klauspost's pure-Go decoder, side by side.
func BenchmarkZstd(b *testing.B) {
	data, src := benchChunk(b)
	dst := make([]byte, len(data))
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		b.Fatal(err)
	}
	defer dec.Close()
	for _, bb := range []struct {
		name   string
		decode func() error
	}{
		{"build", func() error { return Zstd(dst, src) }},
		{"klauspost", func() error { _, err := dec.DecodeAll(src, dst[:0]); return err }},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := bb.decode(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchChunk is the benchmarks' chunk: 1 MiB of EM-like bytes (ramps and
// noise, as peer-bench writes them) and its zstd frame at klauspost's
// SpeedBetterCompression.
func benchChunk(b *testing.B) (data, src []byte) {
	b.Helper()
	data = make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		y, x := i/1024, i%1024
		data[i] = byte(128 + (50*(y%53-26)+30*(x%29-14))/40 + rng.IntN(40) - 20)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression))
	if err != nil {
		b.Fatal(err)
	}
	return data, enc.EncodeAll(data, nil)
}
