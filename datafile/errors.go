package datafile

import (
	"errors"
	"fmt"
)

// The errors of the readers and of [Merged.Add]. They are wrapped with
// context; test for them with errors.Is.
var (
	// ErrSignature means the input is not a profiler data file.
	ErrSignature = errors.New("not a profiler data file")
	// ErrVersion means the file is of a format version this package does
	// not read.
	ErrVersion = errors.New("unsupported format version")
	// ErrKind means the file is a valid data file of another kind: a .pbo
	// where a .pbt was expected, for instance.
	ErrKind = errors.New("wrong kind of data file")
	// ErrTruncated means the input ended before the end of the file.
	ErrTruncated = errors.New("file is truncated")
	// ErrChecksum means the file's checksum does not match its content.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrNotSamePlan means counts were made with another plan than the
	// database's (PRF1306).
	ErrNotSamePlan = errors.New("not derived from the same plan")
	// ErrDuplicateRun means counts whose run the database already holds:
	// the same .pbo merged twice.
	ErrDuplicateRun = errors.New("run already merged")
	// ErrConflict means counts of the same plan were made in another
	// profiling state: another method, or attribution stacks for a plan
	// without /AT (PRF1304).
	ErrConflict = errors.New("conflicts with the profiling state")
	// ErrInterval means sampling counts taken at another interval than
	// the database's runs (PRF1463).
	ErrInterval = errors.New("different sampling interval")
	// ErrOverflow means counts whose sums with the database's would not
	// fit their integers.
	ErrOverflow = errors.New("sum overflows")
)

// FormatError reports malformed content in a binary data file.
type FormatError struct {
	// Off is the offset in the file of the malformed datum.
	Off int64
	// Msg says what is wrong.
	Msg string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("malformed data at offset %d: %s", e.Off, e.Msg)
}
