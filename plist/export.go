package plist

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
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
		r.writeLcov(bw)
	case FormatCallgrind:
		r.writeCallgrind(bw)
	case FormatPprof:
		err = r.writePprof(bw)
	case FormatFolded:
		r.writeFolded(bw)
	case FormatJSON:
		err = r.writeJSON(bw)
	case FormatGmon:
		err = r.writeGmon(bw)
	case FormatChrome:
		err = r.writeChrome(bw)
	case FormatHTML:
		err = r.writeHTML(bw)
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

// lineFunc returns the function whose code holds line l's first site, or
// -1.
func (r *report) lineFunc(l *datafile.Line) int {
	if len(l.Addrs) == 0 {
		return -1
	}
	a := l.Addrs[0]
	for _, i := range at(r.funcs, l.Module) {
		if f := &r.plan.Funcs[i]; f.Low <= a && a < f.High {
			return i
		}
	}
	return -1
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

// writeLcov writes an lcov tracefile (geninfo(1)): per source file, its
// functions (FN, FNDA, FNF, FNH) and its lines (DA, LF, LH). A line
// profile has the counts of its lines and the calls of its functions,
// each function's those of its first line (lcovFirstLine), where that
// line is the function's alone (one inlined elsewhere is left out). A function
// profile has the calls of its functions and, for each, its declaration
// line with the same count: lcov 1.16 and genhtml refuse a file without
// lines ("no valid records found"). SF is the path where the source file
// is found (exportPath), which genhtml opens, else the one recorded.
// Functions without a source file (known from the symbol table, PLT
// entries) have no place in it. Names are the stored ones, which genhtml
// --demangle-cpp demangles, as gcov's tracefiles have.
func (r *report) writeLcov(w *bufio.Writer) {
	type function struct {
		line int
		name string
		hits uint64
	}
	type record struct {
		funcs []function
		lines map[int]uint64
	}
	var order []string
	files := map[string]*record{}
	get := func(mod int, name string) *record {
		path := r.exportPath(mod, name)
		if files[path] == nil {
			files[path] = &record{lines: map[int]uint64{}}
			order = append(order, path)
		}
		return files[path]
	}
	funcProfile := r.plan.Method.IsFunction()
	if !funcProfile {
		for i := range r.plan.Lines {
			l := &r.plan.Lines[i]
			get(l.Module, r.lineFile(l)).lines[l.Line] += r.hits(i)
		}
	}
	for i, f := range r.plan.Funcs {
		if f.File == "" {
			continue
		}
		hits := r.hits(i)
		if !funcProfile {
			line := r.lcovFirstLine(i)
			if line < 0 {
				continue // none of its lines is profiled
			}
			hits = r.hits(line)
		}
		rec := get(f.Module, f.File)
		rec.funcs = append(rec.funcs, function{max(f.Line, 1), f.Name, hits})
		if funcProfile {
			rec.lines[max(f.Line, 1)] += hits
		}
	}
	test := ""
	if n := len(r.m.Runs); n > 0 {
		test = lcovTestName(r.m.Runs[n-1].CommandLine)
	}
	for _, name := range order {
		rec := files[name]
		fmt.Fprintf(w, "TN:%s\nSF:%s\n", test, prf.Printable(name))
		for _, f := range rec.funcs {
			fmt.Fprintf(w, "FN:%d,%s\n", f.line, prf.Printable(f.name))
		}
		hit := 0
		for _, f := range rec.funcs {
			fmt.Fprintf(w, "FNDA:%d,%s\n", f.hits, prf.Printable(f.name))
			if f.hits > 0 {
				hit++
			}
		}
		if len(rec.funcs) > 0 {
			fmt.Fprintf(w, "FNF:%d\nFNH:%d\n", len(rec.funcs), hit)
		}
		if len(rec.lines) > 0 {
			lines := slices.Sorted(maps.Keys(rec.lines))
			hit = 0
			for _, n := range lines {
				fmt.Fprintf(w, "DA:%d,%d\n", n, rec.lines[n])
				if rec.lines[n] > 0 {
					hit++
				}
			}
			fmt.Fprintf(w, "LF:%d\nLH:%d\n", len(lines), hit)
		}
		w.WriteString("end_of_record\n")
	}
}

// lcovFirstLine returns the index of function i's first line in a line
// profile: the line of the lowest of its module's line sites in the
// function's code (from its entry when its bounds are not known), the
// line every call begins with, whose count is the function's calls (for
// line coverage, the runs that called it). It returns -1 when no
// profiled line is in the function, and when that line has a site
// outside the function's code too (the function inlined elsewhere, a
// line of a header compiled into several): the line's count adds every
// copy's, which are not calls of the function.
func (r *report) lcovFirstLine(i int) int {
	if r.lineSites == nil {
		r.lineSites = make([][]lineSite, len(r.plan.Modules))
		for li := range r.plan.Lines {
			l := &r.plan.Lines[li]
			if l.Module < 0 || l.Module >= len(r.lineSites) {
				continue
			}
			for _, a := range l.Addrs {
				r.lineSites[l.Module] = append(r.lineSites[l.Module], lineSite{a, li})
			}
		}
		for _, sites := range r.lineSites {
			slices.SortStableFunc(sites, func(a, b lineSite) int { return cmp.Compare(a.addr, b.addr) })
		}
	}
	f := &r.plan.Funcs[i]
	if f.Module < 0 || f.Module >= len(r.lineSites) {
		return -1
	}
	lo, hi := f.Low, f.High
	if lo >= hi {
		lo, hi = f.Entry, f.Entry+1
	}
	sites := r.lineSites[f.Module]
	k, _ := slices.BinarySearchFunc(sites, lo, func(s lineSite, a uint64) int { return cmp.Compare(s.addr, a) })
	if k >= len(sites) || sites[k].addr >= hi {
		return -1
	}
	line := sites[k].line
	for _, a := range r.plan.Lines[line].Addrs {
		if a < lo || a >= hi {
			return -1
		}
	}
	return line
}

// lineSite is a line site's address and the index of its line.
type lineSite struct {
	addr uint64
	line int
}

// lcovTestName is a test name lcov accepts (letters, digits, _): the
// program's base name.
func lcovTestName(commandLine string) string {
	prog, _, _ := strings.Cut(commandLine, " ")
	name := []byte(filepath.Base(prog))
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			name[i] = '_'
		}
	}
	return string(name)
}

