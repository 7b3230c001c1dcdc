package runtime

import "testing"

// TestPrefetchKeepsTheStagingLimit: Options.Prefetch cannot lift the
// schema's max_staging_mb; the error gives the numbers.
func TestPrefetchKeepsTheStagingLimit(t *testing.T) {
	p := testPlan(1<<20, LoaderDefaults{Prefetch: 2, MaxStagingMB: 100}) // 19 MiB a batch
	p.BatchMiB = float64(p.BatchBytes) / (1 << 20)
	if _, err := resolve(p, Options{Prefetch: 4}, noEnv); err != nil {
		t.Fatalf("prefetch 4 (95 MiB): %v", err)
	}
	_, err := resolve(p, Options{Prefetch: 1000}, noEnv)
	want := "options: staging needs 1001 slots (prefetch 1000 + 1) x 19.0 MiB = 19019.0 MiB, over the limit of 100 MiB, " +
		"fixed when the loader was generated (loader.max_staging_mb): lower Prefetch"
	if err == nil || err.Error() != want {
		t.Errorf("prefetch 1000: %v\nwant %s", err, want)
	}
}

func noEnv(string) string { return "" }

// TestRequireGPUEnv: LOADERGEN_REQUIRE_GPU turns RequireGPU on and never
// off; any other value is refused by name.
func TestRequireGPUEnv(t *testing.T) {
	p := testPlan(4, LoaderDefaults{})
	for _, tt := range []struct {
		env    string
		option bool
		want   bool
		err    string
	}{
		{"", false, false, ""}, {"", true, true, ""}, {"0", true, true, ""}, {"false", false, false, ""},
		{"1", false, true, ""}, {"true", false, true, ""},
		{"yes", false, false, `environment LOADERGEN_REQUIRE_GPU="yes": want 1 or 0`},
	} {
		s, err := resolve(p, Options{RequireGPU: tt.option}, func(k string) string {
			if k == RequireGPUEnv {
				return tt.env
			}
			return ""
		})
		switch {
		case tt.err != "":
			if err == nil || err.Error() != tt.err {
				t.Errorf("%s=%q: error %v, want %s", RequireGPUEnv, tt.env, err, tt.err)
			}
		case err != nil:
			t.Errorf("%s=%q: %v", RequireGPUEnv, tt.env, err)
		case s.requireGPU != tt.want:
			t.Errorf("%s=%q, RequireGPU %v: requireGPU = %v, want %v", RequireGPUEnv, tt.env, tt.option, s.requireGPU, tt.want)
		}
	}
}

// TestGraphsEnv: graphs are off unless Options.CUDAGraphs asks for
// them; LOADERGEN_CUDA_GRAPHS turns them on or off over the Options, and
// any other value is refused by name.
func TestGraphsEnv(t *testing.T) {
	p := testPlan(4, LoaderDefaults{})
	for _, tt := range []struct {
		env    string
		option bool
		want   bool
		err    string
	}{
		{"", false, false, ""}, {"", true, true, ""},
		{"1", false, true, ""}, {"true", false, true, ""},
		{"0", true, false, ""}, {"false", true, false, ""},
		{"on", false, false, `environment LOADERGEN_CUDA_GRAPHS="on": want 1 or 0`},
	} {
		s, err := resolve(p, Options{CUDAGraphs: tt.option}, func(k string) string {
			if k == CUDAGraphsEnv {
				return tt.env
			}
			return ""
		})
		switch {
		case tt.err != "":
			if err == nil || err.Error() != tt.err {
				t.Errorf("%s=%q: error %v, want %s", CUDAGraphsEnv, tt.env, err, tt.err)
			}
		case err != nil:
			t.Errorf("%s=%q: %v", CUDAGraphsEnv, tt.env, err)
		case s.graphs != tt.want:
			t.Errorf("%s=%q, CUDAGraphs %v: graphs = %v, want %v", CUDAGraphsEnv, tt.env, tt.option, s.graphs, tt.want)
		}
	}
}
