package zarr

import (
	"bytes"
	"slices"
	"sync"
	"testing"
)

// TestPartialDecodeEqualsWhole: for every fixture array (every codec and
// layout in testdata/zarr), a chunk decoded in part holds exactly the
// prefix of its whole decode, at least as long as asked; extending that
// prefix adds the next bytes of the whole decode and writes nothing before
// the prefix's end; chunks stored transposed (v2 order F, v3 transpose) or
// under numcodecs' LZ4 decode whole.
func TestPartialDecodeEqualsWhole(t *testing.T) {
	partial := map[string]bool{}
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
			for u := int64(0); u < units; u += max(1, units/7) {
				buf, n, err := a.load(a.chunkEntry(u), size)
				if err != nil {
					t.Fatal(err)
				}
				if buf == nil {
					continue // not stored
				}
				if n != size {
					t.Fatalf("unit %d: the whole load holds %d of %d bytes", u, n, size)
				}
				whole := slices.Clone(buf[headroom:])
				for _, need := range []int{elem, size / 3 / elem * elem, size / 2 / elem * elem, size - elem, size} {
					need = max(need, elem)
					buf, n, err := a.load(a.chunkEntry(u), need)
					if err != nil {
						t.Fatalf("unit %d, prefix %d: %v", u, need, err)
					}
					if n < need || n > size || n%elem != 0 {
						t.Fatalf("unit %d: prefix %d holds %d bytes of %d", u, need, n, size)
					}
					if !a.prefix && n != size {
						t.Fatalf("unit %d: %d of %d bytes of a chunk that decodes only whole", u, n, size)
					}
					if n < size {
						partial[c.Name] = true
					}
					data := buf[headroom:]
					if !bytes.Equal(data[:n], whole[:n]) {
						t.Fatalf("unit %d: prefix %d differs from the whole decode at byte %d", u, need, firstDiff(data[:n], whole[:n]))
					}
					for _, more := range []int{n + elem, size} {
						if n >= size || more > size {
							continue
						}
						poison := bytes.Repeat([]byte{0xa5}, n)
						copy(data, poison)
						m, err := a.extend(a.chunkEntry(u), buf, n, more)
						if err != nil {
							t.Fatalf("unit %d: extending %d to %d: %v", u, n, more, err)
						}
						if m < more || m > size || m%elem != 0 {
							t.Fatalf("unit %d: extending %d to %d holds %d", u, n, more, m)
						}
						if !bytes.Equal(data[:n], poison) {
							t.Fatalf("unit %d: extending from %d wrote before it", u, n)
						}
						if !bytes.Equal(data[n:m], whole[n:m]) {
							t.Fatalf("unit %d: extension [%d, %d) differs from the whole decode", u, n, m)
						}
						copy(data, whole[:n])
						n = m
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
// prefix each needs grows with the row), clipped to the array.
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

// TestPrefixExtendsAcrossReads: a read of a chunk's first row decodes a
// prefix; a later read of its last row extends it (one load, one
// extension); reading either again decodes nothing.
func TestPrefixExtendsAcrossReads(t *testing.T) {
	for _, c := range prefixCases {
		t.Run(c.Name, func(t *testing.T) {
			a, err := openFixture(t, c, 64)
			if err != nil {
				t.Fatal(err)
			}
			want := loadExpected(t, c.Name, a)
			origins, shapes := chunkSlabs(a)
			if len(origins) < 2 {
				t.Skip("chunk 0 has one row")
			}
			base := a.cache.Stats()
			read := func(i int) {
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
			last := len(origins) - 1
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
// prefixes of it, at once (run it with -race): each gets numpy's bytes,
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
