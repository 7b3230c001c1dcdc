package blosc

import (
	"bytes"
	"errors"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtures holds frames that numcodecs 0.11 wrote through Debian's c-blosc
// 1.21 (testdata/zarr/make_fixtures.py), each next to the data it encodes.
const fixtures = "../../../testdata/zarr/blosc"

// fixtureFrames returns every fixture frame by file name, with its raw data.
func fixtureFrames(t testing.TB) map[string][2][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.blosc"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixture frames in %s (%v)", fixtures, err)
	}
	out := map[string][2][]byte{}
	for _, p := range paths {
		name := filepath.Base(p)
		frame, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		data := name[:strings.LastIndex(name[:strings.LastIndex(name[:strings.LastIndex(name, "_")], "_")], "_")]
		raw, err := os.ReadFile(filepath.Join(fixtures, data+".raw"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = [2][]byte{frame, raw}
	}
	return out
}

func TestDecodeNumcodecsFrames(t *testing.T) {
	codecs := map[Codec]bool{}
	flags := map[string]bool{}
	var d Decoder
	for name, f := range fixtureFrames(t) {
		frame, raw := f[0], f[1]
		h, err := ParseHeader(frame)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		codecs[h.Codec()] = true
		for flag, what := range map[uint8]string{flagShuffle: "shuffle", flagBitShuffle: "bitshuffle", flagMemcpy: "memcpy", flagNoSplit: "nosplit"} {
			if h.Flags&flag != 0 {
				flags[what] = true
			}
		}
		if h.NBytes > h.BlockSize {
			flags["several blocks"] = true
		}
		got := make([]byte, len(raw))
		if err := d.Decode(got, frame); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, raw) {
			t.Errorf("%s: decoded bytes differ from the data numcodecs encoded", name)
		}
	}
	// The fixtures must cover what the decoder claims to read.
	if len(codecs) != 5 {
		t.Errorf("fixtures cover codecs %v, want all 5", codecs)
	}
	for _, f := range []string{"shuffle", "bitshuffle", "memcpy", "nosplit", "several blocks"} {
		if !flags[f] {
			t.Errorf("no fixture frame has %s", f)
		}
	}
}

func TestTranspose8x8(t *testing.T) {
	for _, x := range []uint64{0, 1, 0x8000000000000000, 0x0123456789abcdef, 0xfedcba9876543210, 0xff, 0x0101010101010101} {
		var want uint64
		for r := range 8 {
			for c := range 8 {
				if x>>(8*r+c)&1 != 0 {
					want |= 1 << (8*c + r)
				}
			}
		}
		if got := transpose8x8(x); got != want {
			t.Errorf("transpose8x8(%#x) = %#x, want %#x", x, got, want)
		}
		if bits.OnesCount64(x) != bits.OnesCount64(want) {
			t.Fatal("reference transpose lost bits")
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	frame, raw := fixtureFrames(t)["u2_lz4_shuffle_0.blosc"][0], fixtureFrames(t)["u2_lz4_shuffle_0.blosc"][1]
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), frame...)) }
	tests := []struct {
		name  string
		frame []byte
		dst   int
		want  string
	}{
		{"short header", frame[:10], len(raw), "shorter than the 16-byte header"},
		{"future version", edit(func(b []byte) []byte { b[0] = 3; return b }), len(raw), "format version 3"},
		{"reserved flag", edit(func(b []byte) []byte { b[2] |= 0x08; return b }), len(raw), "reserved flag"},
		{"unknown codec", edit(func(b []byte) []byte { b[2] |= 7 << 5; return b }), len(raw), "unknown codec 7"},
		{"truncated", frame[:len(frame)-7], len(raw), "the frame has"},
		{"wrong destination", frame, len(raw) - 1, "destination holds"},
		{"block offset out of range", edit(func(b []byte) []byte { b[16] = 0xff; b[17] = 0xff; return b }), len(raw), "block 0 starts at"},
		{"stream length out of range", edit(func(b []byte) []byte { b[20] = 0xff; b[21] = 0xff; b[22] = 0xff; return b }), len(raw), "stream 0: length"},
		{"corrupt payload", edit(func(b []byte) []byte {
			for i := 40; i < len(b); i += 3 {
				b[i] ^= 0x5a
			}
			return b
		}), len(raw), "block 0: "},
	}
	var d Decoder
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := d.Decode(make([]byte, tt.dst), tt.frame)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode: %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if err := d.Decode(make([]byte, len(raw)), frame[:10]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a short frame's error %v does not wrap ErrCorrupt", err)
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	frames := fixtureFrames(t)
	inputs := map[string][]byte{
		"empty":      nil,
		"one byte":   {7},
		"u2 pattern": frames["u2_lz4_shuffle_0.blosc"][1],
		"u4 blocks":  bytes.Repeat(frames["u4_lz4_shuffle_1000.blosc"][1], 5), // 400 kB: 2 blocks
		"random":     frames["random_lz4_shuffle_memcpy.blosc"][1],
	}
	var e Encoder
	var d Decoder
	for name, src := range inputs {
		for _, ts := range []int{1, 2, 4, 8, 3} {
			frame, err := e.Encode([]byte("prefix"), src, ts)
			if err != nil {
				t.Fatalf("%s/%d: %v", name, ts, err)
			}
			if string(frame[:6]) != "prefix" {
				t.Fatalf("%s/%d: Encode did not append", name, ts)
			}
			frame = frame[6:]
			if len(frame) > HeaderSize+len(src) {
				t.Errorf("%s/%d: frame of %d bytes for %d", name, ts, len(frame), len(src))
			}
			got := make([]byte, len(src))
			if err := d.Decode(got, frame); err != nil {
				t.Fatalf("%s/%d: %v", name, ts, err)
			}
			if !bytes.Equal(got, src) {
				t.Errorf("%s/%d: round trip changed the data", name, ts)
			}
		}
	}
}

