package gen

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/schema"
)

// Defaults of the overridable settings, used when neither flags,
// environment nor schema set them.
const (
	DefaultMinBatchSize     = 8
	DefaultMinBatchMemoryMB = 100
	DefaultMaxStreams       = 4
	DefaultAssign           = "round_robin"
	DefaultMaxStagingMB     = 16 << 10 // 16 GiB
)

// Environment variables that override the schema's stream thresholds
// (runtime's, which warns when they are set as a loader runs).
const (
	EnvMinBatchSize     = runtime.EnvMinBatchSize
	EnvMinBatchMemoryMB = runtime.EnvMinBatchMemoryMB
	EnvMaxStreams       = runtime.EnvMaxStreams
)

// Setting is one setting that flags (and some environment variables)
// override over the schema.
type Setting struct {
	Name  string // flag name, without the dash: "max-streams"
	Field string // schema field path: "streams.max_streams"
	Env   string // environment variable that sets it, or ""
	Help  string // the flag's help text
}

// Header is the setting's name in generated headers, in plan and in
// messages: its flag name with underscores, "max_streams".
func (s Setting) Header() string { return strings.ReplaceAll(s.Name, "-", "_") }

// Settings are the overridable settings, in the order the generated header
// and plan list them.
var Settings = []Setting{
	{"device", "device", "", "target device: cpu, cuda or cuda:N"},
	{"min-batch-size", "streams.min_batch_size", EnvMinBatchSize, "smallest batch size that uses several streams"},
	{"min-batch-memory-mb", "streams.min_batch_memory_mb", EnvMinBatchMemoryMB, "smallest batch memory (MiB) that uses several streams"},
	{"max-streams", "streams.max_streams", EnvMaxStreams, "most CUDA streams to use"},
	{"assign", "streams.assign", "", "key-to-stream assignment: " + schema.Alternatives(schema.Assignments)},
	{"max-staging-mb", "loader.max_staging_mb", "", fmt.Sprintf("largest staging memory, (prefetch+1) x batch, in MiB (default %d)", DefaultMaxStagingMB)},
}

// Overrides are settings from outside the schema (flags, environment). A nil
// field leaves the setting to the next layer down.
type Overrides struct {
	Device           *schema.Device
	MinBatchSize     *int
	MinBatchMemoryMB *float64
	MaxStreams       *int
	Assign           *string
	MaxStagingMB     *float64
	// From says where each set field came from, by setting name:
	// "flag -max-streams" or "environment MAX_CONCURRENT_CUDA_STREAMS".
	From map[string]string
}

// Over returns o with its unset fields taken from base: o takes precedence.
func (o Overrides) Over(base Overrides) Overrides {
	r := Overrides{
		Device:           cmp.Or(o.Device, base.Device),
		MinBatchSize:     cmp.Or(o.MinBatchSize, base.MinBatchSize),
		MinBatchMemoryMB: cmp.Or(o.MinBatchMemoryMB, base.MinBatchMemoryMB),
		MaxStreams:       cmp.Or(o.MaxStreams, base.MaxStreams),
		Assign:           cmp.Or(o.Assign, base.Assign),
		MaxStagingMB:     cmp.Or(o.MaxStagingMB, base.MaxStagingMB),
		From:             map[string]string{},
	}
	for _, from := range []map[string]string{base.From, o.From} {
		for k, v := range from {
			r.From[k] = v
		}
	}
	return r
}

// Set parses value into the named setting (see Settings); from says where
// the value comes from, for messages and plan. It is the one parser of
// override values, for flags and environment alike; NewPlan checks the
// values with the schema's rules.
func (o *Overrides) Set(setting, value, from string) error {
	if o.From == nil {
		o.From = map[string]string{}
	}
	o.From[setting] = from
	value = strings.TrimSpace(value)
	switch setting {
	case "device":
		d, err := schema.ParseDevice(value)
		o.Device = &d
		return err
	case "min-batch-size":
		return setNumber(&o.MinBatchSize, value, strconv.Atoi, "an integer")
	case "min-batch-memory-mb":
		return setNumber(&o.MinBatchMemoryMB, value, parseFloat, "a number")
	case "max-streams":
		return setNumber(&o.MaxStreams, value, strconv.Atoi, "an integer")
	case "assign":
		o.Assign = &value
		return nil
	case "max-staging-mb":
		return setNumber(&o.MaxStagingMB, value, parseFloat, "a number")
	}
	return fmt.Errorf("unknown setting %q", setting)
}

func setNumber[T any](dst **T, value string, parse func(string) (T, error), want string) error {
	v, err := parse(value)
	if err != nil {
		return fmt.Errorf("not %s", want)
	}
	*dst = &v
	return nil
}

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }

// Check applies the schema's rules to every set field, naming the flag or
// variable of a bad one.
func (o Overrides) Check() error {
	for _, s := range Settings {
		var err error
		switch s.Name {
		case "device":
			// Set checked it: ParseDevice is its rule.
		case "min-batch-size":
			err = check(o.MinBatchSize, schema.CheckMinBatchSize)
		case "min-batch-memory-mb":
			err = check(o.MinBatchMemoryMB, schema.CheckMinBatchMemoryMB)
		case "max-streams":
			err = check(o.MaxStreams, schema.CheckMaxStreams)
		case "assign":
			err = check(o.Assign, schema.CheckAssign)
		case "max-staging-mb":
			err = check(o.MaxStagingMB, schema.CheckMaxStagingMB)
		}
		if err != nil {
			return fmt.Errorf("%s: %s %w", cmp.Or(o.From[s.Name], "override"), s.Header(), err)
		}
	}
	return nil
}

