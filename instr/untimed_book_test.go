package instr

import (
	"strings"
	"testing"
)

// TestUntimedBookCodeRunsARM64: the code of an untimed book (a run that
// counts calls and times none: /FC with /SF or /AT) reads no counter, no
// ISB either, and counts as a timed book's does: TestBookCodeRunsARM64's
// calls (a calls b twice, c calls itself twice), every time 0.
func TestUntimedBookCodeRunsARM64(t *testing.T) {
	b := Book{Offset: 0x40, Frames: 16, Funcs: 3, Table: abTable, Areas: abAreas, Untimed: true}
	entries, exits := abCloserCode(t, b)
	for f := range entries {
		for _, c := range []BookCode{entries[f], exits[f]} {
			if abIndex(c.Code, 0xffffffe0, abMrsCnt) >= 0 || abIndex(c.Code, 0xffffffff, a64ISB) >= 0 {
				t.Fatalf("function %d: an untimed book's code reads the counter", f)
			}
		}
	}
	code, offA, offC := abCalls(entries, exits)
	mem := abMem(b)
	var ticks uint64
	abRunCalls(t, "", code, offA, offC, mem, &ticks)
	fig := abFigures(mem, b)
	for f, calls := range []uint64{1, 2, 3} {
		if fig[f][FigureCalls/8] != calls || fig[f][FigureOpen/8] != 0 {
			t.Errorf("function %d: %d calls, %d open; want %d, 0", f, fig[f][FigureCalls/8], fig[f][FigureOpen/8], calls)
		}
		if self, all := fig[f][FigureSelf/8], fig[f][FigureInclusive/8]; self != 0 || all != 0 {
			t.Errorf("function %d: own time %d, with children %d; want 0 and 0", f, self, all)
		}
	}
	if got, want := [2]uint64{fig[0][FigureKids/8], fig[0][FigureBeneath/8]}, [2]uint64{2, 2}; got != want {
		t.Errorf("a's kids and calls beneath %v, want %v", got, want)
	}
}

// TestUntimedBookCodeAMD64: x86-64's untimed code has no rdtsc and no
// lfence, its time a xor of eax, and is otherwise the timed code, byte
// for byte but for those.
func TestUntimedBookCodeAMD64(t *testing.T) {
	need(t, "objdump")
	b := Book{Offset: 0x40, Frames: 8, Funcs: 4}
	for _, nodes := range []int{0, 64} {
		b.Nodes = nodes
		timed, _ := AMD64.BookEntryCode(b, 1)
		u := b
		u.Untimed = true
		untimed, ok := AMD64.BookEntryCode(u, 1)
		if !ok {
			t.Fatal("no untimed book code")
		}
		text := strings.Join(disassemble(t, untimed.Code, 0), "\n")
		if strings.Contains(text, "rdtsc") || strings.Contains(text, "lfence") || !strings.Contains(strings.Join(strings.Fields(text), " "), "xor %eax,%eax") {
			t.Errorf("nodes %d: the untimed entry reads the counter, or sets no time:\n%s", nodes, text)
		}
		if len(untimed.Code) >= len(timed.Code) {
			t.Errorf("nodes %d: the untimed entry is %d bytes, the timed %d", nodes, len(untimed.Code), len(timed.Code))
		}
		exit, _ := AMD64.BookExitCode(u, 1, 0)
		if text := strings.Join(disassemble(t, exit.Code, 0), "\n"); strings.Contains(text, "rdtsc") || strings.Contains(text, "lfence") {
			t.Errorf("nodes %d: the untimed exit reads the counter:\n%s", nodes, text)
		}
	}
}