// TestEncodeRefusesPastMaxBufferSize: a frame holds at most MaxBufferSize
// bytes, c-blosc's BLOSC_MAX_BUFFERSIZE (the source is never touched: the
// refusal comes first, so its pages are never mapped in).
func TestEncodeRefusesPastMaxBufferSize(t *testing.T) {
	_, err := new(Encoder).Encode(nil, make([]byte, MaxBufferSize+1), 1)
	if want := "blosc: 2147483632 bytes are more than the 2147483631 a frame may hold"; err == nil || err.Error() != want {
		t.Errorf("Encode of MaxBufferSize+1 bytes: %v, want %s", err, want)
	}
}

// TestDecodeRange: decoding a range of a frame gives exactly the full
// decode's bytes over the blocks that cover it, and writes nothing before
// the range's start, for every fixture frame and ranges on and off block
// boundaries; a range continues a prefix as an extension would.
func TestDecodeRange(t *testing.T) {
	var d Decoder
	for name, f := range fixtureFrames(t) {
		frame, raw := f[0], f[1]
		h, err := ParseHeader(frame)
		if err != nil {
			t.Fatal(err)
		}
		n := len(raw)
		bounds := []int{0, 1, n / 3, h.BlockSize - 1, h.BlockSize, h.BlockSize + 1, n / 2, n - 1, n}
		for _, from := range bounds {
			for _, to := range bounds {
				if from < 0 || to > n || from >= to {
					continue
				}
				got := bytes.Repeat([]byte{0xa5}, n)
				end, err := d.DecodeRange(got, frame, from, to)
				if err != nil {
					t.Fatalf("%s [%d, %d): %v", name, from, to, err)
				}
				if end < to || end > n {
					t.Fatalf("%s [%d, %d): decoded to %d", name, from, to, end)
				}
				if !h.Stored() && end != n && end%h.BlockSize != 0 {
					t.Errorf("%s [%d, %d): ends at %d, inside a block of %d", name, from, to, end, h.BlockSize)
				}
				if !bytes.Equal(got[from:end], raw[from:end]) {
					t.Fatalf("%s [%d, %d): bytes differ from the data", name, from, to)
				}
				if bytes.Count(got[:from], []byte{0xa5}) != from {
					t.Fatalf("%s [%d, %d): wrote before %d", name, from, to, from)
				}
			}
		}
		// A prefix of one block, then the rest.
		got := make([]byte, n)
		end, err := d.DecodeRange(got, frame, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if end, err = d.DecodeRange(got, frame, end, n); err != nil || end != n || !bytes.Equal(got, raw) {
			t.Fatalf("%s: prefix then the rest: %d, %v", name, end, err)
		}
	}
}
