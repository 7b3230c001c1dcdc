package schema

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/loadergen/loadergen/internal/devicename"
	"github.com/loadergen/loadergen/runtime"
)

// MaxStreams is the largest streams.max_streams a schema may set.
const MaxStreams = 64

// Setting is one setting that a schema may write and that a flag, and for
// some an environment variable, overrides when a loader is generated:
// flags over environment over schema over Defaults.
type Setting struct {
	Path  string       // field path in the schema: "streams.max_streams"
	Env   string       // environment variable that sets it, or ""
	Help  string       // what it sets, for the flag's usage
	value settingValue // where a Dataset holds it, how it is read and checked
}

// Settings are the overridable settings, one row each, in the order that
// generated headers, plan and the CLI's usage list them.
var Settings = []Setting{
	{"device", "", "target device: cpu, cuda or cuda:N",
		word(func(ds *Dataset) *Device { return &ds.Device }, parseDevice)},
	{"streams.min_batch_size", runtime.EnvMinBatchSize, "smallest batch size that uses several streams",
		integer(func(ds *Dataset) *int { return &ds.Streams.MinBatchSize }, checkMinBatchSize)},
	{"streams.min_batch_memory_mb", runtime.EnvMinBatchMemoryMB, "smallest batch memory (MiB) that uses several streams",
		number(func(ds *Dataset) *float64 { return &ds.Streams.MinBatchMemoryMB }, checkMinBatchMemoryMB)},
	{"streams.max_streams", runtime.EnvMaxStreams, "most CUDA streams to use",
		integer(func(ds *Dataset) *int { return &ds.Streams.MaxStreams }, checkMaxStreams)},
	{"streams.assign", "", "key-to-stream assignment: " + alternatives(assignNames),
		word(func(ds *Dataset) *Assign { return &ds.Streams.Assign }, parseAssign)},
	{PathMaxStagingMB, "", "largest staging memory, (prefetch+1) x batch, in MiB",
		number(func(ds *Dataset) *float64 { return &ds.Loader.MaxStagingMB }, checkMaxStagingMB)},
}

// Name is the setting's name in generated headers, plan and messages: the
// last element of its path, "max_streams".
func (s Setting) Name() string { return fieldName(s.Path) }

// Flag is the name of the flag that overrides the setting, without the
// dash: "max-streams".
func (s Setting) Flag() string { return FlagName(s.Path) }

// FlagName is the name of the flag that overrides the setting at path,
// without the dash: "max-staging-mb" for loader.max_staging_mb.
func FlagName(path string) string { return strings.ReplaceAll(fieldName(path), "_", "-") }

// Parse reads text, the setting's value as a flag or an environment
// variable gives it, and returns what sets that value in a Dataset. Its
// errors say what text is not ("not an integer"); Check applies the rule.
func (s Setting) Parse(text string) (set func(*Dataset), err error) { return s.value.parse(text) }

// Check applies the setting's rule to its value in ds, the one the schema
// reader applies at the value's node.
func (s Setting) Check(ds *Dataset) error { return s.value.check(ds) }

// Format returns the setting's value in ds as headers and plan write it:
// "cuda:1", "4", "round_robin".
func (s Setting) Format(ds *Dataset) string { return s.value.format(ds) }

// Default returns the setting's value in Defaults, formatted.
func (s Setting) Default() string {
	ds := Defaults()
	return s.Format(&ds)
}

// readSettings reads the settings (Settings) of the mapping at path.
func (r *mappingReader) readSettings(path string) {
	for _, s := range Settings {
		if section(s.Path) == path {
			s.value.read(r, s.Path)
		}
	}
}

// settingValue is the typed part of a Setting: a typed[T].
type settingValue interface {
	read(r *mappingReader, path string) // from the schema, checked, into r's Dataset
	parse(text string) (func(*Dataset), error)
	check(ds *Dataset) error
	format(ds *Dataset) string
}

// typed is a setting whose value is a T: where a Dataset holds it and how
// it is read, checked and written.
type typed[T any] struct {
	at       func(*Dataset) *T
	yaml     valueReader[T]          // reads it from a schema's node
	fromText func(string) (T, error) // reads it from a flag or variable
	rule     func(T) error
	show     func(T) string
}

