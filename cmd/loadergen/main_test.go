package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loadergen/loadergen/schema"
)

// designSchema is testdata/design.yaml, an example schema with a comment
// on each field (the schema package's tests read it too).
var designSchema = func() string {
	b, err := os.ReadFile("../../testdata/design.yaml")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

func noEnv(string) string { return "" }

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// cli runs the command in dir and returns its exit code and output.
func cli(t *testing.T, dir string, getenv func(string) string, args ...string) (int, string, string) {
	t.Helper()
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr, getenv)
	return code, stdout.String(), stderr.String()
}

func writeSchema(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dataset.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestPlanJSON(t *testing.T) {
	dir := writeSchema(t, designSchema)
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		streams bool
		reason  string
		num     int
	}{
		{"defaults", nil, nil, false, "batch memory 52.0 MiB < 100 MiB", 1},
		{"env lowers memory", map[string]string{"MIN_BATCH_MEMORY_FOR_STREAMS_MB": "50"}, nil, true,
			"batch size 16 >= 8 and batch memory 52.0 MiB >= 50 MiB", 2},
		{"flag beats env", map[string]string{"MIN_BATCH_MEMORY_FOR_STREAMS_MB": "50"}, []string{"-min-batch-memory-mb", "60"}, false,
			"batch memory 52.0 MiB < 60 MiB", 1},
		{"env max streams", map[string]string{"MIN_BATCH_MEMORY_FOR_STREAMS_MB": "1", "MAX_CONCURRENT_CUDA_STREAMS": "1"}, nil, false,
			"batch size 16 >= 8 and batch memory 52.0 MiB >= 1 MiB, but max_streams is 1", 1},
		{"batch size", nil, []string{"-min-batch-size", "32", "-min-batch-memory-mb", "0"}, false, "batch size 16 < 32", 1},
		{"device flag", nil, []string{"-device", "cpu"}, false, "device is cpu", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append([]string{"plan", "-json"}, tt.args...), "dataset.yaml")
			code, out, errOut := cli(t, dir, envOf(tt.env), args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var got struct {
				Name       string  `json:"name"`
				BatchSize  int     `json:"batch_size"`
				Device     string  `json:"device"`
				BatchBytes int64   `json:"batch_bytes"`
				BatchMiB   float64 `json:"batch_mib"`
				UseStreams bool    `json:"use_streams"`
				NumStreams int     `json:"num_streams"`
				Reason     string  `json:"reason"`
				Keys       []struct {
					Name        string `json:"name"`
					Role        string `json:"role"`
					DType       string `json:"dtype"`
					Shape       []int  `json:"shape"`
					SampleBytes int64  `json:"sample_bytes"`
					BatchBytes  int64  `json:"batch_bytes"`
					Stream      int    `json:"stream"`
					Priority    string `json:"priority"`
					Offset      int64  `json:"offset"`
					// Only for a ragged key and the key of its lengths.
					Ragged    bool   `json:"ragged"`
					LengthsOf string `json:"lengths_of"`
				} `json:"keys"`
				// Added beside the contract's fields: the table's settings and
				// the slot layout.
				SlotBytes int64 `json:"slot_bytes"`
				Loader    struct {
					Prefetch     int      `json:"prefetch"`
					Workers      int      `json:"workers"`
					Shuffle      bool     `json:"shuffle"`
					Seed         uint64   `json:"seed"`
					DropLast     bool     `json:"drop_last"`
					MaxStagingMB float64  `json:"max_staging_mb"`
					Bucket       struct { // only with length bucketing
						Key    string `json:"key"`
						Window int    `json:"window"`
					} `json:"bucket"`
					Locality struct { // only with crop locality
						Window int `json:"window"`
					} `json:"locality"`
				} `json:"loader"`
				Settings []struct {
					Name, Value, From string
				} `json:"settings"`
			}
			dec := json.NewDecoder(strings.NewReader(out))
			dec.DisallowUnknownFields()
			var raw map[string]any
			if err := json.Unmarshal([]byte(out), &raw); err != nil {
				t.Fatal(err)
			}
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("plan -json has fields beyond the contract: %v", err)
			}
			if got.BatchBytes != 54525952 || got.BatchMiB != 52 || got.UseStreams != tt.streams || got.Reason != tt.reason || got.NumStreams != tt.num {
				t.Errorf("plan %+v; want 54525952 bytes, 52 MiB, streams %v x %d, reason %q", got, tt.streams, tt.num, tt.reason)
			}
			if len(got.Keys) != 2 || got.Keys[0].Priority != "high" || got.Keys[1].Role != "target" ||
				got.Keys[1].SampleBytes != 3145728 || !cmp.Equal(got.Keys[1].Shape, []int{3, 64, 64, 64}) ||
				got.Keys[0].Offset != 0 || got.Keys[1].Offset != 16*262144 {
				t.Errorf("keys %+v", got.Keys)
			}
			if got.SlotBytes != 54525952 || got.Loader.Prefetch != 2 || !got.Loader.Shuffle || got.Loader.MaxStagingMB != 16384 {
				t.Errorf("slot bytes %d, loader %+v", got.SlotBytes, got.Loader)
			}
			from := map[string]string{}
			for _, s := range got.Settings {
				from[s.Name+"="+s.Value] = s.From
			}
			device := "device=cuda"
			if tt.name == "device flag" {
				device = "device=cpu"
			}
			if len(got.Settings) != 6 || from["max_staging_mb=16384"] != "default" || from[device] == "" {
				t.Errorf("settings %+v", got.Settings)
			}
			if tt.name == "flag beats env" && from["min_batch_memory_mb=60"] != "flag -min-batch-memory-mb" ||
				tt.name == "env max streams" && from["max_streams=1"] != "environment MAX_CONCURRENT_CUDA_STREAMS" {
				t.Errorf("settings %+v: the flag or the environment is not the origin", got.Settings)
			}
			for _, field := range []string{"name", "batch_size", "device", "batch_bytes", "batch_mib", "use_streams", "num_streams", "reason", "keys", "slot_bytes", "loader", "settings"} {
				if _, ok := raw[field]; !ok {
					t.Errorf("plan -json lacks field %q", field)
				}
			}
		})
	}
}

