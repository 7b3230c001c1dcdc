package volume

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// balancedVolumes writes three volumes: a and c annotate mito and er, b
// mito alone.
func balancedVolumes(t *testing.T) []Volume {
	dir := t.TempDir()
	var vols []Volume
	for _, v := range []struct {
		name string
		er   bool
	}{{"a", true}, {"b", false}, {"c", true}} {
		root := filepath.Join(dir, v.name+".zarr")
		testVolume(t, root, v.er)
		vols = append(vols, Volume{Roots: []string{root, root}})
	}
	return vols
}

// TestBalance: under crops.balance each sample's volume annotates a
// class seen least so far in the epoch (counting, for each sample before
// it, every class its volume annotates), as cellmap-data's
// ClassBalancedSampler picks crops; the picks are the same for the same
// (seed, epoch) however the samples are asked for, differ across epochs,
// and are what Read reads; the start-up line says which volumes annotate
// which class.
func TestBalance(t *testing.T) {
	vols := balancedVolumes(t)
	spec := cellSpec()
	spec.Balance, spec.PerEpoch = true, 300
	var log bytes.Buffer
	s, err := Open(spec, vols, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if want := `class_balance="mito 3 of 3 volumes, er 2 of 3"`; !strings.Contains(log.String(), want) {
		t.Errorf("the start-up line does not say %s:\n%s", want, log.String())
	}
	annotates := [][]int{{0, 1}, {0}, {0, 1}} // per volume, its classes
	epoch := func(e int) []int {
		picks := make([]int, spec.PerEpoch)
		for i := range picks {
			picks[i] = s.Crop(e, i).Volume
		}
		return picks
	}
	first := epoch(4)
	counts := []int{0, 0}
	for i, v := range first {
		least := min(counts[0], counts[1])
		if !slices.ContainsFunc(annotates[v], func(c int) bool { return counts[c] == least }) {
			t.Fatalf("sample %d: volume %d annotates no class seen least (counts %v)", i, v, counts)
		}
		for _, c := range annotates[v] {
			counts[c]++
		}
	}
	if counts[0]-counts[1] > 1 {
		t.Errorf("the epoch's class counts %v are not balanced", counts)
	}
	epoch(5) // another epoch between
	backwards := make([]int, spec.PerEpoch)
	for i := range slices.Backward(backwards) {
		backwards[i] = s.Crop(4, spec.PerEpoch-1-i).Volume
	}
	slices.Reverse(backwards)
	if !slices.Equal(first, backwards) {
		t.Fatal("the epoch's volumes differ when its samples are asked for backwards, after another epoch")
	}
	if slices.Equal(first, epoch(6)) {
		t.Error("epochs 4 and 6 draw the same volumes")
	}
	for i := range 20 {
		readBoth(t, s, 4, i) // Read's crop is Crop's
	}
}

// TestBalanceRefusesWeights: under crops.balance a volume's weight, or a
// manifest's weight column, is an error saying why; so is a spec with no
// class annotated.
func TestBalanceRefusesWeights(t *testing.T) {
	vols := balancedVolumes(t)
	spec := cellSpec()
	spec.Balance = true
	vols[1].Weight = 2
	_, err := Open(spec, vols, nil)
	if want := "volume 1 (" + vols[1].Roots[0] + "): weight 2: crops.balance picks each sample's volume by the classes it annotates, so volumes have no weights (leave them 0, or drop the manifest's weight column)"; err == nil || err.Error() != want {
		t.Errorf("Open: %v\nwant %s", err, want)
	}
	vols[1].Weight = 1
	if _, err := Open(spec, vols, nil); err != nil {
		t.Errorf("a weight of 1, the default: %v", err)
	}
	manifest := filepath.Join(t.TempDir(), "m.csv")
	if err := os.WriteFile(manifest, []byte("raw,labels,weight\na,a,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadManifest(manifest, spec)
	if want := manifest + `:1: column "weight": crops.balance picks`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("LoadManifest: %v\nwant %s...", err, want)
	}
	raw := cellSpec()
	raw.Keys, raw.Balance = raw.Keys[:1], true
	vols[1].Weight = 0
	_, err = Open(raw, []Volume{{Roots: vols[0].Roots[:1]}}, nil)
	if want := "crops.balance: no volume annotates any class (mito, er)"; err == nil || err.Error() != want {
		t.Errorf("Open without a class axis: %v\nwant %s", err, want)
	}
}
