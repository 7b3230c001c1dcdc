// Package zarr reads zarr v2 and v3 arrays and OME-NGFF multiscales from a
// local directory or a remote root, and writes zarr v2 and v3 arrays, sharded
// or not, and OME-NGFF multiscales (WriteArray, CreateArray, CreateMultiscale).
//
// Its files, by job: store.go opens a store and its nodes, metadoc.go
// reads metadata documents, array.go an array's metadata and its chunks,
// dtype.go its dtype and fill value, ngff.go multiscales,
// read.go boxes of an array, sample.go boxes at any angle (points
// between voxels, interpolated), cache.go the cache of decoded chunks,
// memory.go the bound of the memory that decodes take; the
// codecs are chain.go (a chunk's codec chain and its decoding),
// v2codec.go, v3codec.go and sharding.go (each format's codec metadata);
// strided.go and convert.go copy and convert boxes; write.go writes an array
// held in memory, create.go an array's metadata and its chunks one by one
// (encoding them, shards included) and multiscale groups.
// docs/VOLUMES.md, "Zarr arrays", says what it reads and refuses.
package zarr
