package zarr

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// TestPartialDecodeEqualsWhole: for every fixture array (every codec and
// layout in testdata/zarr), a chunk decoded in part holds exactly a window
// of its whole decode, holding at least the window asked; extending that
// window below, above or both adds the bytes of the whole decode there and
// writes nothing inside the window held; chunks stored transposed (v2
// order F, v3 transpose) or under numcodecs' LZ4 decode whole.
func TestPartialDecodeEqualsWhole(t *testing.T) {
	partial := map[string]bool{}
	windowed := map[string]bool{} // a window not starting at byte 0
	for _, c := range fixtureCases(t) {
		if c.Error != "" || c.Multiscale != nil {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			a, err := openFixture(t, c, 64)
			if err != nil {
				t.Fatal(err)
			}
			elem, size := a.DType().Size(), a.unitBytes
			units := int64(1)
			for _, g := range a.grid {
				units *= int64(g)
			}
			at := func(f float64) int { return int(f*float64(size)) / elem * elem }
			for u := int64(0); u < units; u += max(1, units/7) {
				buf, win, _, charge, err := a.load(bg, a.chunkEntry(u), window{0, size})
				if err != nil {
					t.Fatal(err)
				}
				decoding.release(charge) // the buffer is the test's, not the cache's
				if buf == nil {
					continue // not stored
				}
				if win != (window{0, size}) {
					t.Fatalf("unit %d: the whole load holds %v of %d bytes", u, win, size)
				}
				whole := slices.Clone(buf[headroom:])
				for _, want := range []window{
					{0, elem}, {0, at(1.0 / 3)}, {0, at(0.5)}, {0, size - elem}, {0, size},
					{at(0.5), size}, {at(0.6), at(0.7) + elem}, {size - elem, size}, {at(1.0 / 3), at(2.0 / 3)},
				} {
					want.hi = max(want.hi, want.lo+elem)
					buf, win, _, charge, err := a.load(bg, a.chunkEntry(u), want)
					if err != nil {
						t.Fatalf("unit %d, window %v: %v", u, want, err)
					}
					decoding.release(charge)
					if !win.holds(want) || win.lo < 0 || win.hi > size || win.lo%elem != 0 || win.hi%elem != 0 {
						t.Fatalf("unit %d: window %v holds %v of %d bytes", u, want, win, size)
					}
					if !a.partial && win != (window{0, size}) {
						t.Fatalf("unit %d: %v of %d bytes of a chunk that decodes only whole", u, win, size)
					}
					if win != (window{0, size}) {
						partial[c.Name] = true
					}
					if win.lo > 0 {
						windowed[c.Name] = true
					}
					data := buf[headroom:]
					if !bytes.Equal(data[win.lo:win.hi], whole[win.lo:win.hi]) {
						t.Fatalf("unit %d: window %v differs from the whole decode at byte %d", u, want, win.lo+firstDiff(data[win.lo:win.hi], whole[win.lo:win.hi]))
					}
					for _, more := range []window{{win.lo, win.hi + elem}, {win.lo - elem, win.hi}, {0, size}} {
						if more.lo < 0 || more.hi > size || win.holds(more) {
							continue
						}
						poison := bytes.Repeat([]byte{0xa5}, win.hi-win.lo)
						copy(data[win.lo:], poison)
						got, err := a.extend(bg, a.chunkEntry(u), buf, win, more)
						if err != nil {
							t.Fatalf("unit %d: extending %v to %v: %v", u, win, more, err)
						}
						if !got.holds(more) || !got.holds(win) || got.hi > size || got.lo%elem != 0 || got.hi%elem != 0 {
							t.Fatalf("unit %d: extending %v to %v holds %v", u, win, more, got)
						}
						if !bytes.Equal(data[win.lo:win.hi], poison) {
							t.Fatalf("unit %d: extending %v wrote inside it", u, win)
						}
						for _, r := range []window{{got.lo, win.lo}, {win.hi, got.hi}} {
							if !bytes.Equal(data[r.lo:r.hi], whole[r.lo:r.hi]) {
								t.Fatalf("unit %d: extension %v of %v differs from the whole decode", u, r, win)
							}
						}
						copy(data[win.lo:], whole[win.lo:win.hi])
						win = got
					}
				}
			}
		})
	}
	// Each codec and layout that can stop early did, somewhere.
	for _, name := range []string{
		"raw_i1_1d", "bigendian_i2_raw_f", "zstd6_u1_slash", "gzip_i8", "zlib_u8", "bigendian_f4_zstd",
		"blosc_zstd_shuffle_u8_blocks", "blosc_lz4_memcpy_random_u1",
		"v3_gzip_crc32c_f8", "v3_bytes_be_f4_zstd", "v3_zstd_no_content_size_u1",
	} {
		if name == "bigendian_i2_raw_f" { // order F: whole
			if partial[name] {
				t.Errorf("%s: an F-order chunk decoded in part", name)
			}
			continue
		}
		if !partial[name] {
			t.Errorf("%s: no chunk decoded in part", name)
		}
	}
	// Blosc and raw chunks hold windows that do not start the chunk;
	// compressed streams decode from their start.
	for _, name := range []string{"raw_i1_1d", "blosc_zstd_shuffle_u8_blocks", "blosc_lz4_memcpy_random_u1"} {
		if !windowed[name] {
			t.Errorf("%s: no window past the chunk's start", name)
		}
	}
	for _, name := range []string{"zstd6_u1_slash", "gzip_i8", "zlib_u8", "v3_gzip_crc32c_f8"} {
		if windowed[name] {
			t.Errorf("%s: a stream's window past its start", name)
		}
	}
	for _, name := range []string{"order_f_blosc_i2", "order_f_raw_f8_2d", "v3_transpose_blosc_i4", "lz4_f2"} {
		if partial[name] {
			t.Errorf("%s: decoded in part, but its chunks decode only whole", name)
		}
	}
}

