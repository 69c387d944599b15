package plist

import (
	"bufio"
	"fmt"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// The callgrind profile (FormatCallgrind), for callgrind_annotate and
// KCachegrind; the names it writes are in callgrind_names.go.

// callgrindExport writes the callgrind profile.
type callgrindExport struct{ *report }

// writeCallgrind writes a callgrind profile (Valgrind's "Callgrind Format
// Specification"): the events are Calls (the hits) and, for timing and
// sampling, Time (nanoseconds, the function's own); each function's cost
// at its declaration line; with /AT, the calls from each caller, with
// their inclusive cost (callgrindCalls); for line profiles the event is
// Hits, each line's hits at the line, in the function that holds it (a
// line is not called).
func (r callgrindExport) writeCallgrind(w *bufio.Writer) {
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
func (r callgrindExport) callgrindCalls() map[int][]callgrindCall {
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
