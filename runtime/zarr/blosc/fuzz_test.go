package blosc

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzDecode feeds the decoder damaged and made-up frames, seeded with
// numcodecs' small fixture frames (every codec and shuffle; Go's fuzzer
// slows to a crawl on inputs of many kB): it must return an error or the
// declared number of bytes, and never panic or read out of bounds. A frame
// that decodes is decoded again, by a fresh decoder into a buffer of other
// bytes: the two results must agree, so every byte was written and the
// shared decoder carries nothing over from earlier frames.
func FuzzDecode(f *testing.F) {
	for name, fr := range fixtureFrames(f) {
		if strings.HasPrefix(name, "small_") {
			f.Add(fr[0])
		}
	}
	var d Decoder
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, err := ParseHeader(frame)
		n := h.NBytes
		if err != nil || n > 1<<20 {
			return
		}
		got := make([]byte, n)
		if d.Decode(got, frame) != nil {
			return
		}
		again := bytes.Repeat([]byte{0xff}, n)
		if err := new(Decoder).Decode(again, frame); err != nil {
			t.Fatalf("a frame decoded once fails the second time: %v", err)
		}
		if !bytes.Equal(got, again) {
			t.Fatalf("two decodings of %d bytes differ", n)
		}
		// A range of the frame (its bounds drawn from the frame's bytes)
		// decodes to the same bytes and writes nothing before it starts.
		if n == 0 {
			return
		}
		from := int(frame[len(frame)-1]) * n / 256
		to := from + 1 + int(frame[len(frame)/2])*(n-from-1)/255
		part := bytes.Repeat([]byte{0xa5}, n)
		end, err := new(Decoder).DecodeRange(part, frame, from, to)
		if err != nil {
			t.Fatalf("a frame that decodes fails in range [%d, %d): %v", from, to, err)
		}
		if end < to || end > n || !bytes.Equal(part[from:end], got[from:end]) {
			t.Fatalf("range [%d, %d) decoded to %d, or differs", from, to, end)
		}
		if bytes.Count(part[:from], []byte{0xa5}) != from {
			t.Fatalf("range [%d, %d) wrote before %d", from, to, from)
		}
	})
}

// FuzzEncode checks that every frame Encoder writes decodes to its data.
func FuzzEncode(f *testing.F) {
	f.Add([]byte("a few bytes, a few bytes, a few bytes"), uint8(1))
	f.Add(bytes.Repeat([]byte{1, 0, 0, 0}, 300), uint8(4))
	var e Encoder
	var d Decoder
	f.Fuzz(func(t *testing.T, data []byte, ts uint8) {
		frame, err := e.Encode(nil, data, int(ts))
		if ts == 0 {
			if err == nil {
				t.Fatal("type size 0 accepted")
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(data))
		if err := d.Decode(got, frame); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatal("round trip changed the data")
		}
	})
}
