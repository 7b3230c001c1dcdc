package schema

import (
	"fmt"
	"slices"
	"testing"
)

// TestSettings: every row of the table is a field the schema reads, with a
// flag, help and a default that its rule accepts, and a value read from a
// schema or from text is the value Format writes.
func TestSettings(t *testing.T) {
	// A value other than the default for each setting, as a schema and a
	// flag write it.
	samples := map[string]string{
		"device":              "cuda:1",
		"min_batch_size":      "3",
		"min_batch_memory_mb": "0.5",
		"max_streams":         "2",
		"assign":              "balanced",
		"max_staging_mb":      "512",
	}
	known := map[string][]string{"": topFields, "loader": loaderFields, "streams": streamFields}
	names, flags := map[string]bool{}, map[string]bool{}
	for _, s := range Settings {
		t.Run(s.Name(), func(t *testing.T) {
			if names[s.Name()] || flags[s.Flag()] {
				t.Errorf("name %q or flag %q is not unique", s.Name(), s.Flag())
			}
			names[s.Name()], flags[s.Flag()] = true, true
			if !slices.Contains(known[section(s.Path)], s.Name()) {
				t.Errorf("%s is not a field the schema reads", s.Path)
			}
			if s.Help == "" {
				t.Error("no help")
			}
			def := Defaults()
			if err := s.Check(&def); err != nil {
				t.Errorf("default %s: %v", s.Default(), err)
			}
			sample, ok := samples[s.Name()]
			if !ok || sample == s.Default() {
				t.Fatalf("no sample other than the default %s", s.Default())
			}
			ds, err := Parse("s.yaml", []byte(minimalSchema+inSection(s.Path, sample)))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Format(ds); got != sample || ds.Where(s.Path) == "s.yaml" {
				t.Errorf("from the schema: %s at %s, want %s", got, ds.Where(s.Path), sample)
			}
			set, err := s.Parse(sample)
			if err != nil {
				t.Fatal(err)
			}
			set(&def)
			if got := s.Format(&def); got != sample {
				t.Errorf("from text: %s, want %s", got, sample)
			}
		})
	}
	if len(samples) != len(Settings) {
		t.Errorf("%d samples for %d settings", len(samples), len(Settings))
	}
}

// inSection writes the field at path with value as a schema's last lines.
func inSection(path, value string) string {
	if sec := section(path); sec != "" {
		return fmt.Sprintf("%s:\n  %s: %s\n", sec, fieldName(path), value)
	}
	return fmt.Sprintf("%s: %s\n", path, value)
}

// TestSettingRules: a Dataset built in code that holds a value no schema
// could write fails the setting's check, and text a setting cannot hold
// fails its parse.
func TestSettingRules(t *testing.T) {
	setting := func(name string) Setting {
		i := slices.IndexFunc(Settings, func(s Setting) bool { return s.Name() == name })
		return Settings[i]
	}
	for _, tt := range []struct {
		name   string
		change func(*Dataset)
		want   string
	}{
		{"assign", func(ds *Dataset) { ds.Streams.Assign = Assign(7) }, `must be round_robin or balanced, got "Assign(7)"`},
		{"max_streams", func(ds *Dataset) { ds.Streams.MaxStreams = 0 }, "must be between 1 and 64, got 0"},
		{"max_staging_mb", func(ds *Dataset) { ds.Loader.MaxStagingMB = 0 }, "must be a finite number > 0, got 0"},
	} {
		ds := Defaults()
		tt.change(&ds)
		if err := setting(tt.name).Check(&ds); err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.want)
		}
	}
	for _, tt := range []struct{ name, text, want string }{
		{"assign", "balancd", `must be round_robin or balanced, got "balancd"`},
		{"min_batch_size", "8.5", "not an integer"},
		{"min_batch_memory_mb", "lots", "not a number"},
	} {
		if _, err := setting(tt.name).Parse(tt.text); err == nil || err.Error() != tt.want {
			t.Errorf("%s %q: %v, want %s", tt.name, tt.text, err, tt.want)
		}
	}
}
