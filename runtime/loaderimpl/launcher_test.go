package loaderimpl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loadergen/loadergen/runtime"
)

func TestPlace(t *testing.T) {
	tests := []struct {
		name string
		opts runtime.Options
		env  map[string]string
		want placement
		err  string
	}{
		{name: "alone", want: placement{WorldSize: 1, From: "single process"}},
		{name: "options", opts: runtime.Options{Rank: 2, WorldSize: 4, LocalRank: 1},
			env:  map[string]string{"RANK": "0", "WORLD_SIZE": "2"},
			want: placement{Rank: 2, WorldSize: 4, LocalRank: 1, From: "options"}},
		{name: "rank without world size", opts: runtime.Options{Rank: 1},
			err: "options: Rank 1 and LocalRank 0 need WorldSize (0 leaves all three to the launcher's environment)"},
		{name: "rank out of range", opts: runtime.Options{Rank: 4, WorldSize: 4},
			err: "options: rank 4 is not in [0, world size 4)"},
		{name: "torchrun", env: map[string]string{"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1"},
			want: placement{Rank: 3, WorldSize: 8, LocalRank: 1, From: "torchrun"}},
		{name: "slurm", env: map[string]string{"SLURM_PROCID": "5", "SLURM_NTASKS": "6", "SLURM_LOCALID": "2"},
			want: placement{Rank: 5, WorldSize: 6, LocalRank: 2, From: "Slurm"}},
		{name: "open mpi", env: map[string]string{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "1"},
			want: placement{Rank: 1, WorldSize: 2, LocalRank: 1, From: "Open MPI"}},
		{name: "agreeing launchers", env: map[string]string{"RANK": "1", "WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"},
			want: placement{Rank: 1, WorldSize: 2, From: "torchrun"}},
		{name: "srun starting torchrun: the larger world is this process's",
			env:  map[string]string{"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_LOCALID": "0", "RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1"},
			want: placement{Rank: 5, WorldSize: 8, LocalRank: 1, From: "torchrun"}},
		{name: "conflict", env: map[string]string{"RANK": "1", "WORLD_SIZE": "4", "SLURM_PROCID": "2", "SLURM_NTASKS": "4"},
			err: "environment: torchrun and Slurm disagree on this process's place: RANK=1 WORLD_SIZE=4 LOCAL_RANK=0, but SLURM_PROCID=2 SLURM_NTASKS=4 SLURM_LOCALID=0 (unset one, or set Options.Rank, WorldSize and LocalRank)"},
		{name: "torchrun with its local world size", env: map[string]string{"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "4"},
			want: placement{Rank: 3, WorldSize: 8, LocalRank: 3, From: "torchrun", LocalWorldSize: 4, LocalFrom: "torchrun's LOCAL_WORLD_SIZE"}},
		{name: "local world larger than the world", env: map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_NTASKS_PER_NODE": "4"},
			err: "environment: Slurm (SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_LOCALID=0 SLURM_NTASKS_PER_NODE=4): local world size 4 is not in [1, world size 2]"},
		{name: "local world of none", env: map[string]string{"RANK": "0", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "0"},
			err: "environment: torchrun (RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=0): local world size 0 is not in [1, world size 2]"},
		{name: "local rank past the local world", env: map[string]string{"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"},
			err: "environment: Open MPI (OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=2 OMPI_COMM_WORLD_LOCAL_SIZE=2): local rank 2 is not in [0, local world size 2)"},
		{name: "half set", env: map[string]string{"WORLD_SIZE": "4"},
			err: "environment: torchrun sets only one of RANK and WORLD_SIZE"},
		{name: "not a number", env: map[string]string{"SLURM_PROCID": "x", "SLURM_NTASKS": "2"},
			err: `environment: SLURM_PROCID="x" is not an integer`},
		{name: "out of range", env: map[string]string{"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "2"},
			err: "environment: Open MPI (OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=0): rank 2 is not in [0, world size 2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := place(tt.opts, func(k string) string { return tt.env[k] })
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v\nwant %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("placement (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLocalProcesses: the processes on this node and the variable that
// says so, from the launcher whose world is this process's; one, named by
// none, when no launcher gives the count.
func TestLocalProcesses(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		n    int
		from string
		err  string
	}{
		{name: "alone", n: 1},
		{name: "torchrun", env: map[string]string{"RANK": "5", "WORLD_SIZE": "16", "LOCAL_RANK": "5", "LOCAL_WORLD_SIZE": "8"}, n: 8, from: "torchrun's LOCAL_WORLD_SIZE"},
		{name: "Slurm without --ntasks-per-node", env: map[string]string{"SLURM_PROCID": "1", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1"}, n: 1},
		{name: "Open MPI", env: map[string]string{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, n: 2, from: "Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE"},
		{name: "srun starting torchrun: torchrun's count",
			env: map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_NTASKS_PER_NODE": "1", "RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "4"},
			n:   4, from: "torchrun's LOCAL_WORLD_SIZE"},
		{name: "bad environment", env: map[string]string{"RANK": "1"}, n: 1, err: "environment: torchrun sets only one of RANK and WORLD_SIZE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, from, err := LocalProcesses(func(k string) string { return tt.env[k] })
			if (err == nil) != (tt.err == "") || err != nil && err.Error() != tt.err {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
			if n != tt.n || from != tt.from {
				t.Errorf("LocalProcesses = %d, %q; want %d, %q", n, from, tt.n, tt.from)
			}
		})
	}
}

// launchChild is set in the environment of the processes
// TestLaunchersPartitionTheEpoch starts: "pad" or "drop".
const launchChild = "LOADERGEN_TEST_LAUNCH_CHILD"

// TestLaunchersPartitionTheEpoch starts 4 real processes (this test binary)
// per launcher, each with the variables that launcher sets, and checks that
// together they load every index of a shuffled epoch exactly once with
// drop_last, or pad as DistributedSampler does without it.
func TestLaunchersPartitionTheEpoch(t *testing.T) {
	if mode := os.Getenv(launchChild); mode != "" {
		launchedProcess(mode)
		return
	}
	const world, n = 4, 23
	for _, l := range Launchers {
		for _, mode := range []string{"drop", "pad"} {
			t.Run(l.Name+"/"+mode, func(t *testing.T) {
				var all []int
				for rank := range world {
					cmd := exec.Command(os.Args[0], "-test.run=^TestLaunchersPartitionTheEpoch$")
					// GORACE: a race-enabled child would sleep a second at exit.
					cmd.Env = append(withoutLaunchers(os.Environ()), launchChild+"="+mode,
						"GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0",
						fmt.Sprintf("%s=%d", l.Rank, rank), fmt.Sprintf("%s=%d", l.World, world),
						fmt.Sprintf("%s=%d", l.LocalEnv, rank%2))
					var stdout, stderr bytes.Buffer
					cmd.Stdout, cmd.Stderr = &stdout, &stderr
					if err := cmd.Run(); err != nil {
						t.Fatalf("rank %d: %v\n%s", rank, err, stderr.String())
					}
					if want := fmt.Sprintf("placement=%q", l.Name); !strings.Contains(stderr.String(), want) &&
						!strings.Contains(stderr.String(), "placement="+l.Name) {
						t.Errorf("rank %d: the start-up line does not name %s:\n%s", rank, l.Name, stderr.String())
					}
					var got []int
					if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
						t.Fatalf("rank %d printed %q: %v", rank, stdout.String(), err)
					}
					all = append(all, got...)
				}
				count := map[int]int{}
				for _, i := range all {
					count[i]++
				}
				switch mode {
				case "drop": // 23 = 4 x 5 + 3: the 3 samples of the remainder are dropped
					if len(all) != 20 || len(count) != 20 {
						t.Errorf("with drop_last, %d samples over %d indices, want 20 distinct: %v", len(all), len(count), all)
					}
				case "pad": // each rank gets ceil(23/4) = 6: one sample is visited twice
					twice := 0
					for _, c := range count {
						if c == 2 {
							twice++
						}
					}
					if len(all) != 24 || len(count) != n || twice != 1 {
						t.Errorf("padded, %d samples over %d indices (%d twice), want 24 over all 23 (1 twice): %v", len(all), len(count), twice, all)
					}
				}
			})
		}
	}
}

// withoutLaunchers drops any launcher variable the test itself runs under.
func withoutLaunchers(env []string) []string {
	return slices.DeleteFunc(env, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		for _, l := range Launchers {
			if name == l.Rank || name == l.World || name == l.LocalEnv || name == l.LocalWorld {
				return true
			}
		}
		return false
	})
}

// launchedProcess is the child's side: one shuffled epoch of 23 samples in
// batches of 5 with Options{} (placement from the environment), logging to
// stderr and printing the indices it loaded as JSON.
func launchedProcess(mode string) {
	loader := runtime.LoaderDefaults{Prefetch: 2, Shuffle: true, Seed: 99, DropLast: mode == "drop"}
	src := &patterned{}
	e, err := NewEngine(testPlan(5, loader), 23, runtime.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}, src.fill)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	src.e = e
	var got []int
	for b, err := range e.Epoch(context.Background(), 2, 0) {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		got = append(got, b.Indices...)
	}
	e.Close()
	out, _ := json.Marshal(got)
	os.Stdout.Write(out)
	os.Exit(0)
}
