package plist

import (
	"fmt"

	"github.com/sourceprofiler/sprof/datafile"
)

// The column headings of the function tables (original.md §5.6.2-§5.6.4).
var (
	countingHeading = []string{
		"   Hit",
		"  Count    %   Function",
		"-----------------------",
	}
	timingHeading = []string{
		"        Func          Func+Child           Hit",
		"        Time   %         Time      %      Count  Function",
		"---------------------------------------------------------",
	}
	coverageHeading = []string{
		"Covered Function",
		"----------------",
	}
)

// funcListing writes the listing of a function profile (original.md §5.6): its
// statistics, function tables and attribution listings.
type funcListing struct{ *report }

// writeFunctions writes the listing of a function profile: the program
// statistics, then per module its statistics and its table, and for
// function sampling the source listings of its sampled lines.
func (r funcListing) writeFunctions(p *printer) {
	heading := r.tableHeading()
	var repeat []string
	if !r.callerListing() {
		// PLIST repeats a table's heading on every page, even after a
		// break inside the statistics; caller listings repeat nothing.
		repeat = heading
	}
	p.heading = repeat
	r.programStatistics(p)
	for mod := range r.plan.Modules {
		p.blank()
		r.moduleStatistics(p, mod)
		p.blank()
		r.functionTable(p, mod, heading)
		if r.plan.Method.IsSampling() {
			p.heading = nil // source listings repeat nothing
			r.kernelTable(p, mod)
			r.sampledSources(p, mod)
			p.heading = repeat
		}
	}
}

// callerListing reports whether the modules' tables are replaced by the
// caller listings of counting (§5.7.1; timing's is a table, with a heading
// repeated on every page like the others).
func (r funcListing) callerListing() bool {
	return r.plan.Attribution && r.plan.Method == datafile.FuncCounting && r.sort != SortNameSummary
}

// tableHeading is the heading of the module tables.
func (r funcListing) tableHeading() []string {
	m := r.plan.Method
	switch {
	case r.m.HasStacks() && m.HasTimes():
		return r.timingCallersHeading() // /SNS keeps it, with coverage rows
	case r.plan.Attribution:
		return callerDataHeading
	case m == datafile.FuncCounting:
		return countingHeading // /SNS keeps it, with coverage rows
	case m.HasTimes() && r.sort != SortNameSummary:
		return timingHeading
	}
	return coverageHeading
}

// programStatistics writes the Program Statistics block (§5.6.1).
func (r funcListing) programStatistics(p *printer) {
	m := r.plan.Method
	st := &r.m.Stats
	p.title("Program Statistics")
	r.runLines(p)
	if name, ok := r.startFunction(); ok {
		p.text("    Start function: " + name)
	}
	if m.HasTimes() {
		p.text(fmt.Sprintf("    Total time: %s millisecond", fixed(millis(st.TotalTime), 3)))
		p.text(fmt.Sprintf("    Time outside of functions: %s millisecond", fixed(millis(st.OutsideTime), 3)))
	}
	if m.IsSampling() {
		r.samplingLines(p)
	}
	hits, hit := r.totals(r.allItems())
	p.text(fmt.Sprintf("    Call depth: %d", st.CallDepth))
	p.text(fmt.Sprintf("    Total functions: %d", len(r.plan.Funcs)))
	switch {
	case r.plan.Uncounted:
		// (Its hit counts are 0: nothing counted them.)
		p.text(uncountedLine)
	case m != datafile.FuncCoverage:
		p.text(fmt.Sprintf("    Total hits: %d", hits))
	}
	if !r.plan.Uncounted {
		p.text(fmt.Sprintf("    Function coverage: %s%%", fixed(percent(float64(hit), float64(len(r.plan.Funcs))), 1)))
	}
	if m.IsTiming() {
		r.overheadLines(p)
		if u := st.CostUncertainty; u > 0 {
			p.text(fmt.Sprintf("    Overhead uncertain by %d ns a call:%s marks a function whose own time a call is less", u, uncertainMark))
		}
		switch {
		case r.o.Time == TimeCPU:
			p.text(cpuLine)
		case r.mostlyWaited():
			p.text(waitedLine(st))
		}
	}
}

