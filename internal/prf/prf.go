// Package prf is the catalogue of the diagnostics of the three tools: every
// message prep, profile and plist print, with the original's PRF number
// where the original had the message ("cannot open file %s" is PRF1011),
// its severity, and for some a hint that says what to do next.
//
// Each message has one constructor here (catalogue.go, catalogue_warn.go,
// catalogue_run.go, catalogue_plist.go), so that its number, text and
// severity are written once; the packages that detect a problem call the
// constructor, and the commands print what they get with [Write]:
//
//	prep: fatal error PRF1011: cannot open file x.pbt: no such file or directory
//	prep: warning PRF4106: function/source/object/lib foo was never matched
//	profile: fatal error PRF1445: cannot profile an arm64 program on amd64
//
// Every line has a number: an error without one, which only a fault of
// the tool's can bring to [Write], is printed as PRF1001 ([Unknown]).
//
// A [Diagnostic] wraps its cause, so errors.Is and errors.As see through it.
// The package knows the data-file errors of package datafile, to give them
// their numbers ([DataFile], [Merge]), and nothing else of the project.
package prf

import (
	"errors"
	"fmt"
	"io"
)

// Severity says whether a tool goes on after a diagnostic.
type Severity uint8

const (
	// Fatal ends the tool with exit status 1 (2 for a [Diagnostic.Usage]).
	Fatal Severity = iota
	// Warning is printed and the tool goes on.
	Warning
)

// String returns the word printed before the number: "fatal error" or
// "warning", as the original printed them.
func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "fatal error"
}

// Diagnostic is one message of the catalogue, with its arguments filled in.
type Diagnostic struct {
	// Code is the PRF number: the original's, or for the messages the
	// original did not have one it did not use (docs/linux.md). A
	// Diagnostic without one is printed as [Unknown].
	Code int
	// Severity is Fatal or Warning.
	Severity Severity
	// Usage marks a diagnostic about the command line itself: the tool
	// exits with status 2 and suggests --help.
	Usage bool
	// Text is the message with its arguments.
	Text string
	// Hint says what to do next; it is printed on a line of its own, and
	// may be empty.
	Hint string
	// Err is the cause, or nil; its text follows Text after ": ".
	Err error
}

// Error returns the message and its cause, without number or severity.
func (d *Diagnostic) Error() string {
	if d.Err == nil {
		return d.Text
	}
	return d.Text + ": " + d.Err.Error()
}

// Unwrap returns the cause.
func (d *Diagnostic) Unwrap() error { return d.Err }

// AsWarning returns a copy of d printed as a warning: the same message where
// the tool can go on (PROFILE /X after an incomplete run).
func (d *Diagnostic) AsWarning() *Diagnostic {
	w := *d
	w.Severity = Warning
	return &w
}

// Code returns the PRF number carried by err, or 0.
func Code(err error) int {
	var d *Diagnostic
	if errors.As(err, &d) {
		return d.Code
	}
	return 0
}

// IsUsage reports whether err is a diagnostic about the command line.
func IsUsage(err error) bool {
	var d *Diagnostic
	return errors.As(err, &d) && d.Usage
}

// ExitStatus is the exit status of a tool that stops on err: 2 for a bad
// command line, 1 for any other fatal error, 0 for nil.
func ExitStatus(err error) int {
	switch {
	case err == nil:
		return 0
	case IsUsage(err):
		return 2
	}
	return 1
}

// Line renders the first line of a diagnostic as tool prints it on stderr,
// without a line end: "<tool>: <severity> PRF<nnnn>: <text>". Every line
// has a number: an error that is not a numbered Diagnostic (a path the
// catalogue does not cover, which is a fault of the tool's) is printed as
// [Unknown], PRF1001, never as a "fatal error:" without a number. The
// names in it are [Printable]: one diagnostic is one line, whatever a
// file's name holds.
func Line(tool string, err error) string {
	d, err := numbered(err)
	return fmt.Sprintf("%s: %s PRF%04d: %s", tool, d.Severity, d.Code, Printable(err.Error()))
}

// numbered returns the Diagnostic that err is printed as, and the error
// whose text is printed: err and the Diagnostic it wraps, or, for an error
// without a number, [Unknown] of it, with the severity of an unnumbered
// Diagnostic it wraps.
func numbered(err error) (*Diagnostic, error) {
	var d *Diagnostic
	if errors.As(err, &d) && d.Code != 0 {
		return d, err
	}
	u := Unknown(err)
	if d != nil {
		u.Severity = d.Severity
	}
	return u, u
}

// Write prints err as tool prints it on stderr: its [Line], then its hint
// on a line of its own. A command-line diagnostic without a hint of its own
// suggests the tool's --help.
func Write(w io.Writer, tool string, err error) {
	fmt.Fprintln(w, Line(tool, err))
	d, _ := numbered(err)
	hint := d.Hint
	if hint == "" && d.Usage {
		hint = fmt.Sprintf("try '%s --help' for the options", tool)
	}
	if hint != "" {
		fmt.Fprintf(w, "%s: hint: %s\n", tool, Printable(hint))
	}
}

// newDiag builds a diagnostic; the catalogue's constructors call it.
func newDiag(code int, sev Severity, err error, format string, args ...any) *Diagnostic {
	return &Diagnostic{Code: code, Severity: sev, Text: fmt.Sprintf(format, args...), Err: err}
}

// usage builds a command-line diagnostic.
func usage(code int, format string, args ...any) *Diagnostic {
	d := newDiag(code, Fatal, nil, format, args...)
	d.Usage = true
	return d
}
