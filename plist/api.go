// Package plist writes the reports of a merged profile (.pbt): the original's
// listings for every profile type and sort order, and its tab-delimited
// records 0 to 10. It sees only package datafile.
//
// The listings reproduce the original PLIST byte for byte (original.md §5
// and §6, checked against its captured outputs), with LF line ends. Where
// the port differs, on purpose:
//   - Module, source and file names keep their case (the original
//     lower-cased them).
//   - Function names are demangled for C++ (without the return type the
//     Itanium ABI encodes for templates) and Rust (without the hash).
//   - A run that did not end normally has an "Incomplete run:" line after
//     its "Command line at" line.
//   - "Overhead Calculated" is the last merged run's calibration, in
//     nanoseconds per event, and "Overhead Average" the integer mean over
//     the runs.
//   - /F writes the module's path in records 6 and 7 and the recorded source
//     path in records 7 (the original documented /F and ignored it).
//   - Attribution groups (records 8 to 10) follow their own function's
//     record 6 (the original misplaced them).
//   - Function sampling (method 523, which the original had retired) is
//     listed as function timing is, its times estimated from the samples;
//     its Program Statistics add the sampling figures, and each module's
//     table is followed by the source listings of its sampled lines.
package plist

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// Sort is a sort switch of PLIST (original.md §5.4).
type Sort int

// The sort switches. SortDefault picks the profile type's default.
const (
	SortDefault     Sort = iota
	SortCount            // /SC: hit count, highest first
	SortName             // /SN: name
	SortNameSummary      // /SNS: coverage summary of the functions, by name
	SortTime             // /ST: function time, highest first
	SortChildTime        // /STC: function+child time, highest first
	SortLine             // /SL: source order
	SortLineSummary      // /SLS: line coverage layout, source order
)

// Options are PLIST's report options. The zero value lists every function
// (MinCount 0) with no cutting and no paging; [DefaultOptions] gives PLIST's
// defaults.
type Options struct {
	// Sort is the sort switch. A switch that does not fit the profile type
	// is reported to Warn (PRF1481) and the type's default is used. The
	// tab-delimited report ignores it.
	Sort Sort
	// MinCount is /C: function-table rows and attribution entries with fewer
	// hits are left out (original.md §5.8). PLIST's default is 1.
	MinCount int
	// Tab is /T: write the tab-delimited records instead of the listing
	// (Format FormatTab says the same).
	Tab bool
	// Format is --format: the listing (FormatText, the default), the
	// tab-delimited records, or another tool's format.
	Format Format
	// Version is the creator's version written into the other tools'
	// formats.
	Version string
	// Mangled is /L: print and sort by the stored (mangled) names.
	Mangled bool
	// FullPaths is /F: in the tab-delimited report, the module field is the
	// module's full path and the source field of line records the source
	// file's recorded path. (The original documented this and did nothing.)
	FullPaths bool
	// PageWidth is /PW, used when PageWidthGiven is set: every line is cut
	// after PageWidth characters, so 0 empties every line. Without
	// PageWidthGiven nothing is cut (the original applied no default width).
	PageWidth      int
	PageWidthGiven bool
	// PageLength is /PL: the number of lines per page, 0 for no paging.
	// Values from 1 to 16 act as 16. The original's /PL 0 does not switch
	// paging off but acts as 16 too: the command passes 16 for it.
	PageLength int
	// SourceDirs are the /D directories searched for source files.
	SourceDirs []string
	// Flat is /FLAT: attribution stacks listed one by one instead of as a
	// caller tree.
	Flat bool
	// TabWidth is /TAB: the indentation step of attribution listings
	// (PLIST's default is 2).
	TabWidth int
	// Now is the time printed in the page header's Date: line. Run dates
	// (Command line at, record 4) are shown in Now's location.
	Now time.Time
	// Path is the .pbt's path, named in warning PRF1481.
	Path string
	// Warn receives the warnings (PRF1481, PRF4481; gmon.out's PRF4483
	// and PRF4484; the sources a listing leaves out, PRF4487; WriteDiff's
	// base of another type, PRF4488) before the report is written; nil
	// discards them.
	Warn func(*prf.Diagnostic)
	// Trace is the run's execution trace (profile /TRACE), which
	// FormatChrome writes; nil for none.
	Trace *Trace
	// Demangle turns a stored name into the displayed one; nil means the
	// default demangler (C++ and Rust, legacy and v0; other names as they
	// are). Unused with Mangled.
	Demangle func(string) string
	// Time is --time: the times of a function timing profile as
	// measured, elapsed (TimeElapsed, the default), or on a CPU (TimeCPU:
	// [CPUTimes], before anything is written; [ErrNoWaits] for a profile
	// whose runs did not measure its calls' waits). The listing's
	// Program Statistics and the JSON say which.
	Time TimeView
}

// DefaultOptions returns PLIST's defaults: /C 1, /TAB 2, no /PW, no /PL,
// the default sort.
func DefaultOptions() Options {
	return Options{MinCount: 1, TabWidth: 2}
}

// Generate writes the report of m selected by o to w: the listing of
// original.md §5, or with o.Tab the tab-delimited records of §6, of m's
// figures in the view o.Time selects. Lines end in LF. Warnings go to
// o.Warn before anything is written.
func Generate(w io.Writer, m *datafile.Merged, o Options) error {
	if m == nil {
		return errors.New("write report: no profile")
	}
	m, err := inView(m, o)
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	r := newReport(m, o)
	return r.write(w)
}
