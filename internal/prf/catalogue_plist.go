// The catalogue's fatal errors of PLIST for a profile its options do not fit (148x).

package prf

import (
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
)

// NoWaits is PRF1484: PLIST --time=cpu of a profile that holds no waits
// to leave out (datafile.Stats.Waits): function timing whose runs, or one
// of them, did not measure each call's time on a CPU, or a profile of
// another type.
func NoWaits(pbt string, method datafile.Method) *Diagnostic {
	var d *Diagnostic
	switch {
	case method.IsTiming():
		d = newDiag(1484, Fatal, nil, "%s: its runs did not measure each call's time on a CPU (function timing of C, C++ or Rust with the books kept in the program, where perf events are allowed)", pbt)
		d.Hint = "a database holds the waits only when every run merged into it measured them: prepare the program again (prep /FT), profile it and merge; without --time=cpu, plist lists the elapsed times"
	case method.IsSampling():
		d = newDiag(1484, Fatal, nil, "%s: a function sampling profile has no waits to leave out: its times are estimated from samples of the time on a CPU", pbt)
		d.Hint = "list it without --time=cpu"
	default:
		d = newDiag(1484, Fatal, nil, "%s: a %s profile has no times", pbt, strings.ToLower(method.Words()))
		d.Hint = "--time=cpu lists the times of function timing (prep /FT)"
	}
	return d
}

// CombineOtherType is PRF1485: plist --combine of a line profile and a
// function profile, whose coverage does not add: a line profile counts
// lines, a function profile calls.
func CombineOtherType(first, firstType, path, pathType string) *Diagnostic {
	d := newDiag(1485, Fatal, nil, "--combine: %s is a %s profile, and %s a %s profile: a line profile's coverage and a function profile's do not add",
		path, pathType, first, firstType)
	d.Hint = "combine line profiles (prep /LC, /LV) or function profiles (prep /FC, /FV, /FT, /FS), each with its own --combine"
	return d
}
