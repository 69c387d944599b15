package plist

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// report is one Generate call: the merged profile seen through the options.
// Every index read from the profile is checked, so that a profile whose
// slices disagree in length prints zeros instead of panicking. Its
// methods are what the listings and the formats share; each listing and
// format is a type over it holding its own (funcListing, lineListing,
// tabRecords, and an ...Export type per format).
type report struct {
	m    *datafile.Merged
	plan *datafile.Plan
	o    Options
	// sort is the sort switch in effect (the type's default when o.Sort
	// does not fit).
	sort Sort
	// names are the displayed names of Plan.Funcs.
	names []string
	// files are the displayed names of the modules' files (fileNames).
	files [][]string
	// funcs and lines have, per module, the indices of its functions and
	// lines in plan order.
	funcs [][]int
	lines [][]int
	// stacks has, per function, the indices of its attribution stacks in
	// Stats.Stacks, highest hits (or time) first.
	stacks [][]int
	// shared counts the functions of each displayed name (exportName).
	shared map[string]int
	// stackIndex finds a stack by its function and key (callerStack),
	// built at the first use.
	stackIndex map[stackID]int
	// visited and chain mark the stacks a chain of stackCallers passed.
	visited []int
	chain   int
	// sources has the paths where source files were found (findSource),
	// "" for those found nowhere.
	sources map[sourceKey]string
	// lineSites has, per module, the sites of the plan's lines by address
	// (lcovFirstLine), built at the first use.
	lineSites [][]lineSite
	// ranges finds the function whose code holds an address (funcAt,
	// lineFunc), its index built at the first use.
	ranges *funcRanges
}

func newReport(m *datafile.Merged, o Options) *report {
	m = withoutUnprobed(m)
	r := &report{m: m, plan: &m.Plan, o: o}
	demangleFn := o.Demangle
	if demangleFn == nil {
		demangleFn = defaultDemangle
	}
	r.names = make([]string, len(r.plan.Funcs))
	r.funcs = make([][]int, len(r.plan.Modules))
	for i, f := range r.plan.Funcs {
		r.names[i] = f.Name
		if !o.Mangled {
			r.names[i] = demangleFn(f.Name)
		}
		if f.Module >= 0 && f.Module < len(r.funcs) {
			r.funcs[f.Module] = append(r.funcs[f.Module], i)
		}
	}
	r.lines = make([][]int, len(r.plan.Modules))
	for i, l := range r.plan.Lines {
		if l.Module >= 0 && l.Module < len(r.lines) {
			r.lines[l.Module] = append(r.lines[l.Module], i)
		}
	}
	r.stacks = r.stacksByFunc()
	r.files = fileNames(r.plan.Modules)
	r.ranges = &funcRanges{plan: r.plan, funcs: r.funcs}
	return r
}

// fileName is the displayed name of file of module mod (fileNames), or
// "?".
func (r *report) fileName(mod, file int) string {
	if mod < 0 || mod >= len(r.files) || file < 0 || file >= len(r.files[mod]) {
		return "?"
	}
	return r.files[mod][file]
}

