package zarr

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// v3Supported names the v3 codecs this package reads, for errors: the
// array-to-array and array-to-bytes ones, then v3BytesCodecs.
const v3Supported = "transpose, bytes, sharding_indexed, blosc, gzip, zstd and crc32c"

// v3BytesCodecs are the bytes-to-bytes codecs of zarr.json files this
// package reads, by name.
var v3BytesCodecs = map[string]codecKind{
	"blosc": codecBlosc, "zstd": codecZstd, "gzip": codecGzip, "crc32c": codecCRC32C,
}

// v3Codec is one entry of a zarr.json codec list: {"name", "configuration"}
// or, for a codec without configuration, its name alone.
type v3Codec struct {
	Name   string          `json:"name"`
	Config json.RawMessage `json:"configuration"`
}

func (c *v3Codec) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &c.Name)
	}
	type plain v3Codec
	return json.Unmarshal(b, (*plain)(c))
}

// v3Chain builds the chain of a v3 codec list for chunks of rank n and
// element size elem: array-to-array codecs (transpose), exactly one
// array-to-bytes codec (bytes or sharding_indexed), then bytes-to-bytes
// codecs. inShard is set for the codecs inside a shard.
func v3Chain(codecs []v3Codec, chunk []int, elem int, inShard bool) (chain, error) {
	var c chain
	n := len(chunk)
	i := 0
	for ; i < len(codecs) && codecs[i].Name == "transpose"; i++ {
		order, err := transposeOrder(codecs[i].Config, n)
		if err != nil {
			return c, err
		}
		if c.order == nil {
			c.order = order
		} else { // stored axis j is the previous order's axis order[j]
			composed := make([]int, n)
			for j, ax := range order {
				composed[j] = c.order[ax]
			}
			c.order = composed
		}
	}
	if c.order != nil && isIdentity(c.order) {
		c.order = nil
	}
	if i == len(codecs) {
		return c, fmt.Errorf("codecs: no array-to-bytes codec (bytes or sharding_indexed)")
	}
	switch ab := codecs[i]; ab.Name {
	case "bytes":
		var cfg struct {
			Endian string `json:"endian"`
		}
		if err := strictJSON(ab.Config, &cfg); err != nil {
			return c, fmt.Errorf("codec bytes: %w", err)
		}
		switch {
		case cfg.Endian == "big":
			c.bigEndian = elem > 1
		case cfg.Endian == "little", cfg.Endian == "" && elem == 1:
		case cfg.Endian == "":
			return c, fmt.Errorf("codec bytes: endian is required for %d-byte elements (\"little\" or \"big\")", elem)
		default:
			return c, fmt.Errorf("codec bytes: endian %q (want \"little\" or \"big\")", cfg.Endian)
		}
	case "sharding_indexed":
		if inShard {
			return c, fmt.Errorf("codec sharding_indexed inside a shard: nested sharding is not supported")
		}
		if c.order != nil {
			return c, fmt.Errorf("codec transpose before sharding_indexed is not supported (put it inside the shard's codecs)")
		}
		sh, err := parseSharding(ab.Config, chunk, elem)
		if err != nil {
			return c, fmt.Errorf("codec sharding_indexed: %w", err)
		}
		c.shard = sh
	default:
		return c, fmt.Errorf("codec %q where bytes or sharding_indexed must come (supported: %s)", ab.Name, v3Supported)
	}
	for _, bc := range codecs[i+1:] {
		kind, ok := v3BytesCodecs[bc.Name]
		if !ok {
			return c, fmt.Errorf("codec %q is not supported (supported: %s)", bc.Name, v3Supported)
		}
		c.codecs = append(c.codecs, bytesCodec{name: bc.Name, kind: kind})
	}
	if c.shard != nil && len(c.codecs) > 0 {
		return c, fmt.Errorf("codec %q after sharding_indexed is not supported (shards are read in parts)", c.codecs[0].name)
	}
	return c, checkCodecs(c.codecs)
}

// transposeOrder reads a transpose codec's order: a permutation of the axes,
// or the older "C" and "F".
func transposeOrder(raw json.RawMessage, n int) ([]int, error) {
	var cfg struct {
		Order json.RawMessage `json:"order"`
	}
	if err := strictJSON(raw, &cfg); err != nil {
		return nil, fmt.Errorf("codec transpose: %w", err)
	}
	var name string
	if json.Unmarshal(cfg.Order, &name) == nil {
		switch name {
		case "C":
			return identityAxes(n), nil
		case "F":
			return reversedAxes(n), nil
		}
		return nil, fmt.Errorf("codec transpose: order %q (want a permutation, \"C\" or \"F\")", name)
	}
	var order []int
	if err := json.Unmarshal(cfg.Order, &order); err != nil || !isPermutation(order, n) {
		return nil, fmt.Errorf("codec transpose: order %s is not a permutation of %d axes", cfg.Order, n)
	}
	return order, nil
}

func isPermutation(p []int, n int) bool {
	if len(p) != n {
		return false
	}
	seen := make([]bool, n)
	for _, v := range p {
		if v < 0 || v >= n || seen[v] {
			return false
		}
		seen[v] = true
	}
	return true
}

// strictJSON decodes an optional configuration object, refusing unknown
// fields so that a setting this reader would ignore is not dropped silently.
func strictJSON(raw json.RawMessage, v any) error {
	if isNull(raw) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("configuration %s: %w", raw, err)
	}
	return nil
}