// prefixCases are fixtures whose chunks decode in part: raw, each stream
// codec, Blosc in blocks and stored, a checksum. (The sharded fixtures'
// inner chunks are single Blosc blocks: they decode whole.)
var prefixCases = []fixtureCase{
	{Name: "raw_i1_1d", Path: "v2/raw_i1_1d"},
	{Name: "zstd6_u1_slash", Path: "v2/zstd6_u1_slash"},
	{Name: "gzip_i8", Path: "v2/gzip_i8"},
	{Name: "zlib_u8", Path: "v2/zlib_u8"},
	{Name: "blosc_zstd_shuffle_u8_blocks", Path: "v2/blosc_zstd_shuffle_u8_blocks"},
	{Name: "blosc_lz4_memcpy_random_u1", Path: "v2/blosc_lz4_memcpy_random_u1"},
	{Name: "bigendian_f4_zstd", Path: "v2/bigendian_f4_zstd"},
	{Name: "v3_gzip_crc32c_f8", Path: "v3/gzip_crc32c_f8"},
}

// chunkSlabs returns boxes of chunk 0 of a: one per row along axis 0 (the
// window each needs moves with the row), clipped to the array.
func chunkSlabs(a *Array) (origins, shapes [][]int) {
	n := len(a.shape)
	rows := min(a.unit[0], a.shape[0])
	for z := range rows {
		origin, shape := make([]int, n), make([]int, n)
		origin[0], shape[0] = z, 1
		for k := 1; k < n; k++ {
			shape[k] = min(a.unit[k], a.shape[k])
		}
		origins, shapes = append(origins, origin), append(shapes, shape)
	}
	return origins, shapes
}

// rowReader opens fixture c and returns it, the rows of its chunk 0
// (chunkSlabs), and a function that reads row i and checks it against
// numpy's bytes.
func rowReader(t *testing.T, c fixtureCase) (*Array, int, func(i int)) {
	t.Helper()
	a, err := openFixture(t, c, 64)
	if err != nil {
		t.Fatal(err)
	}
	want := loadExpected(t, c.Name, a)
	origins, shapes := chunkSlabs(a)
	return a, len(origins), func(i int) {
		t.Helper()
		box := want.box(origins[i], shapes[i], a.fill)
		got := make([]byte, len(box))
		if err := a.Read(got, origins[i], shapes[i]); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, box) {
			t.Fatalf("row %d differs from numpy's", i)
		}
	}
}

// TestPrefixExtendsAcrossReads: a read of a chunk's first row decodes a
// prefix; a later read of its last row extends it (one load, one
// extension); reading either again decodes nothing.
func TestPrefixExtendsAcrossReads(t *testing.T) {
	for _, c := range prefixCases {
		t.Run(c.Name, func(t *testing.T) {
			a, rows, read := rowReader(t, c)
			if rows < 2 {
				t.Skip("chunk 0 has one row")
			}
			base := a.cache.Stats()
			last := rows - 1
			read(0)
			st := a.cache.Stats()
			chunkLoads := st.Loads - base.Loads
			if st.Extends != 0 {
				t.Fatalf("the first read extended: %+v", st)
			}
			read(last)
			read(0)
			read(last)
			st = a.cache.Stats()
			if st.Loads-base.Loads != chunkLoads || st.Extends != 1 {
				t.Errorf("stats %+v after first row, last row, again: want %d loads and 1 extension", st, chunkLoads)
			}
		})
	}
}