// writeCallgrind writes a callgrind profile (Valgrind's "Callgrind Format
// Specification"): the events are Calls (the hits) and, for timing and
// sampling, Time (nanoseconds, the function's own); each function's cost
// at its declaration line; with /AT, the calls from each caller, with
// their inclusive cost (callgrindCalls); for line profiles the event is
// Hits, each line's hits at the line, in the function that holds it (a
// line is not called).
func (r *report) writeCallgrind(w *bufio.Writer) {
	timed := r.hasTimes()
	events := "Calls"
	switch {
	case !r.plan.Method.IsFunction():
		events = "Hits"
	case timed:
		events += " Time"
	}
	fmt.Fprintf(w, "# callgrind format\nversion: 1\ncreator: sprof %s\n", r.version())
	if n := len(r.m.Runs); n > 0 {
		fmt.Fprintf(w, "cmd: %s\n", prf.Printable(r.m.Runs[n-1].CommandLine))
	}
	fmt.Fprintf(w, "positions: line\nevents: %s\n", events)
	cost := func(hits uint64, t int64) string {
		if timed {
			return fmt.Sprintf("%d %d", hits, t)
		}
		return fmt.Sprint(hits)
	}
	names := callgrindNames{}
	file := func(i int) string {
		if i < 0 {
			return "???"
		}
		if f := r.plan.Funcs[i].File; f != "" {
			return names.get("fl", f)
		}
		return "???" // (callgrind's unknown file: nothing to annotate)
	}
	module := func(mod int) string { return names.get("ob", r.moduleName(mod)) }
	line := func(i int) int {
		if i < 0 {
			return 0
		}
		return r.plan.Funcs[i].Line
	}
	name := func(i int) string {
		if i < 0 {
			return "(outside)"
		}
		return names.get("fn", r.exportName(i))
	}
	if !r.plan.Method.IsFunction() {
		byFunc := map[int][]int{}
		var order []int
		for i := range r.plan.Lines {
			fi := r.lineFunc(&r.plan.Lines[i])
			if byFunc[fi] == nil {
				order = append(order, fi)
			}
			byFunc[fi] = append(byFunc[fi], i)
		}
		var total uint64
		for _, fi := range order {
			l0 := &r.plan.Lines[byFunc[fi][0]]
			fmt.Fprintf(w, "\nob=%s\nfl=%s\nfn=%s\n", module(l0.Module), names.get("fl", r.lineFile(l0)), name(fi))
			for _, i := range byFunc[fi] {
				fmt.Fprintf(w, "%d %d\n", r.plan.Lines[i].Line, r.hits(i))
				total += r.hits(i)
			}
		}
		fmt.Fprintf(w, "\ntotals: %d\n", total)
		return
	}
	calls := r.callgrindCalls()
	var totalHits uint64
	var totalTime int64
	for i := range r.plan.Funcs {
		fmt.Fprintf(w, "\nob=%s\nfl=%s\nfn=%s\n%d %s\n", module(r.plan.Funcs[i].Module), file(i), name(i), line(i), cost(r.hits(i), r.funcTime(i)))
		totalHits += r.hits(i)
		totalTime += r.funcTime(i)
		for _, c := range calls[i] {
			fmt.Fprintf(w, "cob=%s\ncfl=%s\ncfn=%s\ncalls=%d %d\n%d %s\n", module(r.plan.Funcs[c.callee].Module), file(c.callee), name(c.callee),
				c.hits, line(c.callee), line(i), cost(c.hits, c.inclusive))
		}
	}
	fmt.Fprintf(w, "\ntotals: %s\n", cost(totalHits, totalTime))
}

