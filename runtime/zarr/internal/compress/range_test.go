package compress

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// rangeFormats are the streams that decode in ranges, with an encoder and
// the offset from the end of a stream of a checksum byte (zstd's content
// checksum, gzip's CRC-32, zlib's Adler-32).
var rangeFormats = []struct {
	name   string
	encode func(t *testing.T, data []byte) []byte
	decode func(dst, src []byte, from, to int) error
	sumAt  int
}{
	{"zstd", func(t *testing.T, data []byte) []byte {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
		if err != nil {
			t.Fatal(err)
		}
		return enc.EncodeAll(data, nil)
	}, ZstdRange, 2},
	{"gzip", func(t *testing.T, data []byte) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(data)
		w.Close()
		return b.Bytes()
	}, GzipRange, 6},
	{"zlib", func(t *testing.T, data []byte) []byte {
		var b bytes.Buffer
		w := zlib.NewWriter(&b)
		w.Write(data)
		w.Close()
		return b.Bytes()
	}, ZlibRange, 2},
}

// TestRanges: a range of a stream decodes to the whole stream's bytes
// there and writes nothing before it; only a range that reaches the
// stream's end verifies its checksum (a stream cut short cannot), and a
// stream shorter than expected is a size error whatever the range.
func TestRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	data := make([]byte, 300_000)
	for i := range data {
		data[i] = byte(i/1000) + byte(rng.IntN(8))
	}
	n := len(data)
	for _, f := range rangeFormats {
		t.Run(f.name, func(t *testing.T) {
			src := f.encode(t, data)
			bounds := []int{0, 1, 1000, n / 3, n / 2, n - 1, n}
			for _, from := range bounds {
				for _, to := range bounds {
					if from >= to {
						continue
					}
					got := bytes.Repeat([]byte{0xa5}, n)
					if err := f.decode(got, src, from, to); err != nil {
						t.Fatalf("[%d, %d): %v", from, to, err)
					}
					if !bytes.Equal(got[from:to], data[from:to]) {
						t.Fatalf("[%d, %d): bytes differ", from, to)
					}
					if bytes.Count(got[:from], []byte{0xa5}) != from {
						t.Fatalf("[%d, %d): wrote before %d", from, to, from)
					}
				}
			}
			// A damaged checksum: a prefix decodes (it cannot be checked), a
			// range to the end, or the whole, is refused.
			bad := bytes.Clone(src)
			bad[len(bad)-f.sumAt] ^= 0xff
			dst := make([]byte, n)
			if err := f.decode(dst, bad, 0, n/2); err != nil {
				t.Errorf("prefix of a stream with a damaged checksum: %v", err)
			}
			for _, from := range []int{0, n / 2} {
				if err := f.decode(dst, bad, from, n); err == nil {
					t.Errorf("[%d, %d) of a stream with a damaged checksum: no error", from, n)
				}
			}
			// Expecting more than the stream holds.
			long := make([]byte, n+10)
			for _, r := range [][2]int{{0, n + 5}, {n + 1, n + 5}, {n / 2, n + 10}} {
				if err := f.decode(long, src, r[0], r[1]); !errors.Is(err, ErrSize) {
					t.Errorf("%v of a stream of %d bytes: %v, want ErrSize", r, n, err)
				}
			}
			// Expecting less: a prefix cannot tell, but for a zstd frame's
			// declared size; the end can.
			short := make([]byte, n-10)
			if err := f.decode(short, src, 0, n/2); (err != nil) != (f.name == "zstd") {
				t.Errorf("prefix: %v", err)
			}
			if err := f.decode(short, src, n/2, n-10); err == nil {
				t.Errorf("a stream longer than expected read to its end: no error")
			}
			if err := f.decode(dst, src, 5, 2); err == nil {
				t.Errorf("range [5, 2): no error")
			}
		})
	}
}

// TestRangeReusesDecoders: pooled decoders carry nothing from one stream
// into the next, whether the last one stopped early or not.
func TestRangeReusesDecoders(t *testing.T) {
	for _, f := range rangeFormats {
		for i := range 6 {
			data := bytes.Repeat([]byte(fmt.Sprintf("stream %d of %s, ", i, f.name)), 2000+i)
			src := f.encode(t, data)
			got := make([]byte, len(data))
			to := len(data) / (1 + i%2)
			if err := f.decode(got, src, 0, to); err != nil || !bytes.Equal(got[:to], data[:to]) {
				t.Fatalf("%s stream %d: %v", f.name, i, err)
			}
		}
	}
}

// BenchmarkZstdRange: the prefix decode of one chunk (benchChunk), stopping at an eighth, a quarter, a half and
// the whole (the whole through Zstd, for the comparison ZstdRange makes).
func BenchmarkZstdRange(b *testing.B) {
	data, src := benchChunk(b)
	dst := make([]byte, len(data))
	for _, frac := range []int{8, 4, 2, 1} {
		to := len(data) / frac
		b.Run(fmt.Sprintf("1of%d", frac), func(b *testing.B) {
			b.SetBytes(int64(to))
			b.ReportAllocs()
			for b.Loop() {
				if err := zstdStream(dst, src, 0, to); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("whole", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if err := Zstd(dst, src); err != nil {
				b.Fatal(err)
			}
		}
	})
}
