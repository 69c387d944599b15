package plist

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// tabBanner is record 0. Tools that read the tab file (the original's
// PROFILER.XLM among them) expect this exact text, so the port keeps it.
const tabBanner = "0\t168\tMicrosoft 32-bit PLIST Version 1.00"

// field is a text field of a record: a name or command line with its
// tabs, line ends and other control characters escaped
// ([prf.Printable]), so that it stays one field of one record.
func field(s string) string { return prf.Printable(s) }

// stackBase names the bottom of a recorded caller chain in record 10.
const stackBase = "<stack base>"

// tabRecords writes the tab-delimited records (/T).
type tabRecords struct{ *report }

// writeTab writes the tab-delimited records of original.md §6. Sort
// switches and /C do not apply; /L and /F do.
func (r tabRecords) writeTab(w io.Writer) error {
	bw := bufio.NewWriter(w)
	m, st := r.plan.Method, &r.m.Stats
	fmt.Fprintln(bw, tabBanner)
	key := "line"
	if m.IsFunction() {
		key = "name"
	}
	fmt.Fprintf(bw, "1\t%d\tProfile: %s, sorted by %s\n", uint16(m), m.Words(), key)
	if m.IsFunction() {
		var total, outside int64
		if r.hasTimes() {
			total, outside = st.TotalTime, st.OutsideTime
		}
		fmt.Fprintf(bw, "2\t%s\t%s\t%d\n", fixedWidth(millis(total), 5, 3),
			fixedWidth(millis(outside), 5, 3), st.CallDepth)
	}
	hits, hit := r.totals(r.allItems())
	fmt.Fprintf(bw, "3\t%d\t%d\t%d\n", hits, r.plan.NumItems(), hit)
	for _, run := range r.m.Runs {
		fmt.Fprintf(bw, "4\t%s\t%s\n", runDate(run.Time, r.o.Now), field(run.CommandLine))
	}
	if name, ok := r.startFunction(); ok {
		fmt.Fprintf(bw, "5\t%s\n", field(name))
	}
	if m.IsFunction() {
		r.functionRecords(bw)
	} else {
		r.lineRecords(bw)
	}
	return bw.Flush()
}

// moduleField is the module field of records 6 and 7: the file name, or
// with /F the path PREP read.
func (r tabRecords) moduleField(mod int) string {
	md := &r.plan.Modules[mod]
	if r.o.FullPaths && md.Path != "" {
		return md.Path
	}
	return md.Name
}

// functionRecords writes record 6 for every function, modules in plan
// order and functions by name, each followed by its attribution group
// when the profile has one.
func (r tabRecords) functionRecords(w io.Writer) {
	for mod := range r.plan.Modules {
		for _, i := range r.sortFuncs(r.funcs[mod], SortName) {
			fmt.Fprintf(w, "6\t%s\t%s\t%d\t%s\t%s\t%s\n", field(r.moduleField(mod)), field(r.plan.Funcs[i].Source),
				r.hits(i), fixedWidth(millis(r.funcTime(i)), 5, 3),
				fixedWidth(millis(r.childTime(i)), 5, 3), field(r.names[i]))
			if r.m.HasStacks() {
				r.attributionRecords(w, r.stacks[i])
			}
		}
	}
}

// attributionRecords writes a function's group (§6.4): record 8 with the
// number of stacks, then per stack record 9 and its caller names in
// records 10, outermost first. Each group follows its own function's
// record 6: the original's misplacement of the groups is not reproduced.
func (r tabRecords) attributionRecords(w io.Writer, stacks []int) {
	fmt.Fprintf(w, "8\t%d\n", len(stacks))
	for _, k := range stacks {
		s := &r.m.Stats.Stacks[k]
		var t, c int64
		if r.hasTimes() {
			t, c = s.Time, s.ChildTime
		}
		fmt.Fprintf(w, "9\t%d\t%d\t%s\t%s\n", len(s.Callers), s.Hits,
			fixedWidth(millis(t), 5, 3), fixedWidth(millis(c), 5, 3))
		for _, caller := range s.Callers {
			fmt.Fprintf(w, "10\t%s\n", field(r.callerName(caller)))
		}
	}
}

// callerName is a caller's name in record 10: -1 is the stack base.
func (r tabRecords) callerName(i int) string {
	switch {
	case i < 0:
		return stackBase
	case i >= len(r.names):
		return "<unknown>"
	}
	return r.names[i]
}

// lineRecords writes record 7 for every profiled line: modules in plan
// order, then source files in the module's file order, then line numbers.
func (r tabRecords) lineRecords(w io.Writer) {
	lines := r.plan.Lines
	idx := r.allItems()
	slices.SortStableFunc(idx, func(a, b int) int {
		la, lb := &lines[a], &lines[b]
		return cmp.Or(cmp.Compare(la.Module, lb.Module), cmp.Compare(la.File, lb.File),
			cmp.Compare(la.Line, lb.Line))
	})
	for _, i := range idx {
		l := &lines[i]
		if l.Module < 0 || l.Module >= len(r.plan.Modules) {
			continue
		}
		fmt.Fprintf(w, "7\t%s\t%s\t%d\t%d\n", field(r.moduleField(l.Module)), field(r.lineSource(l)), l.Line, r.hits(i))
	}
}

// lineSource is the source field of record 7: the file's name
// (fileNames: its base name where that is unique), or with /F the path
// PREP recorded.
func (r tabRecords) lineSource(l *datafile.Line) string {
	if r.o.FullPaths {
		return at(r.plan.Modules[l.Module].Files, l.File)
	}
	return r.fileName(l.Module, l.File)
}