// callgrindCall is the calls of one caller to one callee, with the
// inclusive cost callgrind gives a call: its calls, and its time with
// children.
type callgrindCall struct {
	callee    int
	hits      uint64
	inclusive int64
}

// callgrindCalls returns the calls made by each function, from the
// attribution stacks (callStacks): each chain's nearest caller calls its
// function, the calls of the same caller to the same callee added up, in
// the order of their first chain. callgrind_annotate --inclusive=yes (and
// KCachegrind) take a function's inclusive cost as the sum of the
// inclusive costs of the calls to it, so a call's time with children
// counts only where the callee is not on the chain already: a recursive
// call's time is inside its outermost call's, as it is in the listing's
// function+child time, and counting it again would put a recursive
// function above 100 %. Where /STACK cuts the chains shorter than a
// recursion, the outermost calls are not all known: when a callee's calls
// then add up to more than its time with children, their times are
// scaled down to it.
func (r *report) callgrindCalls() map[int][]callgrindCall {
	calls := map[int][]callgrindCall{}
	at := map[[2]int]int{}  // where a caller's calls to a callee are in its list
	into := map[int]int64{} // a callee's inclusive time, all calls
	for _, c := range r.callStacks() {
		n := len(c.funcs)
		if n < 2 {
			continue // from the stack base
		}
		caller, callee := c.funcs[n-2], c.funcs[n-1]
		inclusive := c.childTime
		if c.recursive() {
			inclusive = 0
		}
		into[callee] += inclusive
		k, ok := at[[2]int{caller, callee}]
		if !ok {
			at[[2]int{caller, callee}] = len(calls[caller])
			calls[caller] = append(calls[caller], callgrindCall{callee: callee, hits: c.hits, inclusive: inclusive})
			continue
		}
		calls[caller][k].hits += c.hits
		calls[caller][k].inclusive += inclusive
	}
	for _, list := range calls {
		for k := range list {
			c := &list[k]
			if all, most := into[c.callee], r.childTime(c.callee); all > most {
				c.inclusive = int64(float64(c.inclusive) * float64(most) / float64(all))
			}
		}
	}
	return calls
}

// version is the creator's version.
func (r *report) version() string {
	if r.o.Version != "" {
		return r.o.Version
	}
	return "dev"
}