// mostlyWaited reports whether the threads of a function timing profile
// spent less than half its total time on a CPU (datafile.Stats.CPUTime;
// 0: not measured): its times, elapsed, are mostly waits (docs/linux.md,
// "Timing").
func (r *report) mostlyWaited() bool {
	st := &r.m.Stats
	return st.CPUTime > 0 && st.CPUTime < st.TotalTime-st.CPUTime
}

// runLines writes one "Command line at" line per merged run. A run that
// did not end normally (the Linux port merges those) gets a second line
// saying why, a line the original never printed.
func (r funcListing) runLines(p *printer) {
	for _, run := range r.m.Runs {
		p.text(fmt.Sprintf("    Command line at %s: %s", runDate(run.Time, r.o.Now), run.CommandLine))
		if run.Incomplete {
			reason := run.Reason
			if reason == "" {
				reason = "reason unknown"
			}
			p.text("    Incomplete run: " + reason)
		}
	}
}

// overheadLines writes the calibration figures of a timing profile, in
// nanoseconds per event (docs/design/linux.md, "Timing"): the last run's measured
// overhead, the /CB value when given, and the average over the runs
// (integer division, as the original's %ld figures).
func (r funcListing) overheadLines(p *printer) {
	var last, sum int64
	for _, v := range r.m.Overheads {
		last = v
		sum += v
	}
	var avg int64
	if n := int64(len(r.m.Overheads)); n > 0 {
		avg = sum / n
	}
	p.text(fmt.Sprintf("    Overhead Calculated %d", last))
	if r.plan.Calibration >= 0 {
		p.text(fmt.Sprintf("    Overhead Used %d", r.plan.Calibration))
	}
	p.text(fmt.Sprintf("    Overhead Average %d", avg))
}

// modulesTime is the denominator of a module's share of the time: the
// time inside profiled functions, which the modules' function times add
// up to, or their sum where it is more (a run of threads side by side
// profiled before the total time added up their lives, when it was the
// run's elapsed time: docs/linux.md, "Timing").
func (r funcListing) modulesTime() int64 {
	var sum int64
	for _, funcs := range r.funcs {
		for _, i := range funcs {
			sum += r.funcTime(i)
		}
	}
	return max(sum, r.insideTime())
}

// moduleStatistics writes a module's statistics block (§5.6.1).
func (r funcListing) moduleStatistics(p *printer, mod int) {
	m := r.plan.Method
	funcs := r.funcs[mod]
	p.title("Module Statistics for " + r.plan.Modules[mod].Name)
	if m.HasTimes() {
		var t int64
		for _, i := range funcs {
			t += r.funcTime(i)
		}
		p.text(fmt.Sprintf("    Time in module: %s millisecond", fixed(millis(t), 3)))
		p.text(fmt.Sprintf("    Percent of time in module: %s%%",
			fixed(percent(float64(t), float64(r.modulesTime())), 1)))
	}
	hits, hit := r.totals(funcs)
	p.text(fmt.Sprintf("    Functions in module: %d", len(funcs)))
	if r.plan.Uncounted {
		return
	}
	if m != datafile.FuncCoverage {
		p.text(fmt.Sprintf("    Hits in module: %d", hits))
	}
	p.text(fmt.Sprintf("    Module function coverage: %s%%", fixed(percent(float64(hit), float64(len(funcs))), 1)))
}

// functionTable writes a module's table: the counting or timing table
// filtered by /C, the caller listing, or the coverage list of every
// function.
func (r funcListing) functionTable(p *printer, mod int, heading []string) {
	printHeading(p, heading)
	m := r.plan.Method
	funcs := r.sortFuncs(r.funcs[mod], r.sort)
	switch {
	case r.sort == SortNameSummary:
		// Only timing (and sampling) summaries name the source (§5.6.5).
		r.coverageRows(p, funcs, m.HasTimes())
	case r.callerListing():
		r.attributionListing(p, funcs)
	case m == datafile.FuncCounting:
		r.countingRows(p, funcs)
	case m.HasTimes() && r.m.HasStacks():
		r.timingCallerListing(p, funcs)
	case m.HasTimes():
		r.timingRows(p, funcs)
	default:
		r.coverageRows(p, funcs, true)
	}
}

