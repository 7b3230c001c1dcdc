package runtime

// EnforceVersion is used by generated code to fail its build when it and
// this runtime disagree: a negative constant does not convert to it.
type EnforceVersion uint

// GenVersion is the version of generated code this runtime serves, and
// MinGenVersion the oldest it still serves. Generated files assert
//
//	const _ = runtime.EnforceVersion(runtime.GenVersion - N)
//	const _ = runtime.EnforceVersion(N - runtime.MinGenVersion)
//
// where N is the version they were generated for. GenVersion goes up when
// generated code starts to call something an older runtime lacks;
// MinGenVersion goes up to it when the runtime drops or changes something
// older generated code calls, so that such code fails at its guard, whose
// comment says to re-run loadergen, and not only at what is missing. The
// guard stays in this package, whatever else moves, so that every
// generated file meets it first.
const (
	GenVersion    = 7
	MinGenVersion = 7
)
