package loaderimpl

import "github.com/loadergen/loadergen/runtime"
import "testing"

// TestPrefetchKeepsTheStagingLimit: Options.Prefetch cannot lift the
// schema's max_staging_mb; the error gives the numbers.
func TestPrefetchKeepsTheStagingLimit(t *testing.T) {
	p := testPlan(1<<20, runtime.LoaderDefaults{Prefetch: 2, MaxStagingMB: 100}) // 19 MiB a batch
	p.BatchMiB = float64(p.BatchBytes) / (1 << 20)
	if _, err := resolve(p, runtime.Options{Prefetch: 4}, noEnv); err != nil {
		t.Fatalf("prefetch 4 (95 MiB): %v", err)
	}
	_, err := resolve(p, runtime.Options{Prefetch: 1000}, noEnv)
	want := "options: staging needs 1001 slots (prefetch 1000 + 1) x 19.0 MiB = 19019.0 MiB, over the limit of 100 MiB, " +
		"fixed when the loader was generated (loader.max_staging_mb): lower Prefetch"
	if err == nil || err.Error() != want {
		t.Errorf("prefetch 1000: %v\nwant %s", err, want)
	}
}

func noEnv(string) string { return "" }

// TestEnvSwitches: LOADERGEN_REQUIRE_GPU turns RequireGPU on and never
// off; LOADERGEN_CUDA_GRAPHS turns graphs on or off over the Options,
// which leave them off by default; any other value is refused by name.
func TestEnvSwitches(t *testing.T) {
	p := testPlan(4, runtime.LoaderDefaults{})
	switches := map[string]struct {
		set func(o *runtime.Options, on bool)
		get func(s settings) bool
	}{
		runtime.RequireGPUEnv: {func(o *runtime.Options, on bool) { o.RequireGPU = on }, func(s settings) bool { return s.requireGPU }},
		runtime.CUDAGraphsEnv: {func(o *runtime.Options, on bool) { o.CUDAGraphs = on }, func(s settings) bool { return s.graphs }},
	}
	for _, tt := range []struct {
		env, value   string
		option, want bool
		err          string
	}{
		{runtime.RequireGPUEnv, "", false, false, ""}, {runtime.RequireGPUEnv, "", true, true, ""},
		{runtime.RequireGPUEnv, "0", true, true, ""}, {runtime.RequireGPUEnv, "false", false, false, ""},
		{runtime.RequireGPUEnv, "1", false, true, ""}, {runtime.RequireGPUEnv, "true", false, true, ""},
		{runtime.RequireGPUEnv, "yes", false, false, `environment LOADERGEN_REQUIRE_GPU="yes": want 1 or 0`},
		{runtime.CUDAGraphsEnv, "", false, false, ""}, {runtime.CUDAGraphsEnv, "", true, true, ""},
		{runtime.CUDAGraphsEnv, "1", false, true, ""}, {runtime.CUDAGraphsEnv, "true", false, true, ""},
		{runtime.CUDAGraphsEnv, "0", true, false, ""}, {runtime.CUDAGraphsEnv, "false", true, false, ""},
		{runtime.CUDAGraphsEnv, "on", false, false, `environment LOADERGEN_CUDA_GRAPHS="on": want 1 or 0`},
	} {
		sw := switches[tt.env]
		var o runtime.Options
		sw.set(&o, tt.option)
		s, err := resolve(p, o, func(k string) string {
			if k == tt.env {
				return tt.value
			}
			return ""
		})
		switch {
		case tt.err != "":
			if err == nil || err.Error() != tt.err {
				t.Errorf("%s=%q: error %v, want %s", tt.env, tt.value, err, tt.err)
			}
		case err != nil:
			t.Errorf("%s=%q: %v", tt.env, tt.value, err)
		case sw.get(s) != tt.want:
			t.Errorf("%s=%q, option %v: setting %v, want %v", tt.env, tt.value, tt.option, sw.get(s), tt.want)
		}
	}
}