// check applies rule to *v when v is set.
func check[T any](v *T, rule func(T) error) error {
	if v == nil {
		return nil
	}
	return rule(*v)
}

// EnvOverrides reads the stream thresholds from the environment through
// getenv (os.Getenv in the CLI). Empty variables are unset. Errors name
// the variable and its value.
func EnvOverrides(getenv func(string) string) (Overrides, error) {
	var o Overrides
	for _, s := range Settings {
		v := strings.TrimSpace(getenv(s.Env))
		if s.Env == "" || v == "" {
			continue
		}
		if err := o.Set(s.Name, v, "environment "+s.Env); err != nil {
			return o, fmt.Errorf("environment %s=%q: %w", s.Env, v, err)
		}
	}
	return o, nil
}

// Thresholds are the effective overridable settings of a plan.
type Thresholds struct {
	Device           schema.Device
	MinBatchSize     int
	MinBatchMemoryMB float64
	MaxStreams       int
	Assign           string // "round_robin" or "balanced"
	MaxStagingMB     float64
	// From says where each setting came from, by setting name: "flag
	// -max-streams", "environment MAX_CONCURRENT_CUDA_STREAMS", "schema
	// d.yaml:20:16" or "default".
	From map[string]string
}

// resolve layers o over the schema's settings over the defaults.
func resolve(ds *schema.Dataset, o Overrides) Thresholds {
	s := ds.Streams
	t := Thresholds{
		Device:           deref(o.Device, ds.Device),
		MinBatchSize:     deref(cmp.Or(o.MinBatchSize, s.MinBatchSize), DefaultMinBatchSize),
		MinBatchMemoryMB: deref(cmp.Or(o.MinBatchMemoryMB, s.MinBatchMemoryMB), DefaultMinBatchMemoryMB),
		MaxStreams:       deref(cmp.Or(o.MaxStreams, s.MaxStreams), DefaultMaxStreams),
		Assign:           cmp.Or(deref(o.Assign, ""), s.Assign, DefaultAssign),
		MaxStagingMB:     deref(cmp.Or(o.MaxStagingMB, ds.MaxStagingMB), DefaultMaxStagingMB),
		From:             map[string]string{},
	}
	for _, set := range Settings {
		switch from, ok := o.From[set.Name]; {
		case ok:
			t.From[set.Name] = from
		case ds.At[set.Field] != (schema.Pos{}):
			t.From[set.Name] = "schema " + ds.Where(set.Field)
		default:
			t.From[set.Name] = "default"
		}
	}
	return t
}

// values are the settings as the header and plan write them, in Settings
// order.
func (t Thresholds) values() []string {
	return []string{
		t.Device.String(),
		strconv.Itoa(t.MinBatchSize),
		strconv.FormatFloat(t.MinBatchMemoryMB, 'f', -1, 64),
		strconv.Itoa(t.MaxStreams),
		t.Assign,
		strconv.FormatFloat(t.MaxStagingMB, 'f', -1, 64),
	}
}

// String is the form written into generated files: "device=cuda
// min_batch_size=8 ... max_staging_mb=16384". For device cpu it leaves out
// the stream settings, which decide nothing there, so that a stream
// variable in a developer's shell does not make a cpu loader stale.
func (t Thresholds) String() string {
	var parts []string
	for i, v := range t.values() {
		if !t.Device.CUDA && Settings[i].streams() {
			continue
		}
		parts = append(parts, Settings[i].Header()+"="+v)
	}
	return strings.Join(parts, " ")
}

// streams reports whether the setting is one of the stream decision's,
// which only a cuda plan uses.
func (s Setting) streams() bool { return strings.HasPrefix(s.Field, "streams.") }

// Describe lists each setting with its value and where it came from, one
// per line, for plan.
func (t Thresholds) Describe() []string {
	lines := make([]string, len(Settings))
	for i, v := range t.values() {
		lines[i] = fmt.Sprintf("%s=%s (%s)", Settings[i].Header(), v, t.From[Settings[i].Name])
	}
	return lines
}

// StaleSettings compares the settings line of a generated file's header
// (old, as String wrote it) with t and explains each difference, so that
// check can say which setting made a file stale.
func (t Thresholds) StaleSettings(old string) []string {
	was := map[string]string{}
	for _, f := range strings.Fields(old) {
		if k, v, ok := strings.Cut(f, "="); ok {
			was[k] = v
		}
	}
	var diffs []string
	for i, v := range t.values() {
		s := Settings[i]
		if w, ok := was[s.Header()]; ok && w != v {
			how := "-" + s.Name
			if s.Env != "" {
				how = s.Env + " or " + how
			}
			diffs = append(diffs, fmt.Sprintf("%s: the file was generated with %s, this run gives %s (%s); was %s set then, or has the schema's %s changed?",
				s.Header(), w, v, t.From[s.Name], how, s.Field))
		}
	}
	return diffs
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
