package runtime

import "fmt"

// OnError is what a loader does with a bad sample (a *BadSampleError): the
// schema's on_error: of its source (records:, crops:).
type OnError uint8

// The policies. The zero value is OnErrorFail.
const (
	// OnErrorFail ends the epoch with the sample's *ReadError.
	OnErrorFail OnError = iota
	// OnErrorSkip replaces the sample with the next dataset index that
	// reads, counts it in Stats.Skipped and logs the first ten.
	OnErrorSkip
)

// OnErrorModes lists the values of OnError, in the order the schema's
// errors offer their names.
var OnErrorModes = []OnError{OnErrorFail, OnErrorSkip}

// onErrorNames are the policies as a schema writes them, by value.
var onErrorNames = [...]string{OnErrorFail: "error", OnErrorSkip: "skip"}

// String returns "error" or "skip", as the schema spells the policy.
func (o OnError) String() string {
	if int(o) < len(onErrorNames) {
		return onErrorNames[o]
	}
	return fmt.Sprintf("OnError(%d)", uint8(o))
}

// MarshalText writes the policy's name.
func (o OnError) MarshalText() ([]byte, error) { return []byte(o.String()), nil }