// newPprof returns a profile of the runs and the modules (as mappings),
// without sample types, and the functions that make its functions
// (function i of the plan, made at its first use) and its locations (a
// line of a function in a module).
func (r *report) newPprof() (p *profile.Profile, function func(int) *profile.Function,
	location func(f *profile.Function, mod, line int) *profile.Location) {
	p = &profile.Profile{}
	if n := len(r.m.Runs); n > 0 {
		p.TimeNanos = r.m.Runs[0].Time * int64(time.Second)
		p.Comments = []string{r.m.Runs[n-1].CommandLine}
	}
	for mi, m := range r.plan.Modules {
		p.Mapping = append(p.Mapping, &profile.Mapping{ID: uint64(mi + 1), File: m.Path, BuildID: fmt.Sprintf("%x", []byte(m.BuildID))})
	}
	fn := make([]*profile.Function, len(r.plan.Funcs))
	function = func(i int) *profile.Function {
		if fn[i] == nil {
			f := &r.plan.Funcs[i]
			fn[i] = &profile.Function{ID: uint64(len(p.Function) + 1), Name: r.exportName(i), SystemName: f.Name,
				Filename: f.File, StartLine: int64(f.Line)}
			p.Function = append(p.Function, fn[i])
		}
		return fn[i]
	}
	location = func(f *profile.Function, mod, line int) *profile.Location {
		loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f, Line: int64(line)}}}
		if mod >= 0 && mod < len(p.Mapping) {
			loc.Mapping = p.Mapping[mod]
		}
		p.Location = append(p.Location, loc)
		return loc
	}
	return p, function, location
}

// writePprof writes a profile.proto (github.com/google/pprof/profile):
// the sample types are calls (count) and, for timing, time (nanoseconds,
// each function's own); with /AT a sample per distinct chain of calls
// (callStacks: the function and its callers, as deep as /STACK tells
// them), else one per function; for line profiles one per line, at the
// line, in the function that holds it. pprof counts a sample once in the
// cumulative figure of each function it holds, however often the
// function recurs in it: a recursive function's is its time with
// children, as the listing's. Function sampling profiles are CPU
// profiles (writeSampledPprof).
func (r *report) writePprof(w io.Writer) error {
	if r.plan.Method.IsSampling() {
		return r.writeSampledPprof(w)
	}
	p, function, location := r.newPprof()
	p.SampleType = []*profile.ValueType{{Type: "calls", Unit: "count"}}
	p.PeriodType = &profile.ValueType{Type: "calls", Unit: "count"}
	p.Period = 1
	timed := r.hasTimes()
	if timed {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: "time", Unit: "nanoseconds"})
	}
	values := func(hits uint64, t int64) []int64 {
		if timed {
			return []int64{int64(hits), t}
		}
		return []int64{int64(hits)}
	}
	if !r.plan.Method.IsFunction() {
		files := map[string]*profile.Function{}
		for i := range r.plan.Lines {
			l := &r.plan.Lines[i]
			var f *profile.Function
			if fi := r.lineFunc(l); fi >= 0 {
				f = function(fi)
			} else if f = files[r.lineFile(l)]; f == nil {
				f = &profile.Function{ID: uint64(len(p.Function) + 1), Name: r.lineFile(l), Filename: r.lineFile(l)}
				p.Function = append(p.Function, f)
				files[r.lineFile(l)] = f
			}
			p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{location(f, l.Module, l.Line)}, Value: values(r.hits(i), 0)})
		}
		return p.Write(w)
	}
	locs := make([]*profile.Location, len(r.plan.Funcs))
	loc := func(i int) *profile.Location {
		if locs[i] == nil {
			locs[i] = location(function(i), r.plan.Funcs[i].Module, r.plan.Funcs[i].Line)
		}
		return locs[i]
	}
	withStacks := make([]bool, len(r.plan.Funcs))
	for _, c := range r.callStacks() {
		withStacks[c.funcs[len(c.funcs)-1]] = true
		stack := make([]*profile.Location, 0, len(c.funcs))
		for k := len(c.funcs) - 1; k >= 0; k-- {
			stack = append(stack, loc(c.funcs[k]))
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: stack, Value: values(c.hits, c.time)})
	}
	for i := range r.plan.Funcs {
		if !withStacks[i] {
			p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc(i)}, Value: values(r.hits(i), r.funcTime(i))})
		}
	}
	return p.Write(w)
}

