package loaderimpl

import "github.com/loadergen/loadergen/runtime"
import "os"

// Place returns this process's rank and the world size of its distributed
// run as a loader with Options o takes them: o's Rank and WorldSize when
// WorldSize is set, else the launcher's environment (Launchers), else a
// single process (0 and 1). A prediction writer places itself so.
func Place(o runtime.Options) (rank, worldSize int, err error) {
	p, err := place(o, os.Getenv)
	return p.Rank, p.WorldSize, err
}
