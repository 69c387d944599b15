// Package cli reads the command lines of prep, profile and plist and returns
// their options as typed structs ([PrepOptions], [ProfileOptions],
// [PlistOptions]); the cmd/ mains print what it returns and run the tool.
//
// The syntax is the original's (spec original.md §2, linux.md "Commands and
// the workflow"): options begin with / or -, are case-insensitive and may be
// abbreviated down to a minimum length, in each tool's table order (/T is
// PLIST's tab-delimited report, /TR its trace); an option's argument is the
// next token; @file reads more arguments from a file; the environment
// variable named after the tool (PREP, PROFILE, PLIST) comes before the
// arguments; the rightmost of contradictory options wins. Every option also
// has a GNU long form (--function-counting, --start=FUNC) listed by --help.
// A token that begins with / and holds a second / is a path, not an option.
//
// Parsing happens in two steps. A normaliser, driven by one option table per
// tool, reads the tokens left to right, expands response files and reports
// the original's diagnostics (PRF1101 to PRF1105, PRF1201, PRF1202, PRF1423,
// warning PRF4101) with their exact texts. It turns every option into a
// canonical GNU long option (--select=include:SPEC, --sort=count) and hands
// that argument vector to kong, which fills the grammar structs: it applies
// the last-wins groups of the profile types and PLIST's layouts and keeps
// PROFILE's program arguments apart (passthrough). Kong never sees a token
// the user typed, because its own diagnostics cannot carry PRF numbers, the
// original's first-error-wins order, response files, abbreviations in table
// order or the /IO limit; see normalize.go.
//
// The package imports internal/prf, datafile (for [datafile.Method]) and
// kong, nothing else of the project.
package cli

import (
	"errors"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// Version is the version printed in the banner. The build may set it with
// -ldflags "-X github.com/sourceprofiler/sprof/internal/cli.Version=...".
var Version = "0.1.0"

// Tool names one of the three programs.
type Tool struct {
	// Name is the program's name as printed in diagnostics ("prep").
	Name string
	// Env is the environment variable read before the arguments ("PREP").
	Env string
}

// The three tools.
var (
	Prep    = Tool{Name: "prep", Env: "PREP"}
	Profile = Tool{Name: "profile", Env: "PROFILE"}
	Plist   = Tool{Name: "plist", Env: "PLIST"}
)

// Banner returns the one-line banner the tool writes to stderr before
// anything else unless /NOLOGO was given (linux.md: short, on stderr), with
// its line end: "prep: Source Profiler for Linux, version 0.1.0\n".
func (t Tool) Banner() string {
	return t.Name + ": Source Profiler for Linux, version " + Version + "\n"
}

// Help says which help text a command line asked for.
type Help int

const (
	// NoHelp means the tool should run.
	NoHelp Help = iota
	// UsageHelp is the original's usage text: /?, /H, /HELP, -?, no
	// arguments at all, and PROFILE or PLIST without a program or input.
	UsageHelp
	// LongHelp is the GNU-style help of --help, listing every option with
	// its abbreviation and long form.
	LongHelp
)

// HelpText returns the text to print on stdout for h, ending in a line end;
// it is empty for [NoHelp].
func (t Tool) HelpText(h Help) string {
	switch h {
	case UsageHelp:
		return usageTexts[t.Name]
	case LongHelp:
		return longHelp(t)
	}
	return ""
}

// UsageError marks a diagnostic about the command line itself, so that the
// commands can exit with status 2 (linux.md) instead of 1. It wraps a
// [prf.Error], which [prf.Format] and [prf.Code] see through.
type UsageError struct {
	Err *prf.Error
}

func (e *UsageError) Error() string { return e.Err.Error() }

func (e *UsageError) Unwrap() error { return e.Err }

// IsUsageError reports whether err is (or wraps) a [UsageError]. Every error
// the Parse functions return for a bad command line is one.
func IsUsageError(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// usageErrorf returns a UsageError carrying PRF number code.
func usageErrorf(code int, format string, args ...any) error {
	return &UsageError{Err: prf.Errorf(code, format, args...)}
}
