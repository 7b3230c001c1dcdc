package photos

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loadergen/loadergen/internal/fixture/photoshards"
	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/internal/testenv/remotetest"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/records"
)

func TestMain(m *testing.M) { goldentest.Main(m) }

// set is the test's data: 22 photos of 40 x 30 pixels in the schema's two
// shards, masks holding each pixel's column.
var set = photoshards.Set{Samples: 22, Shards: 2, Width: 40, Height: 30, Classes: 5, Quality: 90, Seed: 1}

// openRecords writes set's shards and opens them; dir holds them.
func openRecords(t *testing.T) (r *PhotosRecords, dir string) {
	t.Helper()
	dir = t.TempDir()
	if err := set.WriteShards(dir, "photos-%d.tar"); err != nil {
		t.Fatal(err)
	}
	r, err := OpenPhotosRecords(dir)
	return goldentest.Closing(t, r, err), dir
}

// epochSamples runs epoch and returns each sample's keys' bytes by index.
func epochSamples(t *testing.T, src PhotosSource, opts runtime.Options, epoch int) map[int][]byte {
	t.Helper()
	l, err := NewPhotosLoader(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out := map[int][]byte{}
	for b, err := range l.Epoch(context.Background(), epoch) {
		if err != nil {
			t.Fatal(err)
		}
		img, mask, label := runtime.Bytes(b.ImageData()), b.MaskData(), runtime.Bytes(b.LabelData())
		for i, index := range b.Indices {
			out[index] = slices.Concat(img[i*4*photosImageElems:][:4*photosImageElems],
				mask[i*photosMaskElems:][:photosMaskElems], label[8*i:][:8])
		}
	}
	return out
}

// TestRecords: every sample of two shards arrives with its label; its mask
// holds the columns of the crop Crop reports, in the order its flip says;
// samples are the same whatever the number of workers, and differ across
// epochs.
func TestRecords(t *testing.T) {
	r, _ := openRecords(t)
	if r.Len() != set.Samples {
		t.Fatalf("Len = %d, want %d", r.Len(), set.Samples)
	}
	one := epochSamples(t, r, runtime.Options{Workers: 1}, 3)
	three := epochSamples(t, r, runtime.Options{Workers: 3}, 3)
	other := epochSamples(t, r, runtime.Options{Workers: 2}, 4)
	if len(one) != set.Samples {
		t.Fatalf("epoch has %d samples, want %d", len(one), set.Samples)
	}
	changed, flips := 0, 0
	for index, got := range one {
		if !slices.Equal(got, three[index]) {
			t.Errorf("sample %d differs between 1 and 3 workers", index)
		}
		if !slices.Equal(got, other[index]) {
			changed++
		}
		if label := runtime.View[int64](got[len(got)-8:])[0]; label != int64(index%set.Classes) {
			t.Errorf("sample %d: label %d, want %d", index, label, index%set.Classes)
		}
		crops, err := r.Crop(3, index)
		if err != nil {
			t.Fatal(err)
		}
		c := crops[0]
		if w, h := set.Size(index); c.Width != w || c.Height != h {
			t.Errorf("sample %d: Crop says %d x %d, the photo is %d x %d", index, c.Width, c.Height, w, h)
		}
		mask := got[4*photosImageElems:][:photosMaskElems]
		first, last := int(mask[0]), int(mask[31])
		if c.Flip {
			first, last = last, first
			flips++
		}
		if first < c.Region.Min.X || last >= c.Region.Max.X || last <= first || first > c.Region.Min.X+1 || last < c.Region.Max.X-2 {
			t.Errorf("sample %d: mask row runs from column %d to %d (flip %v), the crop is %v", index, mask[0], mask[31], c.Flip, c.Region)
		}
		for y := 1; y < 32; y++ {
			if !slices.Equal(mask[y*32:][:32], mask[:32]) {
				t.Fatalf("sample %d: mask row %d differs from row 0", index, y)
			}
		}
	}
	if changed < set.Samples/2 {
		t.Errorf("only %d of %d samples differ between epochs 3 and 4", changed, set.Samples)
	}
	if flips == 0 || flips == set.Samples {
		t.Errorf("%d of %d samples flipped with flip: 0.5", flips, set.Samples)
	}
}

// TestNames: Name gives each sample's shard and key, as WebDataset's
// __url__ and __key__ do.
func TestNames(t *testing.T) {
	r, dir := openRecords(t)
	per := (set.Samples + set.Shards - 1) / set.Shards
	for i := range r.Len() {
		shard := filepath.Join(dir, fmt.Sprintf("photos-%d.tar", i/per))
		if file, key := r.Name(i); file != shard || key != set.Key(i) {
			t.Errorf("Name(%d) = %s, %q; want %s, %q", i, file, key, shard, set.Key(i))
		}
	}
}

// TestBadRecord: a truncated JPEG ends the epoch with an error naming the
// sample's index, the key, the shard, the sample and the member.
func TestBadRecord(t *testing.T) {
	dir := t.TempDir()
	if err := set.WriteShards(dir, "photos-%d.tar"); err != nil {
		t.Fatal(err)
	}
	// Cut sample 0's JPEG in half in place: zeros from its middle on.
	path := filepath.Join(dir, "photos-0.tar")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, jpg, _, _, err := set.Members(0)
	if err != nil {
		t.Fatal(err)
	}
	clear(data[512+len(jpg)/2 : 512+len(jpg)])
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenPhotosRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l, err := NewPhotosLoader(r, runtime.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, err := range l.Epoch(context.Background(), 0) {
		if err == nil {
			continue
		}
		var re *runtime.ReadError
		var se *records.SampleError
		if !errors.As(err, &re) || re.Index != 0 || !errors.As(err, &se) || se.File != path || se.Sample != "000000" || se.Member != "jpg" {
			t.Fatalf("error %v does not name sample 0, its shard and member", err)
		}
		return
	}
	t.Fatal("the epoch read a corrupt JPEG without an error")
}

// The generated records source reads ahead: the loader hands it the
// batches to come.
var _ runtime.ReadAheader = (*PhotosRecords)(nil)

// TestRecordsRemote: the shards served by a web server give the epoch the
// local shards give, each sample fetched by one ranged request for its
// members, once, and no shard fetched whole.
func TestRecordsRemote(t *testing.T) {
	dir := t.TempDir()
	if err := set.WriteShards(dir, "photos-%d.tar"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	ranges := map[string]int{} // "path bytes=a-b" -> GETs
	files := http.FileServer(http.Dir(dir))
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			mu.Lock()
			ranges[r.URL.Path+" "+r.Header.Get("Range")]++
			mu.Unlock()
		}
		files.ServeHTTP(w, r)
	}))
	defer web.Close()
	local, err := OpenPhotosRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	remote, err := OpenPhotosRecords(web.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	mu.Lock()
	clear(ranges) // the index's requests
	mu.Unlock()
	want := epochSamples(t, local, runtime.Options{Workers: 2}, 1)
	got := epochSamples(t, remote, runtime.Options{Workers: 2}, 1)
	for index, w := range want {
		if !slices.Equal(got[index], w) {
			t.Errorf("sample %d differs from the local shards'", index)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for r, count := range ranges {
		if count != 1 || !strings.Contains(r, " bytes=") {
			t.Errorf("%d GETs of %q, want one ranged GET", count, r)
		}
		n += count
	}
	if n != set.Samples {
		t.Errorf("%d GETs for an epoch of %d samples, want one each", n, set.Samples)
	}
}

// TestRemoteEpochCancelled: an epoch over shards whose server stops
// answering returns as soon as its context is cancelled, with
// context.Canceled, not once the reads in flight have run out their
// retries; closing the loader and the source then leaves nothing running
// (TestMain's goleak).
func TestRemoteEpochCancelled(t *testing.T) {
	dir := t.TempDir()
	if err := set.WriteShards(dir, "photos-%d.tar"); err != nil {
		t.Fatal(err)
	}
	url, stall := remotetest.Stalling(t, dir)
	remote, err := OpenPhotosRecords(url)
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	stall.Store(true)
	l, err := NewPhotosLoader(remote, runtime.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	var errs []error
	for _, err := range l.Epoch(ctx, 0) {
		errs = append(errs, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the cancelled epoch returned after %v", d)
	}
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Errorf("epoch: %v, want context.Canceled", errs)
	}
}
