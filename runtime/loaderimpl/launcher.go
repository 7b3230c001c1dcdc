package loaderimpl

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/loadergen/loadergen/runtime"
)

// placement is where this process stands in a distributed run: the shard
// it loads and the GPU of its node that "cuda" means.
type placement struct {
	Rank      int    // this process's rank, in [0, WorldSize)
	WorldSize int    // number of processes, >= 1
	LocalRank int    // rank on this node; device "cuda" is this GPU
	From      string // where the numbers came from: "options", a launcher's name, or "single process"
	// LocalWorldSize is the number of processes on this node, in
	// [1, WorldSize], as the launcher's LocalWorld variable says, and
	// LocalFrom names that variable ("torchrun's LOCAL_WORLD_SIZE"); 0 and
	// "" when no launcher says (Options and a single process do not).
	LocalWorldSize int
	LocalFrom      string
}

// A Launcher is a program that starts one process per GPU and tells each
// its place through environment variables.
type Launcher struct {
	Name                  string // as logs and errors name it
	Rank, World, LocalEnv string // its variables for the rank, world size and local rank
	// LocalWorld is its variable for the number of processes on this node,
	// which it may leave unset (Slurm sets it only with --ntasks-per-node).
	LocalWorld string
}

// Launchers are the launchers whose variables a loader reads when
// runtime.Options.WorldSize is 0.
var Launchers = []Launcher{
	{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
	{"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
	{"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
}

// LocalProcesses returns how many processes of a distributed run share
// this node, as the launcher's environment (Launchers, read through
// getenv) says, and the variable that says it, as "torchrun's
// LOCAL_WORLD_SIZE"; 1 and "" when no launcher says (a single process, or
// a launcher that leaves the count unset). The zarr chunk cache divides
// its default size by it.
func LocalProcesses(getenv func(string) string) (int, string, error) {
	p, err := fromEnvironment(getenv)
	if err != nil || p.LocalWorldSize == 0 {
		return 1, "", err
	}
	return p.LocalWorldSize, p.LocalFrom, nil
}

// place resolves the placement: Options when WorldSize is set, else the
// launchers' environment, else a single process.
func place(o runtime.Options, getenv func(string) string) (placement, error) {
	if o.WorldSize != 0 {
		p := placement{Rank: o.Rank, WorldSize: o.WorldSize, LocalRank: o.LocalRank, From: "options"}
		if err := p.check(); err != nil {
			return p, fmt.Errorf("options: %w", err)
		}
		return p, nil
	}
	if o.Rank != 0 || o.LocalRank != 0 {
		return placement{}, fmt.Errorf("options: Rank %d and LocalRank %d need WorldSize (0 leaves all three to the launcher's environment)", o.Rank, o.LocalRank)
	}
	return fromEnvironment(getenv)
}

func (p placement) check() error {
	switch {
	case p.WorldSize < 1:
		return fmt.Errorf("world size %d must be at least 1", p.WorldSize)
	case p.Rank < 0 || p.Rank >= p.WorldSize:
		return fmt.Errorf("rank %d is not in [0, world size %d)", p.Rank, p.WorldSize)
	case p.LocalRank < 0 || p.LocalRank >= p.WorldSize:
		return fmt.Errorf("local rank %d is not in [0, world size %d)", p.LocalRank, p.WorldSize)
	case p.LocalFrom != "" && (p.LocalWorldSize < 1 || p.LocalWorldSize > p.WorldSize):
		return fmt.Errorf("local world size %d is not in [1, world size %d]", p.LocalWorldSize, p.WorldSize)
	case p.LocalFrom != "" && p.LocalRank >= p.LocalWorldSize:
		return fmt.Errorf("local rank %d is not in [0, local world size %d)", p.LocalRank, p.LocalWorldSize)
	}
	return nil
}

// fromEnvironment reads every launcher whose variables are set. When two
// describe the same world (equal world sizes) they must agree; when their
// world sizes differ, one launcher started the other (srun running one
// torchrun per node), and the larger world, the inner launcher's, is this
// process's.
func fromEnvironment(getenv func(string) string) (placement, error) {
	best := placement{WorldSize: 1, From: "single process"}
	var seen *Launcher
	for i := range Launchers {
		l := &Launchers[i]
		p, ok, err := l.read(getenv)
		switch {
		case err != nil:
			return best, fmt.Errorf("environment: %w", err)
		case !ok:
			continue
		case seen == nil || p.WorldSize > best.WorldSize:
			best, seen = p, l
		case p.WorldSize == best.WorldSize && (p.Rank != best.Rank || p.LocalRank != best.LocalRank):
			return best, fmt.Errorf("environment: %s and %s disagree on this process's place: %s=%d %s=%d %s=%d, but %s=%d %s=%d %s=%d (unset one, or set Options.Rank, WorldSize and LocalRank)",
				seen.Name, l.Name, seen.Rank, best.Rank, seen.World, best.WorldSize, seen.LocalEnv, best.LocalRank,
				l.Rank, p.Rank, l.World, p.WorldSize, l.LocalEnv, p.LocalRank)
		}
	}
	return best, nil
}

// read returns the placement l's variables give, and whether they are set.
// The rank and world size go together; the local rank defaults to 0, the
// local world size to 0 (unknown).
func (l *Launcher) read(getenv func(string) string) (placement, bool, error) {
	p := placement{From: l.Name}
	vars := []struct {
		name string
		dst  *int
	}{{l.Rank, &p.Rank}, {l.World, &p.WorldSize}, {l.LocalEnv, &p.LocalRank}, {l.LocalWorld, &p.LocalWorldSize}}
	set := 0
	for i, v := range vars {
		s := strings.TrimSpace(getenv(v.name))
		if s == "" {
			continue
		}
		if i < 2 {
			set++
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return p, false, fmt.Errorf("%s=%q is not an integer", v.name, s)
		}
		*v.dst = n
		if v.name == l.LocalWorld {
			p.LocalFrom = l.Name + "'s " + l.LocalWorld
		}
	}
	switch set {
	case 0:
		return p, false, nil
	case 1:
		return p, false, fmt.Errorf("%s sets only one of %s and %s", l.Name, l.Rank, l.World)
	}
	if err := p.check(); err != nil {
		vars := fmt.Sprintf("%s=%d %s=%d %s=%d", l.Rank, p.Rank, l.World, p.WorldSize, l.LocalEnv, p.LocalRank)
		if p.LocalFrom != "" {
			vars += fmt.Sprintf(" %s=%d", l.LocalWorld, p.LocalWorldSize)
		}
		return p, false, fmt.Errorf("%s (%s): %w", l.Name, vars, err)
	}
	return p, true, nil
}
