// Package zarr reads zarr v2 and v3 arrays and OME-NGFF multiscales from a
// local directory or a remote root, and writes zarr v2 and v3 arrays, sharded
// or not, and OME-NGFF multiscales (WriteArray, CreateArray, CreateMultiscale).
//
// Its files, by job: store.go opens a store and its nodes, metadoc.go
// reads metadata documents, array.go opens an array and names its chunks,
// metadata.go parses its metadata (.zarray, zarr.json), chunks.go reads
// and decodes its chunks, dtype.go its dtype and fill value, ngff.go
// multiscales, read.go boxes of an array, sample.go boxes at any angle
// (points between voxels, interpolated) and rows.go its loops over a
// row's points, cache.go the cache of decoded
// chunks, memory.go the bound of the memory that decodes take; the codecs
// are chain.go (a chunk's codec chain and its decoding), v2codec.go and
// v3codec.go (each format's codec metadata), and sharding.go (the
// sharding codec's metadata, and the shard index: finding an inner chunk
// and reading an index); strided.go and convert.go copy and convert boxes;
// write.go writes an array held in memory, create.go an array's metadata
// and its chunks one by one (encoding them, shards included) and
// multiscale groups. The rules a schema is checked against before a store
// opens (node paths, element conversions) are zarrspec's.
// docs/VOLUMES.md, "Zarr arrays", says what it reads and refuses.
package zarr