// integer is an int setting that rule checks.
func integer(at func(*Dataset) *int, rule func(int) error) typed[int] {
	return typed[int]{at: at, yaml: (*parser).anyInt, fromText: atoi, rule: rule, show: strconv.Itoa}
}

// number is a float64 setting that rule checks.
func number(at func(*Dataset) *float64, rule func(float64) error) typed[float64] {
	return typed[float64]{at: at, yaml: (*parser).number, fromText: parseFloat, rule: rule, show: formatFloat}
}

// word is a setting written as a word that parse reads: a value is valid
// when its String reads back.
func word[T fmt.Stringer](at func(*Dataset) *T, parse func(string) (T, error)) typed[T] {
	return typed[T]{
		at: at, yaml: parsed(parse), fromText: parse,
		rule: func(v T) error { _, err := parse(v.String()); return err },
		show: func(v T) string { return v.String() },
	}
}

func (v typed[T]) read(r *mappingReader, path string) {
	readOptional(r, path, checked(v.yaml, v.rule), v.at(&r.p.ds))
}

func (v typed[T]) parse(text string) (func(*Dataset), error) {
	x, err := v.fromText(text)
	if err != nil {
		return nil, err
	}
	return func(ds *Dataset) { *v.at(ds) = x }, nil
}

func (v typed[T]) check(ds *Dataset) error   { return v.rule(*v.at(ds)) }
func (v typed[T]) format(ds *Dataset) string { return v.show(*v.at(ds)) }

func atoi(s string) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, errors.New("not an integer")
	}
	return v, nil
}

func parseFloat(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, errors.New("not a number")
	}
	return v, nil
}

// Assign is how keys are spread over the CUDA streams: streams.assign.
type Assign uint8

// The assignments (docs/SCHEMA.md, "The plan").
const (
	RoundRobin Assign = iota // the i-th key goes to stream i % num_streams
	Balanced                 // keys by batch bytes, each to the stream with the fewest bytes so far
)

// assignNames are the assignments as a schema writes them, by value.
var assignNames = []string{RoundRobin: "round_robin", Balanced: "balanced"}

// String returns the assignment as a schema writes it: "round_robin".
func (a Assign) String() string {
	if int(a) < len(assignNames) {
		return assignNames[a]
	}
	return "Assign(" + strconv.Itoa(int(a)) + ")"
}

func parseAssign(s string) (Assign, error) {
	if i := slices.Index(assignNames, s); i >= 0 {
		return Assign(i), nil
	}
	return 0, fmt.Errorf("must be %s, got %s", alternatives(assignNames), quote(s))
}

// parseDevice reads "cpu", "cuda" or "cuda:N" with the one parser of
// device names (internal/devicename), which Options.Device goes through too.
func parseDevice(s string) (Device, error) {
	ordinal, cuda, err := devicename.Parse(s)
	return Device{CUDA: cuda, Ordinal: ordinal}, err
}

// checkMinBatchSize: streams.min_batch_size must be at least 1.
func checkMinBatchSize(v int) error {
	if v < 1 {
		return fmt.Errorf("must be >= 1, got %d", v)
	}
	return nil
}

// checkMinBatchMemoryMB: streams.min_batch_memory_mb must be finite and >= 0.
func checkMinBatchMemoryMB(v float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("must be a finite number, got %v", v)
	case v < 0:
		return fmt.Errorf("must be >= 0, got %s", formatFloat(v))
	}
	return nil
}

// checkMaxStreams: streams.max_streams must be in [1, MaxStreams].
func checkMaxStreams(v int) error {
	if v < 1 || v > MaxStreams {
		return fmt.Errorf("must be between 1 and %d, got %d", MaxStreams, v)
	}
	return nil
}

// checkMaxStagingMB: loader.max_staging_mb must be finite and > 0.
func checkMaxStagingMB(v float64) error {
	if !(v > 0 && v <= math.MaxFloat64) {
		return fmt.Errorf("must be a finite number > 0, got %s", formatFloat(v))
	}
	return nil
}

// alternatives joins names as a sentence offers them: "a", "a or b",
// "a, b or c".
func alternatives(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