// writeSampledPprof writes a function sampling profile as a CPU profile,
// as runtime/pprof writes one: the sample types are samples (count) and
// cpu (nanoseconds), the period Interval nanoseconds of CPU time. Each
// sampled line is a sample at that line of its function (placeSamples),
// and the samples of a function on none of its lines one at its
// declaration's line. Samples are leaves, without stacks even with /AT:
// the samples are of the program counter alone, and the /AT stacks are
// the calls', their times estimated.
func (r *report) writeSampledPprof(w io.Writer) error {
	p, function, location := r.newPprof()
	interval := r.m.Stats.Sampling.Interval
	p.SampleType = []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}
	p.PeriodType = &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
	p.Period = interval
	for _, m := range p.Mapping {
		// Every location has its function and line: nothing to look up.
		m.HasFunctions, m.HasFilenames, m.HasLineNumbers = true, true, true
	}
	type key struct {
		fn   int
		file string
		line int
	}
	// elsewhere has the functions of lines in another file than their
	// function's (inlined code).
	elsewhere := map[key]*profile.Function{}
	samples := map[key]*profile.Sample{}
	for _, pl := range r.placeSamples() {
		f := &r.plan.Funcs[pl.fn]
		pf, line := function(pl.fn), f.Line
		if pl.line >= 0 {
			l := &r.plan.Lines[pl.line]
			line = l.Line
			if file := r.lineFile(l); file != f.File {
				k := key{pl.fn, file, 0}
				if elsewhere[k] == nil {
					elsewhere[k] = &profile.Function{ID: uint64(len(p.Function) + 1), Name: pf.Name,
						SystemName: pf.SystemName, Filename: file}
					p.Function = append(p.Function, elsewhere[k])
				}
				pf = elsewhere[k]
			}
		}
		k := key{pl.fn, pf.Filename, line}
		if s := samples[k]; s != nil {
			s.Value[0] += int64(pl.n)
			s.Value[1] += int64(pl.n) * interval
			continue
		}
		samples[k] = &profile.Sample{Location: []*profile.Location{location(pf, f.Module, line)},
			Value: []int64{int64(pl.n), int64(pl.n) * interval}}
		p.Sample = append(p.Sample, samples[k])
	}
	return p.Write(w)
}

// writeFolded writes folded stacks, one line each, as flame graph tools
// read them ("caller;callee value"): with /AT each distinct chain of calls
// (callStacks), outermost first, as deep as /STACK tells stacks apart,
// else each function alone; the value is the hits, or for timing and
// sampling the function's own time in nanoseconds. Line profiles give
// "module;file:line hits". Names are the displayed ones, [prf.Printable],
// with ';' replaced.
func (r *report) writeFolded(w *bufio.Writer) {
	semicolon := strings.NewReplacer(";", ":")
	clean := func(s string) string { return semicolon.Replace(prf.Printable(s)) }
	if !r.plan.Method.IsFunction() {
		for i := range r.plan.Lines {
			l := &r.plan.Lines[i]
			fmt.Fprintf(w, "%s;%s:%d %d\n", clean(r.moduleName(l.Module)), clean(r.lineFile(l)), l.Line, r.hits(i))
		}
		return
	}
	for _, st := range r.foldedStacks() {
		for k, f := range st.frames {
			if k > 0 {
				w.WriteByte(';')
			}
			w.WriteString(clean(r.exportName(f)))
		}
		fmt.Fprintf(w, " %d\n", st.value)
	}
}

// The JSON schema (docs/exports.md): names joined to their figures, not
// the data files' model.
type (
	jsonProfile struct {
		Schema    string         `json:"schema"`
		Profile   string         `json:"profile"`
		Runs      []jsonRun      `json:"runs"`
		CallDepth int            `json:"callDepth,omitempty"`
		TotalNs   int64          `json:"totalTimeNs,omitempty"`
		Sampling  *jsonSampling  `json:"sampling,omitempty"`
		Modules   []jsonModule   `json:"modules"`
		Functions []jsonFunction `json:"functions,omitempty"`
		Lines     []jsonLine     `json:"lines,omitempty"`
	}
	jsonSampling struct {
		IntervalNs   int64  `json:"intervalNs"`
		Sampler      string `json:"sampler"`
		Samples      uint64 `json:"samples"`
		Outside      uint64 `json:"outside"`
		Lost         uint64 `json:"lost"`
		KernelTimeNs int64  `json:"kernelTimeNs"`
	}
	jsonRun struct {
		Command    string    `json:"command"`
		Time       time.Time `json:"time"`
		Incomplete bool      `json:"incomplete,omitempty"`
		Reason     string    `json:"reason,omitempty"`
	}
	jsonModule struct {
		Name string `json:"name"`
		Path string `json:"path"`
	}
	jsonFunction struct {
		Module  string       `json:"module"`
		Name    string       `json:"name"`
		Symbol  string       `json:"symbol"`
		Source  string       `json:"source"`
		File    string       `json:"file,omitempty"`
		Line    int          `json:"line,omitempty"`
		Hits    uint64       `json:"hits"`
		TimeNs  *int64       `json:"timeNs,omitempty"`
		ChildNs *int64       `json:"timeWithChildrenNs,omitempty"`
		Samples *uint64      `json:"samples,omitempty"`
		Callers []jsonCaller `json:"callers,omitempty"`
	}
	jsonCaller struct {
		Stack  []string `json:"stack"`
		Hits   uint64   `json:"hits"`
		TimeNs *int64   `json:"timeNs,omitempty"`
	}
	jsonLine struct {
		Module  string  `json:"module"`
		File    string  `json:"file"`
		Line    int     `json:"line"`
		Hits    uint64  `json:"hits"`
		Samples *uint64 `json:"samples,omitempty"`
	}
)

