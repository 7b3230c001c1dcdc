package zarr

import "testing"

// TestSharedCacheSize: the shared cache takes this process's share of
// DefaultCacheMiB, the node's, by the launcher's local world size, unless
// CacheEnv sizes it per process; Describe says which.
func TestSharedCacheSize(t *testing.T) {
	torchrun := func(local string) map[string]string {
		return map[string]string{"RANK": "0", "WORLD_SIZE": "16", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": local}
	}
	tests := []struct {
		name     string
		env      map[string]string
		mib      int64
		describe string
	}{
		{"alone", nil, 4096, "4 GiB (4 GiB per node / 1 local rank, no launcher variable gives the count; grows from 32 MiB as reads come back to evicted chunks)"},
		{"8 torchrun ranks", torchrun("8"), 512, "512 MiB (4 GiB per node / 8 local ranks, torchrun's LOCAL_WORLD_SIZE; grows from 32 MiB as reads come back to evicted chunks)"},
		{"3 Open MPI ranks", map[string]string{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "3", "OMPI_COMM_WORLD_LOCAL_SIZE": "3"},
			1365, "1365 MiB (4 GiB per node / 3 local ranks, Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE; grows from 32 MiB as reads come back to evicted chunks)"},
		{"one torchrun rank", torchrun("1"), 4096, "4 GiB (4 GiB per node / 1 local rank, torchrun's LOCAL_WORLD_SIZE; grows from 32 MiB as reads come back to evicted chunks)"},
		{"Slurm without a count", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "8"},
			4096, "4 GiB (4 GiB per node / 1 local rank, no launcher variable gives the count; grows from 32 MiB as reads come back to evicted chunks)"},
		{"explicit, per process", map[string]string{CacheEnv: "1000", "RANK": "0", "WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8"},
			1000, "1000 MiB (LOADERGEN_ZARR_CACHE_MB=1000, per process; grows from 32 MiB as reads come back to evicted chunks)"},
		{"off", map[string]string{CacheEnv: "0"}, 0, "off (LOADERGEN_ZARR_CACHE_MB=0, per process)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newSharedCache(func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if c.limit != tt.mib<<20 || c.Describe() != tt.describe {
				t.Errorf("cache of %d MiB, %q; want %d MiB, %q", c.limit>>20, c.Describe(), tt.mib, tt.describe)
			}
		})
	}
	for _, tt := range []struct{ name, value, want string }{
		{CacheEnv, "x", `environment LOADERGEN_ZARR_CACHE_MB="x": want a size in MiB from 0 to 1073741824`},
		{"RANK", "1", "zarr chunk cache: environment: torchrun sets only one of RANK and WORLD_SIZE"},
	} {
		_, err := newSharedCache(func(k string) string { return map[string]string{tt.name: tt.value}[k] })
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s=%s: %v, want %s", tt.name, tt.value, err, tt.want)
		}
	}
}
