package plist

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
)

// Format is a report's format: the original's listing and tab-delimited
// records, and the formats of the tools people already use, each read by
// its own consumer (docs/exports.md). One enum, as in pprof's report
// package.
type Format int

// The formats.
const (
	FormatText      Format = iota // the original's listing (the default)
	FormatTab                     // /T: the original's tab-delimited records 0 to 10
	FormatLcov                    // an lcov tracefile, for genhtml and lcov
	FormatCallgrind               // a callgrind profile, for callgrind_annotate and KCachegrind
	FormatPprof                   // a gzipped profile.proto, for go tool pprof
	FormatFolded                  // folded stacks, for flame graphs
	FormatJSON                    // JSON of the documented schema
	FormatGmon                    // a gmon.out, for GNU gprof (function sampling)
	FormatChrome                  // the execution trace as Trace Event JSON, for Perfetto and chrome://tracing
	FormatHTML                    // a self-contained HTML page, for a browser
)

var formatNames = []string{"text", "tab", "lcov", "callgrind", "pprof", "folded", "json", "gmon", "chrome", "html"}

// String names f as --format spells it.
func (f Format) String() string {
	if f >= 0 && int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("format(%d)", int(f))
}

// FormatNames returns the names of the formats, as --format spells them,
// in the order of the Format constants.
func FormatNames() []string { return slices.Clone(formatNames) }

// ParseFormat returns the format named name (--format).
func ParseFormat(name string) (Format, error) {
	if i := slices.Index(formatNames, strings.ToLower(name)); i >= 0 {
		return Format(i), nil
	}
	return 0, fmt.Errorf("unknown format %q (formats: %s)", name, strings.Join(formatNames, ", "))
}

// Binary reports whether f is not text (pprof's gzipped protocol buffer,
// gmon.out).
func (f Format) Binary() bool { return f == FormatPprof || f == FormatGmon }

// writeExport writes the report in one of the formats of other tools.
func (r *report) writeExport(w io.Writer) error {
	bw := bufio.NewWriter(w)
	var err error
	switch r.o.Format {
	case FormatLcov:
		lcovExport{r}.writeLcov(bw)
	case FormatCallgrind:
		callgrindExport{r}.writeCallgrind(bw)
	case FormatPprof:
		err = pprofExport{r}.writePprof(bw)
	case FormatFolded:
		foldedExport{r}.writeFolded(bw)
	case FormatJSON:
		err = jsonExport{r}.writeJSON(bw)
	case FormatGmon:
		err = gmonExport{r}.writeGmon(bw)
	case FormatChrome:
		err = chromeExport{r}.writeChrome(bw)
	case FormatHTML:
		err = htmlExport{r}.writeHTML(bw)
	default:
		err = fmt.Errorf("unknown format %v", r.o.Format)
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

// moduleName is the name of module mi, or "?".
func (r *report) moduleName(mi int) string {
	if mi >= 0 && mi < len(r.plan.Modules) {
		return r.plan.Modules[mi].Name
	}
	return "?"
}

// lineFile is the recorded path of line l's source file, or "?".
func (r *report) lineFile(l *datafile.Line) string {
	if l.Module >= 0 && l.Module < len(r.plan.Modules) {
		if files := r.plan.Modules[l.Module].Files; l.File >= 0 && l.File < len(files) {
			return files[l.File]
		}
	}
	return "?"
}

// lineFunc returns the function whose code holds line l's first site,
// the first in the plan's order where several do (folded code), or -1.
func (r *report) lineFunc(l *datafile.Line) int {
	if len(l.Addrs) == 0 {
		return -1
	}
	return r.ranges.first(l.Module, l.Addrs[0])
}

// exportName is function i's name in the other tools' formats: its
// displayed name, followed by its source as the listings show it
// ("lib_add (libdlllib.so)") where another function of the profile has
// the same name (a call through the PLT and the library's function).
func (r *report) exportName(i int) string {
	if r.shared == nil {
		r.shared = map[string]int{}
		for _, n := range r.names {
			r.shared[n]++
		}
	}
	if r.shared[r.names[i]] > 1 {
		return r.names[i] + " (" + r.plan.Funcs[i].Source + ")"
	}
	return r.names[i]
}

// mainValue is a function's figure in the one-value formats (folded):
// its hits, or for timing and sampling its own time in nanoseconds.
func (r *report) mainValue(i int) int64 {
	if r.hasTimes() {
		return r.funcTime(i)
	}
	return int64(r.hits(i))
}

// version is the creator's version.
func (r *report) version() string {
	if r.o.Version != "" {
		return r.o.Version
	}
	return "dev"
}