// TestConcurrentPrefixes: readers of the same chunk that need different
// windows of it, at once (run it with -race): each gets numpy's bytes,
// the chunk is loaded once, and extensions, one at a time, never disturb
// what other readers copy.
func TestConcurrentPrefixes(t *testing.T) {
	for _, c := range prefixCases {
		t.Run(c.Name, func(t *testing.T) {
			for round := range 8 {
				a, err := openFixture(t, c, 64)
				if err != nil {
					t.Fatal(err)
				}
				want := loadExpected(t, c.Name, a)
				origins, shapes := chunkSlabs(a)
				var wg sync.WaitGroup
				errs := make(chan string, len(origins))
				for i := range origins {
					i := (i*7 + round) % len(origins) // start them in a mixed order
					wg.Add(1)
					go func() {
						defer wg.Done()
						for rep := range 3 {
							j := (i + rep*len(origins)/3) % len(origins)
							box := want.box(origins[j], shapes[j], a.fill)
							got := make([]byte, len(box))
							if err := a.Read(got, origins[j], shapes[j]); err != nil {
								errs <- err.Error()
								return
							}
							if !bytes.Equal(got, box) {
								errs <- "a row differs from numpy's"
								return
							}
						}
					}()
				}
				wg.Wait()
				close(errs)
				for e := range errs {
					t.Fatal(e)
				}
				if st := a.cache.Stats(); st.Loads > 2 { // the chunk, and a shard's index
					t.Errorf("stats %+v: the chunk was loaded more than once", st)
				}
			}
		})
	}
}

// TestWindowExtendsBelowAnyWindow: a Blosc chunk in blocks, holding a
// window that starts and ends inside blocks (as no read makes one, so the
// blocks below it are decoded aside), extends to the whole chunk with the
// bytes of the whole decode, writing nothing inside the window held.
func TestWindowExtendsBelowAnyWindow(t *testing.T) {
	c := fixtureCase{Name: "blosc_zstd_shuffle_u8_blocks", Path: "v2/blosc_zstd_shuffle_u8_blocks"}
	a, err := openFixture(t, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(a.dir, a.key([]int{0, 0, 0})))
	if err != nil {
		t.Fatal(err)
	}
	elem, size := a.DType().Size(), a.unitBytes
	var d decoder
	whole := make([]byte, size)
	if err := a.chain.decode(&d, whole, src, a.unit, elem); err != nil {
		t.Fatal(err)
	}
	const block = 4096 // the fixture's Blosc block size
	for _, have := range []window{{block + elem, 2*block + 3*elem}, {elem, block - elem}, {block + 5*elem, size}} {
		out := make([]byte, size)
		poison := bytes.Repeat([]byte{0xa5}, have.hi-have.lo)
		copy(out[have.lo:], poison)
		win, err := a.chain.decodeRange(&d, out, src, have, window{0, size}, a.unit, elem)
		if err != nil {
			t.Fatalf("extending %v: %v", have, err)
		}
		if win != (window{0, size}) {
			t.Fatalf("extending %v to the whole chunk holds %v", have, win)
		}
		if !bytes.Equal(out[have.lo:have.hi], poison) {
			t.Fatalf("extending %v wrote inside it", have)
		}
		if !bytes.Equal(out[:have.lo], whole[:have.lo]) || !bytes.Equal(out[have.hi:], whole[have.hi:]) {
			t.Fatalf("extending %v: the bytes outside it differ from the whole decode", have)
		}
	}
}

// TestReadDecodesItsWindow: a read of a chunk's last row alone leaves the
// cache holding a window of the chunk that ends past that row and, for
// chunks stored as they decode and Blosc chunks in several blocks, starts
// after the chunk's first row; compressed streams start at byte 0. A
// later read of the first row extends the window below.
func TestReadDecodesItsWindow(t *testing.T) {
	starts := map[string]bool{"raw_i1_1d": true, "blosc_zstd_shuffle_u8_blocks": true, "blosc_lz4_memcpy_random_u1": true}
	for _, c := range prefixCases {
		t.Run(c.Name, func(t *testing.T) {
			a, rows, read := rowReader(t, c)
			rowWindow := func() window {
				a.cache.mu.Lock()
				defer a.cache.mu.Unlock()
				return a.cache.entries[a.chunkEntry(0)].win
			}
			read(rows - 1)
			win, row := rowWindow(), a.unitBytes/rows
			if win.hi != a.unitBytes {
				t.Errorf("the last row's window %v does not end the chunk (%d bytes)", win, a.unitBytes)
			}
			if starts[c.Name] != (win.lo >= row) {
				t.Errorf("the last row's window %v; rows of %d bytes (past the first: %v)", win, row, starts[c.Name])
			}
			read(0)
			if win := rowWindow(); win != (window{0, a.unitBytes}) {
				t.Errorf("after the first row, the window is %v of %d bytes", win, a.unitBytes)
			}
		})
	}
}
