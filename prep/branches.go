package prep

import (
	"cmp"
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/dwarf"
	"github.com/sourceprofiler/sprof/instr"
)

// Branches of line coverage (docs/linux.md, "Branch coverage"): every
// conditional branch instruction of the selected lines' code (x86-64's
// Jcc; arm64's B.cond, CBZ, CBNZ, TBZ and TBNZ), with its line, the line
// table's row at its address (of several rows at one address the last,
// which names the instruction there). PROFILE tells which of its two ways
// each took. These are the machine's branches, not the source's: an if
// whose test the compiler turned into a conditional move has none, and a
// loop whose test it copied has two. A Go function's stack check, and the
// block that calls morestack, are the run-time's, not the function's:
// their branch is left out, as their rows are for line counting.

// functionBranches returns the conditional branches of fn, code being its
// instructions and rows its rows on instruction boundaries (both sorted
// by address), each with its row's file and line: a branch before every
// row of its range, or at a row of line 0 (code of no line), is left
// out, as is one whose two ways are one (a jump to the next
// instruction).
func functionBranches(m *openModule, fn *dwarf.Func, code []decoded, rows []dwarf.LineRow) []branchLine {
	site, restart := goStackCheck(m, fn)
	var out []branchLine
	for _, d := range code {
		in := &d.inst
		switch {
		case in.Kind != instr.CondJump || in.Target == 0 || in.Target == d.addr+uint64(in.Len):
			continue
		case d.addr >= fn.Entry && d.addr < site, d.addr >= restart.Low && d.addr < restart.High:
			continue // (the stack check's)
		}
		k, _ := slices.BinarySearchFunc(rows, d.addr+1, func(r dwarf.LineRow, a uint64) int { return cmp.Compare(r.Addr, a) })
		if k == 0 {
			continue
		}
		row := &rows[k-1]
		if row.Line <= 0 || !sameRange(fn.Ranges, row.Addr, d.addr) {
			continue
		}
		out = append(out, branchLine{file: row.File, line: row.Line, addr: d.addr, target: in.Target})
	}
	return out
}

// sameRange reports whether addresses a and b are in one of ranges.
func sameRange(ranges []dwarf.Range, a, b uint64) bool {
	for _, r := range ranges {
		if a >= r.Low && a < r.High {
			return b >= r.Low && b < r.High
		}
	}
	return false
}

// planBranches returns the branches of the plan's lines: of each
// module's branches found (by module), those whose line the plan has,
// by address in each module, each once (functions may share code).
func planBranches(lines []datafile.Line, files [][]string, found [][]branchLine) []datafile.Branch {
	type key struct {
		mi, file, line int
	}
	index := make(map[key]int, len(lines))
	for i, l := range lines {
		index[key{l.Module, l.File, l.Line}] = i
	}
	var out []datafile.Branch
	for mi, bs := range found {
		fileIndex := make(map[string]int, len(files[mi]))
		for i, f := range files[mi] {
			fileIndex[f] = i
		}
		start := len(out)
		for _, b := range bs {
			fi, ok := fileIndex[b.file]
			if !ok {
				continue
			}
			if i, ok := index[key{mi, fi, b.line}]; ok {
				out = append(out, datafile.Branch{Line: i, Addr: b.addr, Target: b.target})
			}
		}
		mod := out[start:]
		slices.SortFunc(mod, func(a, b datafile.Branch) int { return cmp.Compare(a.Addr, b.Addr) })
		out = out[:start+len(slices.CompactFunc(mod, func(a, b datafile.Branch) bool { return a.Addr == b.Addr }))]
	}
	return out
}

// branchLine is a branch found in a module, with the name of its line's
// file.
type branchLine struct {
	file   string
	line   int
	addr   uint64
	target uint64
}
