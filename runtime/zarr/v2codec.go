package zarr

import (
	"encoding/json"
	"fmt"
)

// v2Compressors are the compressors of .zarray files this package reads,
// by numcodecs' id.
var v2Compressors = map[string]codecKind{
	"blosc": codecBlosc, "zstd": codecZstd, "gzip": codecGzip, "zlib": codecZlib, "lz4": codecLZ4,
}

// v2Compressor reads a .zarray's compressor (null or {"id": ...}).
func v2Compressor(raw json.RawMessage) ([]bytesCodec, error) {
	if isNull(raw) {
		return nil, nil
	}
	var c struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &c); err != nil || c.ID == "" {
		return nil, fmt.Errorf("compressor %s: want null or an object with an \"id\"", raw)
	}
	kind, ok := v2Compressors[c.ID]
	if !ok {
		return nil, fmt.Errorf("compressor %q is not supported (blosc, zstd, gzip, zlib, lz4 and null are)", c.ID)
	}
	return []bytesCodec{{name: c.ID, kind: kind}}, nil
}

// v2Filters accepts only an absent, null or empty filter list.
func v2Filters(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var fs []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &fs); err != nil {
		return fmt.Errorf("filters %s: want null or a list of objects with an \"id\"", raw)
	}
	if len(fs) > 0 {
		return fmt.Errorf("filter %q is not supported (only arrays without filters are)", fs[0].ID)
	}
	return nil
}
