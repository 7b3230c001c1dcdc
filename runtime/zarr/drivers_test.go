package zarr

// The package's tests read remote roots (s3://, https://) through the
// storage drivers, which programs that read remote data link (generated
// loaders do).
import (
	_ "github.com/loadergen/loadergen/runtime/storage/https"
	_ "github.com/loadergen/loadergen/runtime/storage/s3"
)
