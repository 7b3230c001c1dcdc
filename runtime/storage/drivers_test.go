package storage_test

// The package's tests read remote roots through the drivers, which
// register (as programs link them) when this external test links them: see
// openRemote.
import (
	_ "github.com/loadergen/loadergen/runtime/storage/https"
	_ "github.com/loadergen/loadergen/runtime/storage/s3"
)