// write warns, then writes the report selected by the options.
func (r *report) write(w io.Writer) error {
	method := r.plan.Method
	if r.o.Format == FormatTab {
		r.o.Tab = true
	}
	switch {
	case !method.Valid():
		return fmt.Errorf("write report: unknown profile method %d", uint16(method))
	case r.o.Format == FormatGmon && !r.o.Tab && !method.IsSampling():
		return fmt.Errorf("write report: %w, not %s ones", errNotSampling, strings.ToLower(method.Words()))
	}
	if method.IsTiming() && len(r.m.Runs) == 0 {
		// The original computed times with the clock frequency of the first
		// run, which a .pbt that never ran does not have.
		r.warn(prf.ClockZero())
	}
	var err error
	switch {
	case r.o.Tab:
		err = tabRecords{r}.writeTab(w)
	case r.o.Format != FormatText:
		err = r.writeExport(w)
	default:
		err = r.writeListing(w)
	}
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// writeListing writes the listing of original.md §5.
func (r *report) writeListing(w io.Writer) error {
	var ok bool
	r.sort, ok = resolveSort(r.plan.Method, r.o.Sort)
	if !ok {
		r.warn(prf.SortMismatch(r.o.Path))
	}
	if r.plan.Method.IsSampling() || (!r.plan.Method.IsFunction() && r.sort != SortCount) {
		// (Function sampling and line profiles but /SC list the sources.)
		lineListing{r}.warnSourcesLeftOut()
	}
	p := newPrinter(w, r.o, r.pageHeader())
	if r.plan.Method.IsFunction() {
		funcListing{r}.writeFunctions(p)
	} else {
		lineListing{r}.writeLines(p, !ok)
	}
	return p.flush()
}

func (r *report) warn(d *prf.Diagnostic) {
	if r.o.Warn != nil {
		r.o.Warn(d)
	}
}

// pageHeader is the four lines that start every page, as the original's,
// and after its date a line for each group of functions the default
// selection left out (Plan.LeftOut), which says how to profile them.
func (r *report) pageHeader() []string {
	h := []string{
		fmt.Sprintf("Profile: %s, sorted by %s", r.plan.Method.Words(), sortWords(r.sort)),
		"Date:    " + ctime(r.o.Now),
	}
	for _, l := range r.plan.LeftOut {
		h = append(h, fmt.Sprintf("Left out: %s functions of %s, by profiler.ini (prep %s... profiles them)",
			grouped(l.Funcs), l.What, l.Include))
	}
	return append(h, "", "")
}

// grouped writes n with its thousands apart: "1,817".
func grouped(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// resolveSort returns the sort in effect for a profile type, and false when
// s does not fit the type (original.md §5.4).
func resolveSort(m datafile.Method, s Sort) (Sort, bool) {
	var valid []Sort
	switch m {
	case datafile.FuncTiming, datafile.FuncSampling:
		// Sampling estimates time per function: it sorts as timing.
		valid = []Sort{SortTime, SortChildTime, SortCount, SortName, SortNameSummary}
	case datafile.FuncCounting:
		valid = []Sort{SortCount, SortName, SortNameSummary}
	case datafile.FuncCoverage:
		valid = []Sort{SortName, SortCount, SortNameSummary}
	case datafile.LineCounting:
		valid = []Sort{SortLine, SortCount, SortLineSummary}
	case datafile.LineCoverage:
		valid = []Sort{SortLineSummary, SortLine, SortCount}
	default:
		return SortDefault, s == SortDefault
	}
	if s == SortDefault {
		return valid[0], true
	}
	if slices.Contains(valid, s) {
		return s, true
	}
	return valid[0], false
}

// sortWords ends the page header's first line: "sorted by <words>".
func sortWords(s Sort) string {
	switch s {
	case SortCount:
		return "count"
	case SortName, SortNameSummary:
		return "name"
	case SortTime:
		return "time"
	case SortChildTime:
		return "Func+Child time"
	case SortLine, SortLineSummary:
		return "line"
	}
	return "default"
}

// hits returns item i's hit count.
func (r *report) hits(i int) uint64 { return at(r.m.Stats.Hits, i) }

// funcTime and childTime return function i's times in nanoseconds; zero
// for profile types that do not measure time.
func (r *report) funcTime(i int) int64 {
	if !r.hasTimes() {
		return 0
	}
	return at(r.m.Stats.FuncTime, i)
}

func (r *report) childTime(i int) int64 {
	if !r.hasTimes() {
		return 0
	}
	return at(r.m.Stats.ChildTime, i)
}

// hasTimes reports whether the profile type carries times: measured
// (timing) or estimated from samples (sampling).
func (r *report) hasTimes() bool { return r.plan.Method.HasTimes() }

// at returns s[i], or the zero value when i is out of range.
func at[T any](s []T, i int) T {
	var zero T
	if i < 0 || i >= len(s) {
		return zero
	}
	return s[i]
}

// totals returns the hits of the items and how many of them were hit.
func (r *report) totals(items []int) (hits uint64, hit int) {
	for _, i := range items {
		h := r.hits(i)
		hits += h
		if h > 0 {
			hit++
		}
	}
	return hits, hit
}

// allItems returns the indices of every counted item, functions or lines.
func (r *report) allItems() []int {
	n := r.plan.NumItems()
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	return items
}

// startFunction returns the /SF name when the start function was found.
func (r *report) startFunction() (string, bool) {
	p := r.plan
	ok := p.StartFunc != "" && p.StartIndex >= 0 && p.StartIndex < len(p.Funcs)
	return p.StartFunc, ok
}

// sortFuncs orders function indices for a listing or the tab file: by name
// in byte order of the displayed name, by hits or times highest first
// (ties by name), keeping plan order among equals.
func (r *report) sortFuncs(idx []int, s Sort) []int {
	idx = slices.Clone(idx)
	byName := func(a, b int) int { return cmp.Compare(r.names[a], r.names[b]) }
	var less func(a, b int) int
	switch s {
	case SortCount:
		less = func(a, b int) int {
			return cmp.Or(cmp.Compare(r.hits(b), r.hits(a)), byName(a, b))
		}
	case SortTime:
		less = func(a, b int) int {
			return cmp.Or(cmp.Compare(r.funcTime(b), r.funcTime(a)), byName(a, b))
		}
	case SortChildTime:
		less = func(a, b int) int {
			return cmp.Or(cmp.Compare(r.childTime(b), r.childTime(a)),
				cmp.Compare(r.funcTime(b), r.funcTime(a)), byName(a, b))
		}
	default:
		less = byName
	}
	slices.SortStableFunc(idx, less)
	return idx
}

// linesInOrder returns the line indices sorted by file, then line number.
func (r *report) linesInOrder(idx []int) []int {
	idx = slices.Clone(idx)
	lines := r.plan.Lines
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(lines[a].File, lines[b].File), cmp.Compare(lines[a].Line, lines[b].Line))
	})
	return idx
}

// insideTime is the time inside profiled functions, the denominator of
// every time percentage: total time minus the time outside.
func (r *report) insideTime() int64 { return timeInside(r.m) }

// timeInside is m's time inside profiled functions.
func timeInside(m *datafile.Merged) int64 { return m.Stats.TotalTime - m.Stats.OutsideTime }

// shareBase is the denominator of the time tables' percentages: the time
// inside profiled functions, or where the samples' stacks were unwound
// the time of all the samples (a function's time with children holds the
// samples in code it called that no profiled function holds, the C
// library's: the shares are of all the samples, as perf's are).
func shareBase(m *datafile.Merged) int64 {
	if m.SampledStacks() {
		return m.Stats.TotalTime
	}
	return timeInside(m)
}

// listed applies /C: a row is kept when its hits reach MinCount.
func (r *report) listed(hits uint64) bool {
	return r.o.MinCount <= 0 || hits >= uint64(r.o.MinCount)
}
