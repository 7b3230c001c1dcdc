// Package records reads the samples of image datasets: WebDataset tar
// shards, indexed at open from their headers only, and ImageFolder-style
// class folders. A sample is a pure function of the files and its index,
// so that the loader's order, resume and rank sharding stay exact.
package records