// jsonSchema names the schema and its version.
const jsonSchema = "sprof-profile/1"

// writeJSON writes the profile as JSON of the documented schema.
func (r *report) writeJSON(w io.Writer) error {
	out := jsonProfile{Schema: jsonSchema, Profile: strings.ToLower(r.plan.Method.Words()), CallDepth: r.m.Stats.CallDepth}
	timed := r.hasTimes()
	if timed {
		out.TotalNs = r.m.Stats.TotalTime
	}
	sampled := r.plan.Method.IsSampling()
	if sampled {
		sm := &r.m.Stats.Sampling
		name, _ := sm.Sampler.MarshalText()
		out.Sampling = &jsonSampling{IntervalNs: sm.Interval, Sampler: string(name), Samples: r.insideSamples() + sm.Outside,
			Outside: sm.Outside, Lost: sm.Lost, KernelTimeNs: sm.KernelTime}
	}
	for _, run := range r.m.Runs {
		out.Runs = append(out.Runs, jsonRun{Command: run.CommandLine, Time: time.Unix(run.Time, 0).UTC(), Incomplete: run.Incomplete, Reason: run.Reason})
	}
	for _, m := range r.plan.Modules {
		out.Modules = append(out.Modules, jsonModule{Name: m.Name, Path: m.Path})
	}
	if r.plan.Method.IsFunction() {
		for i, f := range r.plan.Funcs {
			jf := jsonFunction{Module: r.moduleName(f.Module), Name: r.names[i], Symbol: f.Name, Source: f.Source,
				File: f.File, Line: f.Line, Hits: r.hits(i)}
			if timed {
				t, c := r.funcTime(i), r.childTime(i)
				jf.TimeNs, jf.ChildNs = &t, &c
			}
			if sampled {
				n := r.samples(i)
				jf.Samples = &n
			}
			for _, si := range at(r.stacks, i) {
				s := r.m.Stats.Stacks[si]
				var stack []string
				for _, c := range s.Callers {
					if c >= 0 && c < len(r.names) {
						stack = append(stack, r.names[c])
					}
				}
				jc := jsonCaller{Stack: stack, Hits: s.Hits}
				if timed {
					t := s.Time
					jc.TimeNs = &t
				}
				jf.Callers = append(jf.Callers, jc)
			}
			out.Functions = append(out.Functions, jf)
		}
	}
	if sampled {
		// The sampled lines: a sampling profile counts no line.
		for i := range r.plan.Lines {
			if n := r.lineSamples(i); n > 0 {
				l := &r.plan.Lines[i]
				out.Lines = append(out.Lines, jsonLine{Module: r.moduleName(l.Module), File: r.lineFile(l), Line: l.Line, Samples: &n})
			}
		}
	}
	if !r.plan.Method.IsFunction() {
		for i := range r.plan.Lines {
			l := &r.plan.Lines[i]
			out.Lines = append(out.Lines, jsonLine{Module: r.moduleName(l.Module), File: r.lineFile(l), Line: l.Line, Hits: r.hits(i)})
		}
	}
	slices.SortStableFunc(out.Lines, func(a, b jsonLine) int {
		return cmp.Or(cmp.Compare(a.Module, b.Module), cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
