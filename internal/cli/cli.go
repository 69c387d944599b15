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
