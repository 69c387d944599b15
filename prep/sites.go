package prep

import (
	"cmp"
	"slices"

	"github.com/sourceprofiler/sprof/dwarf"
	"github.com/sourceprofiler/sprof/instr"
)

// The sites of line counting (docs/linux.md, "Debugging information").
// A line's count is how often its first instruction ran, as the
// original's breakpoint at each line's start counted it. With
// optimisation a line has several copies in one function: each inlined
// call of the function it belongs to (Lua's setpause, inlined four times
// into one caller), and code the compiler duplicated or split, whose
// lowest address may be on a path the run did not take. So a line has a
// site in each of its copies (the rows of one inlined call, or of the
// function's own code: copies.go), at every statement row of the copy
// that control can reach from where the function starts, or from code no
// direct jump leads to (a jump table's cases), without passing another
// row of the copy: wherever the copy can be entered, and no other row
// (flow.go). A for header's initialisation is such a row; its test and
// increment, reached only through it, are not, so the header counts its
// initialisation, as the original's did. A line that ran passed one of
// its sites. Line coverage has every row, but the location views that end
// a block (linePlaces).

// decoded is an instruction of a function's code at its address.
type decoded struct {
	addr uint64
	inst instr.Inst
}

// decodeRange decodes the code of a function's range from its start and
// returns out with its instructions appended; a decoding error ends
// them, and is returned.
func decodeRange(m *openModule, r dwarf.Range, out []decoded) ([]decoded, error) {
	code, err := m.file.Code(r.Low, int(r.High-r.Low))
	if err != nil {
		return out, err
	}
	decode := instr.BareDecoder(m.arch)
	for off := 0; off < len(code); {
		pc := r.Low + uint64(off)
		in, err := decode(code[off:], pc)
		if err != nil {
			return out, err
		}
		if in.Len <= 0 || in.Len > len(code)-off {
			// (Decode never does this: Boundaries guards it alike.)
			_, err := instr.Boundaries(m.arch, code[off:], pc)
			return out, err
		}
		out = append(out, decoded{pc, in})
		off += in.Len
	}
	return out, nil
}

// countingSites returns the statement rows of fn that are sites of line
// counting, rows being fn's rows (every row on an instruction boundary,
// statement row or not, sorted by address, those of one address in table
// order), code being fn's instructions (sorted by address) and calls the
// module's inlined calls: the places where a line begins (linePlaces)
// that are first in their copies (firstRows).
//
// In a Go function that opens with a stack check, the rows of the check
// are moved to the entry site after it and the rows of the block that
// calls morestack are dropped, so that a call whose stack grows, and which
// starts again, counts its first line once (as its entry does: entrySite).
func countingSites(m *openModule, fn *dwarf.Func, code []decoded, rows []dwarf.LineRow, calls *inlineIndex) []dwarf.LineRow {
	rows, view := statements(rows)
	rows, view = afterStackCheck(m, fn, rows, view)
	g := newFlowGraph(code, fn.Entry)
	places, pview, copies := g.linePlaces(rows, view, calls.copies(rows, view, fn.Ranges))
	first := g.firstRows(places, pview, copies)
	var out []dwarf.LineRow
	for i, r := range places {
		if first[i] {
			out = append(out, r)
		}
	}
	return out
}

// coverageSites returns the statement rows of fn that are sites of line
// coverage, rows being as for countingSites: every place where a line
// begins (linePlaces).
func coverageSites(fn *dwarf.Func, code []decoded, rows []dwarf.LineRow, calls *inlineIndex) []dwarf.LineRow {
	rows, view := statements(rows)
	places, _, _ := newFlowGraph(code, fn.Entry).linePlaces(rows, view, calls.copies(rows, view, fn.Ranges))
	return places
}

// statements returns the statement rows of rows (every row of a function,
// sorted by address, those of one address in table order), and which of
// them are location views: another row, a statement row or not, follows
// at their address.
func statements(rows []dwarf.LineRow) ([]dwarf.LineRow, []bool) {
	var stmts []dwarf.LineRow
	var view []bool
	for i, r := range rows {
		if r.Stmt {
			stmts = append(stmts, r)
			view = append(view, i+1 < len(rows) && rows[i+1].Addr == r.Addr)
		}
	}
	return stmts, view
}

// linePlaces returns the rows that are places where their lines begin,
// with their view flags and copies, rows being a function's (those of one
// address in table order, view flagging the location views) and copies
// theirs.
//
// Of several rows at one address, the last names the instruction there;
// the others, location views, mark statements of no code of their own
// there (a for header whose initialisation needs no instruction, the line
// of an inlined call whose code is all the callee's), and are places as
// the others are, but for one kind: where a jump lands on code that the
// code before it also falls into, the views there may end the statements
// of the code before (gcc puts the markers of the statements that end an
// if's branch at the join after it). A view there of a copy with a row in
// the block before is that block's end: a jump that lands there has not
// run the copy (endsBlockBefore).
func (g *flowGraph) linePlaces(rows []dwarf.LineRow, view []bool, copies []int) (places []dwarf.LineRow, placeViews []bool, placeCopies []int) {
	for i, r := range rows {
		if !view[i] || !g.endsBlockBefore(rows, copies, i) {
			places = append(places, r)
			placeViews = append(placeViews, view[i])
			placeCopies = append(placeCopies, copies[i])
		}
	}
	return places, placeViews, placeCopies
}

// afterStackCheck returns rows, and view, their flags, with the rows of a
// Go function's stack check moved to its entry site and those of the block
// that calls morestack dropped (see countingSites), sorted by address.
func afterStackCheck(m *openModule, fn *dwarf.Func, rows []dwarf.LineRow, view []bool) ([]dwarf.LineRow, []bool) {
	site, restart := goStackCheck(m, fn)
	if site <= fn.Entry {
		return rows, view
	}
	type row struct {
		r    dwarf.LineRow
		view bool
	}
	var kept []row
	for i, r := range rows {
		switch {
		case r.Addr >= restart.Low && r.Addr < restart.High:
			continue
		case r.Addr >= fn.Entry && r.Addr < site:
			r.Addr = site
		}
		kept = append(kept, row{r, view[i]})
	}
	slices.SortStableFunc(kept, func(a, b row) int { return cmp.Compare(a.r.Addr, b.r.Addr) })
	rows, view = make([]dwarf.LineRow, len(kept)), make([]bool, len(kept))
	for i, k := range kept {
		rows[i], view[i] = k.r, k.view
	}
	return rows, view
}
