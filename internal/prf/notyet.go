package prf

// Feature is a capability the design specifies (docs/design/linux.md) that
// this version may not have yet.
type Feature int

// The features that were, or are, not built yet.
const (
	FunctionTiming Feature = iota + 1
	FunctionSampling
	LineCounting
	LineCoverage
	StartFunction
	Attribution
	Calibration
	Trace
	SharedLibraries
)

// pending is the one list of what this version lacks, with the words that
// name each feature in its diagnostic. The options of a pending feature are
// parsed and refused, never silently ignored; a feature that lands leaves
// this list, and the checks that ask [Unavailable] let it through.
var pending = map[Feature]string{}

// Unavailable returns PRF1001 when f is not available yet in this version,
// and nil when it is.
func Unavailable(f Feature) error {
	what, ok := pending[f]
	if !ok {
		return nil
	}
	return newDiag(1001, Fatal, nil, "%s is not available yet in this version", what)
}
