package plist

import (
	"cmp"
	"encoding/json"
	"html/template"
	"maps"
	"slices"
	"strconv"
)

// The page's callers and callees ("Callers and callees"): for each
// function of the recorded stacks (/AT, or function sampling's sampled
// stacks), the functions that called it and those it called, with the
// calls and the time with children of each, and their shares: who calls
// this, and what it costs. The page holds the calls between functions
// as data (a few bytes a pair: 10,000 functions' views written out would
// treble the page) and its script draws a function's view where the
// address names it (#fn-N): a click on a name in the table, on a box of
// the flame graph or in another view goes there, and the browser's Back
// comes back.

// htmlCallData is the data of the views: each function's name by its
// index, whether the profile has times, and each pair of caller and
// callee with their calls and those calls' time with children (Edges:
// [caller, callee, calls, nanoseconds], caller -1 for the stacks'
// outermost, "no profiled caller").
type htmlCallData struct {
	Timed bool              `json:"timed"`
	Names map[string]string `json:"names"`
	Edges [][4]int64        `json:"edges"`
}

// callEdge is what a caller's calls of a callee add up to in the
// stacks: calls, and their time with children.
type callEdge struct {
	calls uint64
	time  int64
}

// fnAnchor is the address of function i's view.
func fnAnchor(i int) string { return "fn-" + strconv.Itoa(i) }

// htmlCalls returns the data of the views of the functions of the
// recorded stacks (nil for none) and those functions. A stack's function
// was called by the one before it (its nearest profiled caller), hits
// times, taking its time with children; a stack of one function had no
// profiled caller. Recursion counts each level's calls.
func (r htmlExport) htmlCalls() (template.JS, map[int]bool) {
	stacks := r.callStacks()
	if len(stacks) == 0 {
		return "", nil
	}
	type pair struct{ caller, callee int }
	edges := map[pair]*callEdge{}
	fns := map[int]bool{}
	for _, c := range stacks {
		n := len(c.funcs)
		p := pair{-1, c.funcs[n-1]}
		if n > 1 {
			p.caller = c.funcs[n-2]
			fns[p.caller] = true
		}
		fns[p.callee] = true
		e := edges[p]
		if e == nil {
			e = &callEdge{}
			edges[p] = e
		}
		e.calls += c.hits
		e.time += c.childTime
	}
	d := htmlCallData{Timed: r.hasTimes(), Names: map[string]string{}}
	for f := range fns {
		d.Names[strconv.Itoa(f)] = r.names[f]
	}
	for _, p := range slices.SortedFunc(maps.Keys(edges), func(a, b pair) int {
		return cmp.Or(cmp.Compare(a.callee, b.callee), cmp.Compare(a.caller, b.caller))
	}) {
		e := edges[p]
		d.Edges = append(d.Edges, [4]int64{int64(p.caller), int64(p.callee), int64(e.calls), e.time})
	}
	// (json escapes <, > and & in strings: the data cannot end its
	// script element.)
	b, err := json.Marshal(d)
	if err != nil {
		return "", nil
	}
	return template.JS(b), fns
}
