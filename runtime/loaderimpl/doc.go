// Package loaderimpl is the part of the runtime that only loaders generated
// by loadergen call: the Engine and its New*Engine constructors, Run and
// FillFunc, the Sampler and its seeds (EpochSeed, SeedSample), Padded, the
// Pad and Truncate functions of ragged keys, CloneTensor, the groupings
// (GroupBuckets, GroupLocality) and the launchers' placement (Place,
// LocalProcesses).
//
// WARNING: import it only from generated code (and from the readers under
// runtime/ that generated code drives). It changes with runtime.GenVersion,
// without regard for other callers; a loader's user needs only package
// runtime.
//
// Generated code does the per-dataset work (typed Source calls into typed
// views of the staging buffers); the Engine does the per-batch work that
// is the same for every dataset, without planning, map look-ups,
// reflection or allocation. It makes the runtime.Batch and runtime.Cursor
// values it hands out through runtime/internal/staged.
package loaderimpl
