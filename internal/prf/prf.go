// Package prf holds the diagnostics of the three tools: errors and warnings
// that carry the original's PRF numbers (PRF1011 "cannot open file %s", ...).
//
// An [Error] wraps its cause, so errors.Is and errors.As see through it; the
// commands print it as "prep: fatal error PRF1011: cannot open file x.pbt:
// no such file or directory". This package imports nothing of the project.
package prf

import (
	"errors"
	"fmt"
)

// Error is a diagnostic with a PRF number.
type Error struct {
	// Code is the PRF number (1011, 4106, ...).
	Code int
	// Text is the original's message with its arguments filled in.
	Text string
	// Err is the underlying cause, or nil.
	Err error
}

// Errorf returns an Error with the given PRF number and message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Text: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error with the given PRF number and message whose cause is
// err.
func Wrap(err error, code int, format string, args ...any) *Error {
	return &Error{Code: code, Text: fmt.Sprintf(format, args...), Err: err}
}

func (e *Error) Error() string {
	if e.Err == nil {
		return e.Text
	}
	return e.Text + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Code returns the PRF number carried by err, or 0.
func Code(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// Format renders a diagnostic line as the tools print it on stderr:
// "<tool>: <severity> PRF<nnnn>: <text>". Severity is "warning" or
// "fatal error"; an error without a PRF number prints as "<tool>: <text>".
func Format(tool, severity string, err error) string {
	var e *Error
	if errors.As(err, &e) {
		return fmt.Sprintf("%s: %s PRF%04d: %s", tool, severity, e.Code, err.Error())
	}
	return fmt.Sprintf("%s: %s", tool, err.Error())
}
