package gen

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/loadergen/loadergen/schema"
)

// Overrides are settings (schema.Settings) from outside the schema: flags
// and the environment. The zero value overrides nothing.
type Overrides struct {
	set map[string]override // by schema.Setting.Path
}

// override is one setting's value from a flag or the environment.
type override struct {
	apply func(*schema.Dataset) // writes the value into a Dataset
	from  string                // "flag -max-streams" or "environment MAX_CONCURRENT_CUDA_STREAMS"
}

// Set parses text into the setting s; from says where the text comes
// from, for messages and plan. It is the one parser of override values,
// for flags and environment alike; NewPlan checks the values with the
// schema's rules.
func (o *Overrides) Set(s schema.Setting, text, from string) error {
	apply, err := s.Parse(strings.TrimSpace(text))
	if err != nil {
		return err
	}
	if o.set == nil {
		o.set = map[string]override{}
	}
	o.set[s.Path] = override{apply: apply, from: from}
	return nil
}

// Over returns o with the settings it leaves out taken from base: o takes
// precedence.
func (o Overrides) Over(base Overrides) Overrides {
	r := Overrides{set: map[string]override{}}
	maps.Copy(r.set, base.set)
	maps.Copy(r.set, o.set)
	return r
}

// EnvOverrides reads the settings that have an environment variable
// through getenv (os.Getenv in the CLI). Empty variables are unset. Errors
// name the variable and its value.
func EnvOverrides(getenv func(string) string) (Overrides, error) {
	var o Overrides
	for _, s := range schema.Settings {
		if s.Env == "" {
			continue
		}
		v := strings.TrimSpace(getenv(s.Env))
		if v == "" {
			continue
		}
		if err := o.Set(s, v, "environment "+s.Env); err != nil {
			return o, fmt.Errorf("environment %s=%q: %w", s.Env, v, err)
		}
	}
	return o, nil
}

// applyOverrides returns a copy of ds with o's settings over the schema's,
// and where each setting came from, by name (schema.Setting.Name). It
// checks every setting with its rule; an error names the flag or variable
// of a bad override, or the field of a bad value in a Dataset built in
// code (Parse refuses them in a schema).
func applyOverrides(ds *schema.Dataset, o Overrides) (*schema.Dataset, map[string]string, error) {
	eff := *ds
	from := make(map[string]string, len(schema.Settings))
	for _, s := range schema.Settings {
		ov, overridden := o.set[s.Path]
		_, written := ds.At[s.Path]
		switch {
		case overridden:
			ov.apply(&eff)
			from[s.Name()] = ov.from
		case written || s.Format(ds) != s.Default():
			from[s.Name()] = "schema " + ds.Where(s.Path)
		default:
			from[s.Name()] = "default"
		}
		if err := s.Check(&eff); err != nil {
			if overridden {
				return nil, nil, fmt.Errorf("%s: %s %w", ov.from, s.Name(), err)
			}
			return nil, nil, fmt.Errorf("%s: %s: %w", ds.Where(s.Path), s.Path, err)
		}
	}
	return &eff, from, nil
}

// planSetting is one setting as a plan uses it.
type planSetting struct {
	Name  string `json:"name"`  // as the header writes it: "max_streams"
	Value string `json:"value"` // as the header writes it: "4"
	From  string `json:"from"`  // "default", "schema FILE:LINE:COL", "environment VAR" or "flag -NAME"
	// streams says that the setting is one of the stream decision's,
	// which only a cuda plan uses.
	streams bool
}

// settings lists the plan's settings, in schema.Settings order.
func (p *Plan) settings() []planSetting {
	out := make([]planSetting, len(schema.Settings))
	for i, s := range schema.Settings {
		out[i] = planSetting{
			Name:    s.Name(),
			Value:   s.Format(p.Dataset),
			From:    p.From[s.Name()],
			streams: strings.HasPrefix(s.Path, "streams."),
		}
	}
	return out
}

// headerSettings is the form of the settings written into generated
// files: "device=cuda min_batch_size=8 ... max_staging_mb=16384". For
// device cpu it leaves out the stream settings, which decide nothing
// there, so that a stream variable in a developer's shell does not make a
// cpu loader stale.
func (p *Plan) headerSettings() string {
	var parts []string
	for _, s := range p.settings() {
		if s.streams && !p.Dataset.Device.CUDA {
			continue
		}
		parts = append(parts, s.Name+"="+s.Value)
	}
	return strings.Join(parts, " ")
}

// StaleSettings compares the settings line of a generated file's header
// (old, as the file records them: HeaderSettings) with the plan's and
// explains each difference, so that check can say which setting made a
// file stale.
func (p *Plan) StaleSettings(old string) []string {
	was := map[string]string{}
	for _, f := range strings.Fields(old) {
		if k, v, ok := strings.Cut(f, "="); ok {
			was[k] = v
		}
	}
	var diffs []string
	for _, s := range schema.Settings {
		v := s.Format(p.Dataset)
		if w, ok := was[s.Name()]; ok && w != v {
			how := "-" + s.Flag()
			if s.Env != "" {
				how = s.Env + " or " + how
			}
			diffs = append(diffs, fmt.Sprintf("%s: the file was generated with %s, this run gives %s (%s); was %s set then, or has the schema's %s changed?",
				s.Name(), w, v, p.From[s.Name()], how, s.Path))
		}
	}
	return diffs
}

// HeaderOverrides reads the settings line of a generated file's header
// (HeaderSettings) back into Overrides, from naming the file: a plan made
// with them is the plan the file was generated with, whatever flags and
// variables the generating run had.
func HeaderOverrides(settings, from string) (Overrides, error) {
	var o Overrides
	for _, f := range strings.Fields(settings) {
		k, v, _ := strings.Cut(f, "=")
		i := slices.IndexFunc(schema.Settings, func(s schema.Setting) bool { return s.Name() == k })
		if i < 0 {
			return o, fmt.Errorf("%s: the header's settings name %q, which this loadergen does not know: regenerate the file (go generate)", from, k)
		}
		if err := o.Set(schema.Settings[i], v, from); err != nil {
			return o, fmt.Errorf("%s: the header's %s: %w", from, k, err)
		}
	}
	return o, nil
}
