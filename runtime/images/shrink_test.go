package images

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/bombs"
	"github.com/loadergen/loadergen/internal/testenv/bounded"
)

// residentMiB is this process's resident memory, in MiB, once the
// garbage collector has run and returned what it freed to the system; 0
// under the race detector, whose shadow memory stays resident.
func residentMiB(t *testing.T) int {
	t.Helper()
	if raceEnabled {
		return 0
	}
	runtime.GC()
	debug.FreeOSMemory()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return kb >> 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// TestScratchShrinks: after one large image (an 8000 x 8000 RGB PNG, 192
// MB of planes) and then shrinkWindow+1 photos of 500 x 375, a Scratch
// holds what photos need again, by its own count of its buffers and by
// the process's resident memory once collected (which kept the large
// image's buffers for the loader's life before; not under the race
// detector), in a child held to the hostile-input bound. Photos alone never let their buffers go (the
// allocation tests: TestSampleAllocs, TestPNGSampleAllocs).
func TestScratchShrinks(t *testing.T) {
	if !bounded.Child(t, bounded.HostileRSS) {
		return
	}
	photo, big := benchPhoto(t), bombs.ZeroPNG(8000, 8000, true)
	o := NewOutput(&Transform{Crop: RandomResized}, 224, 224, 3, true)
	dst := make([]byte, 4*3*224*224)
	var s Scratch
	sample := func(data []byte) {
		d, c, err := s.Decode(data, &centred{0.5, 224})
		if err == nil {
			err = o.Write(&s, dst, d, c)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	sample(photo)
	photoHeld, base := s.held(), residentMiB(t)
	sample(big)
	bigHeld, bigRSS := s.held(), residentMiB(t)
	if bigHeld < 3*8000*8000 || !raceEnabled && bigRSS < base+150 {
		t.Fatalf("the large image holds %d bytes, %d MiB resident over %d: not what its planes need", bigHeld, bigRSS, base)
	}
	var trail []string
	for i := range shrinkWindow + 1 {
		sample(photo)
		trail = append(trail, fmt.Sprintf("%d MiB", s.held()>>20))
		if i < shrinkWindow-1 && s.held() != bigHeld {
			t.Fatalf("photo %d: the buffers went while the large image was among the last %d: %v", i, shrinkWindow, trail)
		}
	}
	rss := residentMiB(t)
	if held := s.held(); held > 2*photoHeld || rss > base+32 {
		t.Errorf("after %d photos the Scratch holds %d bytes (%d for photos alone), %d MiB resident (%d before the large image); held after each photo: %v",
			shrinkWindow+1, held, photoHeld, rss, base, trail)
	}
}