func TestPlanTable(t *testing.T) {
	dir := writeSchema(t, designSchema)
	code, out, errOut := cli(t, dir, noEnv, "plan", "dataset.yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"raw", "labels", "[3 64 64 64]", "54525952", "52.0", "streams off: batch memory 52.0 MiB < 100 MiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestGenerateAndCheck(t *testing.T) {
	dir := writeSchema(t, designSchema)
	if code, _, errOut := cli(t, dir, noEnv, "check", "dataset.yaml"); code != 1 || !strings.Contains(errOut, "dataset_loader.go") {
		t.Errorf("check before generate: exit %d, %q; want 1 naming the missing file", code, errOut)
	}
	if code, _, errOut := cli(t, dir, noEnv, "generate", "dataset.yaml"); code != 0 {
		t.Fatalf("generate: exit %d: %s", code, errOut)
	}
	out := filepath.Join(dir, "dataset_loader.go")
	src, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(string(src), "\n"); first != "// Code generated by loadergen. DO NOT EDIT." {
		t.Errorf("first line %q", first)
	}
	if !strings.Contains(string(src), "// source: dataset.yaml\n") {
		t.Error("header does not name the schema relative to the output")
	}
	if code, stdout, errOut := cli(t, dir, noEnv, "check", "dataset.yaml"); code != 0 || stdout != "" {
		t.Errorf("check after generate: exit %d, %q %q", code, stdout, errOut)
	}
	// A different override makes the committed file stale.
	code, stdout, _ := cli(t, dir, noEnv, "check", "-min-batch-memory-mb", "10", "dataset.yaml")
	if code != 1 || !strings.Contains(stdout, "-\tCellMapUseStreams = false\n") {
		t.Errorf("stale check: exit %d, diff:\n%s", code, stdout)
	}
	if !strings.HasPrefix(stdout, "--- a/dataset_loader.go\n+++ b/dataset_loader.go\n@@ ") {
		t.Errorf("diff is not unified:\n%s", stdout)
	}
	again, _ := os.ReadFile(out)
	if !bytes.Equal(src, again) {
		t.Error("check changed the file")
	}
}

func TestBadInputWritesNothing(t *testing.T) {
	dir := writeSchema(t, strings.Replace(designSchema, "batch_size: 16", "batch_size: 0", 1))
	code, _, errOut := cli(t, dir, noEnv, "generate", "dataset.yaml")
	if code != 1 || errOut != "loadergen: dataset.yaml:4:13: batch_size: must be >= 1, got 0\n" {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a failed generate left %d entries in the directory", len(entries))
	}
	// Bad overrides of a good schema: the plan names the flag or variable.
	dir = writeSchema(t, designSchema)
	for _, tt := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{map[string]string{"MAX_CONCURRENT_CUDA_STREAMS": "many"}, nil, `loadergen: environment MAX_CONCURRENT_CUDA_STREAMS="many": not an integer` + "\n"},
		{map[string]string{"MAX_CONCURRENT_CUDA_STREAMS": "0"}, nil, "loadergen: environment MAX_CONCURRENT_CUDA_STREAMS: max_streams must be between 1 and 64, got 0\n"},
		{map[string]string{"MIN_BATCH_SIZE_FOR_STREAMS": "-2"}, nil, "loadergen: environment MIN_BATCH_SIZE_FOR_STREAMS: min_batch_size must be >= 1, got -2\n"},
		{nil, []string{"-max-streams", "0"}, "loadergen: flag -max-streams: max_streams must be between 1 and 64, got 0\n"},
	} {
		args := append(append([]string{"plan"}, tt.args...), "dataset.yaml")
		if code, _, errOut := cli(t, dir, envOf(tt.env), args...); code != 1 || errOut != tt.want {
			t.Errorf("%v %v: exit %d, stderr %q; want 1, %q", tt.env, tt.args, code, errOut, tt.want)
		}
	}
}

// TestStagingLimit: a plan whose (prefetch+1) x batch bytes exceed the
// limit is refused with the numbers, from the flag and from the schema.
func TestStagingLimit(t *testing.T) {
	const want = "staging needs 3 slots (prefetch 2 + 1) x 52.0 MiB = 156.0 MiB, " +
		"over the limit of 100 MiB (raise loader.max_staging_mb or -max-staging-mb, or shrink the batch)\n"
	dir := writeSchema(t, designSchema)
	// From the flag: the error points at the prefetch the schema sets.
	if code, _, errOut := cli(t, dir, noEnv, "generate", "-max-staging-mb", "100", "dataset.yaml"); code != 1 || errOut != "loadergen: dataset.yaml:12:13: "+want {
		t.Errorf("flag: exit %d, stderr %q", code, errOut)
	}
	// From the schema: at the limit.
	dir = writeSchema(t, strings.Replace(designSchema, "loader:\n", "loader:\n  max_staging_mb: 100\n", 1))
	if code, _, errOut := cli(t, dir, noEnv, "plan", "dataset.yaml"); code != 1 || errOut != "loadergen: dataset.yaml:12:19: "+want {
		t.Errorf("schema: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := cli(t, dir, noEnv, "plan", "-max-staging-mb", "200", "dataset.yaml"); code != 0 {
		t.Errorf("the flag should lift the schema's limit: exit %d, %s", code, errOut)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a refused plan wrote %d files", len(entries)-1)
	}
}

func TestInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cell-map")
	code, out, errOut := cli(t, filepath.Dir(dir), noEnv, "init", dir)
	if code != 0 {
		t.Fatalf("init: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "dataset.yaml") || !strings.Contains(out, "generate.go") {
		t.Errorf("init output %q", out)
	}
	gen, _ := os.ReadFile(filepath.Join(dir, "generate.go"))
	if !strings.Contains(string(gen), "package cellmap\n") || !strings.Contains(string(gen), "//go:generate go tool loadergen generate dataset.yaml\n") ||
		strings.Contains(string(gen), "go get -tool") || !strings.Contains(string(gen), "-replace=github.com/loadergen/loadergen=") {
		t.Errorf("generate.go, which should add the tool from a clone, as go get of it answers 403:\n%s", gen)
	}
	// The scaffolded schema is valid: it plans and generates.
	if code, _, errOut := cli(t, dir, noEnv, "generate", "dataset.yaml"); code != 0 {
		t.Fatalf("generate from scaffold: exit %d: %s", code, errOut)
	}
	if code, _, errOut := cli(t, dir, noEnv, "init", "."); code != 1 || !strings.Contains(errOut, "already exists") {
		t.Errorf("second init: exit %d, %q; want a refusal", code, errOut)
	}
}

// TestReadmeInit: the README's init command scaffolds a schema whose name
// is the one the README's program calls its loader by (init derives
// Cellmap from ./cellmap, the program says CellMap).
func TestReadmeInit(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^go tool loadergen init (.*?)\s*(#.*)?$`).FindSubmatch(readme)
	calls := regexp.MustCompile(`cellmap\.New(\w+)Loader\(`).FindAllSubmatch(readme, -1)
	if line == nil || len(calls) == 0 {
		t.Fatal("README.md has no line go tool loadergen init, or no call of cellmap.New<Name>Loader")
	}
	dir := t.TempDir()
	if code, _, errOut := cli(t, dir, noEnv, append([]string{"init"}, strings.Fields(string(line[1]))...)...); code != 0 {
		t.Fatalf("the README's %s: exit %d: %s", line[0], code, errOut)
	}
	ds, err := schema.Load(filepath.Join(dir, "cellmap", "dataset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		if string(c[1]) != ds.Name {
			t.Errorf("the README calls %s, but its init (%s) writes name: %s", c[0], line[0], ds.Name)
		}
	}
}

func TestUsage(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{nil, {"frobnicate"}, {"generate"}, {"plan", "a.yaml", "b.yaml"}} {
		if code, _, _ := cli(t, dir, noEnv, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	// A value that is not of the setting's type is a bad command line.
	for _, tt := range []struct{ flag, bad, want string }{
		{"-max-streams", "3x", "not an integer"},
		{"-max-streams", "", "not an integer"},
		{"-max-streams", "-1e", "not an integer"},
		{"-assign", "random", `invalid value "random" for flag -assign: must be round_robin or balanced, got "random"`},
		{"-device", "gpu", `invalid value "gpu" for flag -device: unknown device "gpu"`},
	} {
		code, _, errOut := cli(t, dir, noEnv, "plan", tt.flag, tt.bad, "x.yaml")
		if code != 2 || strings.Count(errOut, tt.want) != 1 {
			t.Errorf("%s %q: exit %d, stderr %q; want 2 and one %q", tt.flag, tt.bad, code, errOut, tt.want)
		}
	}
	if code, out, _ := cli(t, dir, noEnv, "version"); code != 0 || !strings.HasPrefix(out, "loadergen ") {
		t.Errorf("version: exit %d, %q", code, out)
	}
}

// TestFlagsAfterSchema: flags may follow the schema, as go vet allows.
func TestFlagsAfterSchema(t *testing.T) {
	dir := writeSchema(t, designSchema)
	code, out, errOut := cli(t, dir, noEnv, "plan", "dataset.yaml", "-json", "-max-streams", "2")
	if code != 0 || !strings.HasPrefix(out, `{"name":"CellMap"`) {
		t.Errorf("plan dataset.yaml -json: exit %d, %q %q", code, out, errOut)
	}
	if code, _, errOut := cli(t, dir, noEnv, "generate", "dataset.yaml", "-o", "x_loader.go"); code != 0 {
		t.Fatalf("generate dataset.yaml -o: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "x_loader.go")); err != nil {
		t.Error(err)
	}
	if code, _, errOut := cli(t, dir, noEnv, "plan", "dataset.yaml", "-json", "other.yaml"); code != 2 || !strings.Contains(errOut, "want one SCHEMA argument, got 2") {
		t.Errorf("two schemas: exit %d, %q", code, errOut)
	}
	// After --, everything is an argument: -o here is a second one.
	if code, _, errOut := cli(t, dir, noEnv, "generate", "--", "dataset.yaml", "-o", "y.go"); code != 2 || !strings.Contains(errOut, "want one SCHEMA argument, got 3") {
		t.Errorf("generate -- dataset.yaml -o y.go: exit %d, %q", code, errOut)
	}
	if code, out, errOut := cli(t, dir, noEnv, "plan", "-json", "--", "dataset.yaml"); code != 0 || !strings.Contains(out, `"reason":"batch memory 52.0 MiB < 100 MiB"`) {
		t.Errorf("plan -json -- dataset.yaml: exit %d, %q %q; want the reason unescaped", code, out, errOut)
	}
}

// TestOverrideFlags: the usage lists every setting's flag exactly once, in
// the table's order, and generate, plan and check each take every one,
// with help that names what it overrides and the default.
func TestOverrideFlags(t *testing.T) {
	dir := t.TempDir()
	_, out, _ := cli(t, dir, noEnv, "help")
	var listed []string
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "overrides: "); ok {
			listed = append(listed, strings.Fields(rest)...)
		}
	}
	var want []string
	for _, s := range schema.Settings {
		want = append(want, "-"+s.Flag())
	}
	if diff := cmp.Diff(want, listed); diff != "" {
		t.Errorf("usage's overrides (-want +got):\n%s", diff)
	}
	for _, cmd := range []string{"generate", "plan", "check"} {
		_, out, _ := cli(t, dir, noEnv, cmd, "-h")
		for _, s := range schema.Settings {
			over := "the schema's " + s.Path
			if s.Env != "" {
				over = "$" + s.Env + " and " + over
			}
			help := fmt.Sprintf("  -%s value\n    \t%s; overrides %s (default %s)\n", s.Flag(), s.Help, over, s.Default())
			if !strings.Contains(out, help) {
				t.Errorf("%s -h: no line %q in\n%s", cmd, help, out)
			}
		}
	}
}

// TestHelpAndVersionArguments: -h is not an error; version takes nothing.
func TestHelpAndVersionArguments(t *testing.T) {
	dir := t.TempDir()
	for _, cmd := range []string{"plan", "generate", "check", "init", "version"} {
		code, out, errOut := cli(t, dir, noEnv, cmd, "-h")
		if code != 0 || !strings.Contains(out, "usage: loadergen "+cmd) || errOut != "" {
			t.Errorf("%s -h: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout", cmd, code, out, errOut)
		}
	}
	for _, tt := range []struct {
		args []string
		why  string
	}{
		{[]string{"version", "-x"}, "flag provided but not defined: -x\n"},
		{[]string{"version", "extra"}, "loadergen version: takes no arguments, got [\"extra\"]\n"},
	} {
		if code, out, errOut := cli(t, dir, noEnv, tt.args...); code != 2 || out != "" || !strings.HasPrefix(errOut, tt.why+"usage: loadergen version\n") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q with the usage on stderr", tt.args, code, out, errOut, tt.why)
		}
	}
}

// TestPlanSaysWhereSettingsCameFrom: every setting names its origin.
func TestPlanSaysWhereSettingsCameFrom(t *testing.T) {
	dir := writeSchema(t, strings.Replace(designSchema, "assign: round_robin", "assign: balanced", 1))
	env := envOf(map[string]string{"MAX_CONCURRENT_CUDA_STREAMS": "2"})
	code, out, errOut := cli(t, dir, env, "plan", "-min-batch-size", "4", "dataset.yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"  device=cuda (schema dataset.yaml:5:9)\n",
		"  min_batch_size=4 (flag -min-batch-size)\n",
		"  min_batch_memory_mb=100 (schema dataset.yaml:19:24)\n",
		"  max_streams=2 (environment MAX_CONCURRENT_CUDA_STREAMS)\n",
		"  assign=balanced (schema dataset.yaml:21:11)\n",
		"  max_staging_mb=16384 (default)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
}

// TestCheckNamesTheSetting: a file generated with an environment override
// is stale without it, and check says which setting differs; its diff
// applies with plain git apply and patch -p1, as printed, without offsets.
func TestCheckNamesTheSetting(t *testing.T) {
	dir := writeSchema(t, designSchema)
	env := envOf(map[string]string{"MIN_BATCH_MEMORY_FOR_STREAMS_MB": "1", "MAX_CONCURRENT_CUDA_STREAMS": "1"})
	if code, _, errOut := cli(t, dir, env, "generate", "dataset.yaml"); code != 0 {
		t.Fatalf("generate: exit %d: %s", code, errOut)
	}
	code, diff, errOut := cli(t, dir, noEnv, "check", "dataset.yaml")
	if code != 1 {
		t.Fatalf("check: exit %d, want 1", code)
	}
	for _, want := range []string{
		"min_batch_memory_mb: the file was generated with 1, this run gives 100 (schema dataset.yaml:19:24); was MIN_BATCH_MEMORY_FOR_STREAMS_MB or -min-batch-memory-mb set then, or has the schema's streams.min_batch_memory_mb changed?",
		"max_streams: the file was generated with 1, this run gives 4 (schema dataset.yaml:20:16); was MAX_CONCURRENT_CUDA_STREAMS or -max-streams set then, or has the schema's streams.max_streams changed?",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("check does not say %q:\n%s", want, errOut)
		}
	}
	old, err := os.ReadFile(filepath.Join(dir, "dataset_loader.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range [][]string{
		{"git", "apply", "--check", "--verbose", "fix.diff"},
		{"patch", "-p1", "--dry-run", "--fuzz=0", "-i", "fix.diff"},
	} {
		if err := os.WriteFile(filepath.Join(dir, "fix.diff"), []byte(diff), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(tool[0], tool[1:]...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "offset") || strings.Contains(string(out), "fuzz") {
			t.Errorf("%s: %v\n%s", strings.Join(tool, " "), err, out)
		}
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "dataset_loader.go")); !bytes.Equal(old, again) {
		t.Error("checking the diff changed the file")
	}
}

// TestInitMessages: a bad directory name says which of package and name is
// wrong; the next step depends on the module's tool directive.
func TestInitMessages(t *testing.T) {
	root := t.TempDir()
	code, _, errOut := cli(t, root, noEnv, "init", "./2d")
	want := `loadergen: init ./2d: the package name derived from "2d": "2d" is not a valid Go identifier (set -package)` + "\n" +
		`the name derived from package "2d": "2d" is not a valid Go identifier (set -name)` + "\n"
	if code != 1 || errOut != want {
		t.Errorf("init ./2d: exit %d, stderr %q\nwant %q", code, errOut, want)
	}
	// A value given by flag is named by it, with no advice to set it.
	code, _, errOut = cli(t, root, noEnv, "init", "-name", "foo", "-package", "9p", "./ok")
	want = `loadergen: init ./ok: -package: "9p" is not a valid Go identifier` + "\n" +
		`-name: "foo" is not exported (it must start with an upper-case letter)` + "\n"
	if code != 1 || errOut != want {
		t.Errorf("init -name foo -package 9p: exit %d, stderr %q\nwant %q", code, errOut, want)
	}
	for _, tt := range []struct {
		gomod, want string
	}{
		{"", "next: create a module (go mod init), add loadergen from a clone as the module's tool (go mod edit -tool=github.com/loadergen/loadergen/cmd/loadergen with -require and -replace, then go mod tidy: see generate.go), edit dataset.yaml, then go generate ./... and go mod tidy (the loader imports the runtime)\n"},
		{"module m\n\ngo 1.24\n", "next: add loadergen from a clone as the module's tool (go mod edit -tool=github.com/loadergen/loadergen/cmd/loadergen with -require and -replace, then go mod tidy: see generate.go), edit dataset.yaml, then go generate ./... and go mod tidy (the loader imports the runtime)\n"},
		{"module m\n\ngo 1.24\n\ntool (\n\tgithub.com/loadergen/loadergen/cmd/loadergen\n)\n", "next: edit dataset.yaml, then go generate ./... and go mod tidy (the loader imports the runtime)\n"},
	} {
		mod := t.TempDir()
		if tt.gomod != "" {
			if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(tt.gomod), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		code, out, errOut := cli(t, mod, noEnv, "init", "data")
		if code != 0 || !strings.HasSuffix(out, tt.want) {
			t.Errorf("go.mod %q: exit %d, %q %q; want the last line %q", tt.gomod, code, out, errOut, tt.want)
		}
	}
}

// TestCheckIgnoresStreamSettingsOnCPU: a stream variable in a developer's
// shell changes nothing in a loader generated for device cpu (its header
// leaves the stream settings out), so check passes; for device cuda it
// changes the plan, and check fails naming it.
func TestCheckIgnoresStreamSettingsOnCPU(t *testing.T) {
	cpu := strings.Replace(designSchema, "device: cuda", "device: cpu", 1)
	for _, tc := range []struct {
		schema string
		stale  bool
	}{{cpu, false}, {designSchema, true}} {
		dir := writeSchema(t, tc.schema)
		if code, _, errOut := cli(t, dir, noEnv, "generate", "dataset.yaml"); code != 0 {
			t.Fatalf("generate: exit %d: %s", code, errOut)
		}
		env := envOf(map[string]string{"MAX_CONCURRENT_CUDA_STREAMS": "2", "MIN_BATCH_MEMORY_FOR_STREAMS_MB": "1"})
		code, _, errOut := cli(t, dir, env, "check", "dataset.yaml")
		want := 0
		if tc.stale {
			want = 1
		}
		if code != want {
			t.Errorf("stale %v: check exit %d, want %d: %s", tc.stale, code, want, errOut)
		}
		if tc.stale && !strings.Contains(errOut, "max_streams: the file was generated with 4, this run gives 2") {
			t.Errorf("check does not name the setting: %s", errOut)
		}
	}
}

// TestCUDAEnv: cuda-env takes the cuda.h of CUDA_HOME unless it is CUDA 13
// or newer, then the cached Debian 11.8 header, and builds the driver stub
// into the cache.
func TestCUDAEnv(t *testing.T) {
	if _, err := os.Stat("/usr/local/cuda/include/cuda.h"); err == nil {
		t.Skip("/usr/local/cuda/include/cuda.h exists here and would be taken before the cache")
	}
	header := func(dir string, version int) string {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		text := fmt.Sprintf("#ifndef __cuda_cuda_h__\n#define CUDA_VERSION %d\n#endif\n", version)
		if err := os.WriteFile(filepath.Join(dir, "cuda.h"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	cuda12 := t.TempDir()
	inc12 := header(filepath.Join(cuda12, "include"), 12040)
	cuda13 := t.TempDir()
	header(filepath.Join(cuda13, "include"), 13000)
	cache := t.TempDir()
	cached := header(filepath.Join(cache, "cuda-11.8", "usr", "include"), 11080)

	env := map[string]string{"CUDA_HOME": cuda12, "LOADERGEN_CACHE": cache}
	if code, out, errs := cli(t, t.TempDir(), envOf(env), "cuda-env", "-include"); code != 0 || out != inc12+"\n" || errs != "" {
		t.Errorf("CUDA 12.4: exit %d, stdout %q, stderr %q; want 0, %q, nothing", code, out, errs, inc12+"\n")
	}
	env["CUDA_HOME"] = cuda13
	code, out, errs := cli(t, t.TempDir(), envOf(env), "cuda-env", "-include")
	skip := "loadergen cuda-env: skipping " + filepath.Join(cuda13, "include") + ": CUDA 13.0 headers, which gorgonia.org/cu v0.9.6 does not build against\n"
	if code != 0 || out != cached+"\n" || errs != skip {
		t.Errorf("CUDA 13.0: exit %d, stdout %q, stderr %q; want 0, %q, %q", code, out, errs, cached+"\n", skip)
	}

	code, out, errs = cli(t, t.TempDir(), envOf(env), "cuda-env")
	stub := filepath.Join(cache, "cudastub-"+goruntime.GOARCH)
	want := fmt.Sprintf("export CGO_CFLAGS=%q\nexport CGO_LDFLAGS=%q\n", "-I"+cached, "-L"+stub+" -ldl")
	if code != 0 || out != want {
		t.Fatalf("cuda-env: exit %d, stdout %q, stderr %s; want 0, %q", code, out, errs, want)
	}
	if _, err := os.Stat(filepath.Join(stub, "libcuda.a")); err != nil {
		t.Errorf("cuda-env built no stub: %v", err)
	}
}