// source returns the " (source)" that follows a function's name. Module
// and source names are printed as recorded: the original lower-cased them
// (Windows file names ignore case), but Linux file names are case-sensitive,
// so the port keeps their case.
func (r funcListing) source(i int) string {
	return " (" + r.plan.Funcs[i].Source + ")"
}

// countingRows writes "%8d %5.1f %s (%s)": hits and their share of the
// program's hits.
func (r funcListing) countingRows(p *printer, funcs []int) {
	total, _ := r.totals(r.allItems())
	for _, i := range funcs {
		h := r.hits(i)
		if !r.listed(h) {
			continue
		}
		p.text(fmt.Sprintf("%8d %s %s%s", h,
			fixedWidth(percent(float64(h), float64(total)), 5, 1), r.names[i], r.source(i)))
	}
}

// keptBy is the figure /C keeps function i's row by: its hits, or in a
// sampling run that counted no call its samples, those with it on the
// stack where the stacks were sampled. Of those a function never called
// is kept by too: it ran inlined in others' code (datafile.Plan.Inlined),
// or its entry could not be planted.
func (r funcListing) keptBy(i int) uint64 {
	if h := r.hits(i); !r.plan.Uncounted && (h > 0 || !r.m.SampledStacks()) {
		return h
	}
	if iv := r.m.Stats.Sampling.Interval; r.m.SampledStacks() && iv > 0 {
		return uint64(r.childTime(i) / iv)
	}
	return r.samples(i)
}

// timingRows writes "%12.3f %5.1f %12.3f %5.1f %8d %s (%s)": function time,
// function+child time, both with their share of the time inside profiled
// functions, and hits; then " ~" where the function time is not measured
// exactly (uncertain). Of a sampling run that counted no call, /C keeps
// a function by its samples (keptBy).
func (r funcListing) timingRows(p *printer, funcs []int) {
	inside := float64(r.insideTime())
	for _, i := range funcs {
		h := r.hits(i)
		if !r.listed(r.keptBy(i)) {
			continue
		}
		ft, ct := r.funcTime(i), r.childTime(i)
		mark := ""
		if r.uncertain(i) {
			mark = uncertainMark
		}
		p.text(fmt.Sprintf("%s %s %s %s %8d %s%s%s",
			fixedWidth(millis(ft), 12, 3), fixedWidth(percent(float64(ft), inside), 5, 1),
			fixedWidth(millis(ct), 12, 3), fixedWidth(percent(float64(ct), inside), 5, 1),
			h, r.names[i], r.source(i), mark))
	}
}

// uncertainMark follows a function whose time is not measured exactly.
const uncertainMark = " ~"

// uncertain reports whether function i's own time per call is below the
// uncertainty of the cost of PROFILE's code taken out of each call
// (datafile.Stats.CostUncertainty): its time is mostly what was taken
// out, and is not measured exactly (docs/linux.md, "Timing").
func (r *report) uncertain(i int) bool {
	u, h := r.m.Stats.CostUncertainty, r.hits(i)
	return u > 0 && h > 0 && float64(r.funcTime(i)) < float64(u)*float64(h)
}

// coverageRows writes "    %c    %s (%s)" for every function, /C
// notwithstanding: '*' when it was hit, '.' when not.
func (r funcListing) coverageRows(p *printer, funcs []int, withSource bool) {
	for _, i := range funcs {
		mark := '.'
		if r.hits(i) > 0 {
			mark = '*'
		}
		s := fmt.Sprintf("    %c    %s", mark, r.names[i])
		if withSource {
			s += r.source(i)
		}
		p.text(s)
	}
}
