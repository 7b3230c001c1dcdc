package zarr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MetadataError is metadata that does not parse or describes something this
// package cannot read. It points at the offending field.
type MetadataError struct {
	File      string // the metadata file: .zarray, zarr.json, .zattrs or .zmetadata
	Line, Col int    // 1-based position in File; 0 when unknown
	Err       error
}

// Error reads "raw/.zarray:3:12: dtype "<c8" is not supported ...".
func (e *MetadataError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s:%d:%d: %v", e.File, e.Line, e.Col, e.Err)
}

// Unwrap returns what was wrong.
func (e *MetadataError) Unwrap() error { return e.Err }

// metaDoc is one JSON metadata document (a file, or one entry of a
// consolidated .zmetadata), its top-level fields kept with their positions
// so that an error can point at the field.
type metaDoc struct {
	file       string // where the text comes from, for errors
	text       []byte // the whole file
	fields     map[string]field
	start, end int // the document is text[start:end]
}

type field struct {
	raw json.RawMessage
	off int // offset of the value in the file's text
}

// parseDoc reads the JSON object at text[start:] (the whole of text for a
// file of its own).
func parseDoc(file string, text []byte, start int) (*metaDoc, error) {
	d := &metaDoc{file: file, text: text, fields: map[string]field{}, start: start}
	dec := json.NewDecoder(bytes.NewReader(text[start:]))
	tok, err := dec.Token()
	if err != nil {
		return nil, d.syntax(err, dec.InputOffset())
	}
	if tok != json.Delim('{') {
		return nil, d.errAt(start, errors.New("metadata is not a JSON object"))
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, d.syntax(err, dec.InputOffset())
		}
		key := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, d.syntax(err, dec.InputOffset())
		}
		// InputOffset is past the value; the value's first byte is len(raw) back.
		off := start + int(dec.InputOffset()) - len(raw)
		d.fields[key] = field{raw: raw, off: off}
	}
	if _, err := dec.Token(); err != nil {
		return nil, d.syntax(err, dec.InputOffset())
	}
	d.end = start + int(dec.InputOffset())
	return d, nil
}

// syntax positions a decoding error.
func (d *metaDoc) syntax(err error, off int64) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return d.errAt(d.start+int(off), fmt.Errorf("invalid JSON: %w", err))
}

// errAt makes a MetadataError at byte offset off of the file.
func (d *metaDoc) errAt(off int, err error) error {
	off = min(max(off, 0), len(d.text))
	line := 1 + bytes.Count(d.text[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(d.text[:off], '\n')
	return &MetadataError{File: d.file, Line: line, Col: col, Err: err}
}

// errorf makes a MetadataError at field key (at the document when absent).
func (d *metaDoc) errorf(key, format string, args ...any) error {
	off := d.start
	if f, ok := d.fields[key]; ok {
		off = f.off
	}
	return d.errAt(off, fmt.Errorf(format, args...))
}

// has reports whether the document holds field key.
func (d *metaDoc) has(key string) bool {
	_, ok := d.fields[key]
	return ok
}

// raw returns field key's JSON, or nil.
func (d *metaDoc) raw(key string) json.RawMessage { return d.fields[key].raw }

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// object returns field key, a JSON object, as a document of its own whose
// errors point inside it; a missing field is an error.
func (d *metaDoc) object(key string) (*metaDoc, error) {
	f, ok := d.fields[key]
	if !ok {
		return nil, d.errorf(key, "field %q is missing", key)
	}
	return parseDoc(d.file, d.text, f.off)
}

// get decodes field key into v; a missing field is an error when required.
func (d *metaDoc) get(key string, v any, required bool) error {
	f, ok := d.fields[key]
	if !ok {
		if required {
			return d.errorf(key, "field %q is missing", key)
		}
		return nil
	}
	if err := json.Unmarshal(f.raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return d.errAt(f.off+int(te.Offset)-1, fmt.Errorf("%s: %s where %s was expected", key, te.Value, te.Type))
		}
		return d.errAt(f.off, fmt.Errorf("%s: %w", key, err))
	}
	return nil
}
