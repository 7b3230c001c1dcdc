package volume

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/loadergen/loadergen/runtime/storage"
	"github.com/loadergen/loadergen/runtime/volume/volumespec"
)

// LoadManifest reads a CSV manifest of volumes: a header naming one column
// per key of spec (in any order) and optionally a weight column, then one
// row per volume holding each key's root: a directory or a URL
// (s3://bucket/prefix, https://host/path). Relative roots are relative to
// the manifest's directory, which may itself be a URL (a presigned one
// too: its query signs the manifest's request, and messages show it
// without). An empty weight means 1. Under spec.Balance a weight column is
// an error: the balance picks the volumes.
func LoadManifest(file string, spec Spec) ([]Volume, error) {
	return loadManifest(file, spec, func(int) bool { return false })
}

// LoadTileManifest reads a manifest of volumes to tile (OpenTiles) as
// LoadManifest reads one, but that the output keys' columns may be left
// out or empty: a volume without its output key's arrays (a raw volume
// to predict over whole).
func LoadTileManifest(file string, spec Spec, ts TileSpec) ([]Volume, error) {
	return loadManifest(file, spec, ts.isOutput)
}

// loadManifest reads manifest file for spec's keys; the columns of the
// keys optional says are may be left out, or empty.
func loadManifest(file string, spec Spec, optional func(k int) bool) ([]Volume, error) {
	dir, name := storage.Split(file)
	shown := storage.Redact(file) // for messages
	root, err := storage.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	defer root.Close()
	text, err := storage.ReadMetadata(context.Background(), root, name)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	r := csv.NewReader(bytes.NewReader(text))
	r.TrimLeadingSpace = true
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty; the first line names the columns: %s", shown, columns(spec))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shown, err)
	}
	col := make([]int, len(spec.Keys)) // column of each key; -1 for none
	for k := range col {
		col[k] = -1
	}
	weight := -1
	seen := map[string]int{}
	for i, name := range header {
		name = strings.TrimSpace(name)
		if j, dup := seen[name]; dup {
			return nil, fmt.Errorf("%s:1: column %q repeated (columns %d and %d)", shown, name, j+1, i+1)
		}
		seen[name] = i
		k := slices.IndexFunc(spec.Keys, func(k Key) bool { return k.Name == name })
		switch {
		case k >= 0:
			col[k] = i
		case name == volumespec.WeightColumn:
			weight = i
		default:
			return nil, fmt.Errorf("%s:1: unknown column %q (the columns are %s)", shown, name, columns(spec))
		}
	}
	if weight >= 0 && spec.Balance {
		return nil, fmt.Errorf("%s:1: column %q: %w", shown, volumespec.WeightColumn, errBalanceWeight)
	}
	for k, key := range spec.Keys {
		if _, ok := seen[key.Name]; !ok && !optional(k) {
			return nil, fmt.Errorf("%s:1: no column for key %q (the columns are %s)", shown, key.Name, columns(spec))
		}
	}
	var vols []Volume
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", shown, err)
		}
		line, _ := r.FieldPos(0)
		v := Volume{Roots: make([]string, len(spec.Keys))}
		for k, key := range spec.Keys {
			root := ""
			if col[k] >= 0 {
				root = strings.TrimSpace(rec[col[k]])
			}
			switch {
			case root != "":
				v.Roots[k] = storage.Join(dir, root)
			case !optional(k):
				return nil, fmt.Errorf("%s:%d: no root for key %q", shown, line, key.Name)
			}
		}
		if weight >= 0 {
			if w := strings.TrimSpace(rec[weight]); w != "" {
				if v.Weight, err = strconv.ParseFloat(w, 64); err != nil || checkWeight(v.Weight) != nil {
					return nil, fmt.Errorf("%s:%d: weight %q %w", shown, line, w, errWeight)
				}
			}
		}
		vols = append(vols, v)
	}
	if len(vols) == 0 {
		return nil, fmt.Errorf("%s: no volumes, only the header", shown)
	}
	return vols, nil
}

// columns lists a manifest's columns.
func columns(spec Spec) string {
	names := make([]string, 0, len(spec.Keys)+1)
	for _, k := range spec.Keys {
		names = append(names, k.Name)
	}
	return strings.Join(append(names, volumespec.WeightColumn+" (optional)"), ", ")
}
