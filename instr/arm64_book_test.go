package instr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The thread of the arm64 book tests: the stack table and the areas it
// gives, the area of the thread's stack (the third), the stack pointer
// its first call is made at (its stack is the two pages below and the
// page above), and the return address of that call's caller, outside the
// code, which runs at pTramp.
const (
	abTable  = 0x7f0000001000
	abAreas  = 0x7f0000100000
	abArea   = abAreas + 2*DepthAreaAlign
	abSP     = 0xffffffffe000
	abCaller = 0x400000
)

// A64 instructions of the functions the book code runs in (C6.2).
const (
	abSubSP  = 0xd10043ff // sub sp, sp, #16
	abStrLR  = 0xf90003fe // str x30, [sp]
	abLdrLR  = 0xf94003fe // ldr x30, [sp]
	abAddSP  = 0x910043ff // add sp, sp, #16
	abRet    = 0xd65f03c0 // ret
	abNop    = 0xd503201f // nop
	abSubs1  = 0xf1000400 // subs x0, x0, #1
	abBeq2   = 0x54000040 // b.eq over the next instruction
	abBrk    = 0xd4200000 // brk #0
	abMrsCnt = 0xd53be040 // mrs xt, cntvct_el0, xt in bits 0-4
)

// abBL is BL from byte offset from to byte offset to.
func abBL(from, to int) uint32 { return 0x94000000 | uint32((to-from)/4)&0x3ffffff }

// abMem is the memory of the tests' thread with book b in its area: its
// stack, the stack table's entries for it (4 bytes each, indexed by the
// stack pointer's page, the area's offset from the areas), and the book,
// its top at the first frame after the root, the root's stack pointer
// the highest there is, so that every call nests in it, and a nanosecond
// a tick; where b keeps caller stacks, the root's node RootNode, the
// only node in use, and the table empty. Nothing else is mapped: the
// code may read and write nothing else.
func abMem(b Book) *fakeMem {
	m := newMem()
	m.poke(abSP-0x2000, make([]byte, 0x3000))
	for sp := uint64(abSP - 0x2000); sp <= abSP; sp += 1 << DepthTablePage {
		index := sp >> DepthTablePage & (1<<DepthTableBits - 1)
		m.poke(abTable+4*index, binary.LittleEndian.AppendUint32(nil, uint32(abArea-abAreas)))
	}
	m.poke(abArea+b.Offset, make([]byte, b.Size()))
	m.poke64(abArea+b.Offset+BookTop, b.FrameAt(1))
	m.poke64(abArea+b.FrameAt(0)+FrameSP, ^uint64(0))
	m.poke64(abArea+b.Offset+BookScale, 1<<BookScaleShift)
	if b.Nodes > 0 {
		m.poke64(abArea+b.Offset+BookNodeCount, RootNode+1)
		m.poke64(abArea+b.FrameAt(0)+FrameNode, RootNode)
	}
	return m
}

// abRegs is the tests' thread at the code's start, its stack pointer sp,
// every other register a value of its own, and its counter ticks.
func abRegs(sp uint64, ticks *uint64) *fakeRegs {
	r := &fakeRegs{pc: pTramp, ticks: ticks}
	for i := range r.r {
		r.r[i] = 0x5a5a000000000000 | uint64(i)*0x1111
	}
	r.r[30], r.r[31] = abCaller, sp
	return r
}

// abIndex is the index of code's first instruction that is w under mask.
func abIndex(code []byte, mask, w uint32) int {
	for i := 0; i+4 <= len(code); i += 4 {
		if binary.LittleEndian.Uint32(code[i:])&mask == w {
			return i / 4
		}
	}
	return -1
}

// TestBookCodeARM64 checks the book code of an entry and of an exit of
// function 3 with the GNU disassembler, line by line as the Arm ARM reads
// them, where each stops for PROFILE and what it saves there, its
// rollback ranges, its unchecked form, and the books it refuses.
func TestBookCodeARM64(t *testing.T) {
	b := Book{Offset: 0, Frames: 4, Funcs: 8, Table: abTable, Areas: abAreas, Clock: 0x10000}
	entry, ok := ARM64.BookEntryCode(b, 3)
	if !ok {
		t.Fatal("no entry code")
	}
	exit, ok := ARM64.BookExitCode(b, 3, 0)
	if !ok {
		t.Fatal("no exit code")
	}
	// The book is at the area's start: its save slots at 0, the scale at
	// 104 (0x68), the top at 64, the held time at 72, the deepest top at
	// 96, the last exit's time at 112 and the lock seen at 136; the
	// frames at 192, the first after the root at 0x100, the shadow
	// stack's end at 0x1c0 (four frames), function 3's figures at
	// 0x1c0+3*64 = 0x280; the clock's page 0x10000 past the area, its
	// lock word at 0x10008 (two moves). A frame's words: time 0,
	// children 8, stack pointer 16, held time 24, calls beneath 32,
	// function 40, kids 48; the previous frame's are 64 below (the stack
	// pointer's at -48, the children's at -56, the calls beneath at -32,
	// the kids at -16). A function's figures: calls 0, own time 8, with
	// children 16, open calls 24, kids 32, outermost calls 40, calls
	// beneath 48.
	lookup := []string{
		"mov x16, sp", "ubfx x16, x16, #12, #22", // the stack pointer's page: its entry in the table
		"mov x17, #0x1000", "movk x17, #0x7f00, lsl #32", // the table
		"ldr w16, [x17, x16, lsl #2]",                      // the entry: the area's offset, 4 bytes
		"mov x17, #0x100000", "movk x17, #0x7f00, lsl #32", // the areas
		"add x16, x17, x16", // B
	}
	wantEntry := append(slices.Clip(lookup),
		"stp x0, x1, [x16]",                          // 0x20: saved
		"mrs x0, cntvct_el0", "ldr x17, [x16, #104]", // 0x24: the counter, times the scale,
		"mul x1, x0, x17", "umulh x0, x0, x17", "extr x0, x0, x1, #32", // 128 bits shifted right by 32
		"mov x17, #0x8", "movk x17, #0x1, lsl #16", // 0x38: the clock's lock word's distance, 0x10000 + 8,
		"ldr w17, [x16, x17]", "ldr w1, [x16, #136]", // the page's lock word, from the area; the lock seen
		"cmp w17, w1", "b.eq 0x58", // the same: on its CPU since
		"str w17, [x16, #136]", "b 0x80", // else the lock seen, and to the stop
		"ldr x17, [x16, #64]",          // 0x58: the top,
		"cmp x17, #0x100", "b.cc 0x80", // below the first frame: to the stop
		"mov x1, #0x1c0",                 // the end:
		"cmp x17, x1, uxtx", "b.cs 0x80", // at it or past, full: to the stop
		"add x17, x16, x17",       // the frame to open
		"ldur x1, [x17, #-48]",    // the open call's stack pointer
		"cmp sp, x1", "b.cc 0x84", // below it: to open a call
		"brk #0x0",                         // 0x80: the stop
		"str x0, [x17]",                    // 0x84: the time
		"str xzr, [x17, #8]",               // no children
		"mov x1, sp", "str x1, [x17, #16]", // the stack pointer
		"ldr x1, [x16, #72]", "str x1, [x17, #24]", // the held time
		"str xzr, [x17, #32]", "str xzr, [x17, #48]", // no calls beneath, no kids
		"mov x1, #0x3", "str x1, [x17, #40]", // the function
		"add x17, x17, #0x40", "sub x1, x17, x16", "str x1, [x16, #64]", // the top one frame up: the commit
		"ldr x0, [x16, #96]", "cmp x1, x0, uxtx", "b.ls 0xc8", // 0xb8: above the deepest top,
		"str x1, [x16, #96]",                   // the deepest
		"mov x17, #0x280", "add x17, x16, x17", // 0xc8: function 3's figures
		"ldr x0, [x17, #24]", "add x0, x0, #0x1", "str x0, [x17, #24]", // one more open call
		"ldp x0, x1, [x16]", // back
	)
	wantExit := append(slices.Clip(lookup),
		"stp x0, x1, [x16]", "stp x2, x3, [x16, #16]", // 0x20: saved
		"isb", "mrs x0, cntvct_el0", "ldr x17, [x16, #104]", // 0x28: the counter after what came before
		"mul x1, x0, x17", "umulh x0, x0, x17", "extr x0, x0, x1, #32",
		"mov x17, #0x8", "movk x17, #0x1, lsl #16", // 0x40: the check of the CPU, as the entry's
		"ldr w17, [x16, x17]", "ldr w1, [x16, #136]",
		"cmp w17, w1", "b.eq 0x60",
		"str w17, [x16, #136]", "b 0x90",
		"str x0, [x16, #112]",          // 0x60: the last exit's time
		"ldr x17, [x16, #64]",          // the top,
		"cmp x17, #0x100", "b.cc 0x90", // below the first frame: to the stop
		"mov x1, #0x1c0",
		"cmp x17, x1, uxtx", "b.hi 0x90", // past the end: to the stop
		"add x17, x16, x17",
		"ldur x1, [x17, #-48]",    // the open call's stack pointer
		"cmp sp, x1", "b.eq 0x94", // the same: to close it
		"b.cc 0x164",                                     // below it: a deeper call's exit, which closes nothing
		"brk #0x0",                                       // 0x90: the stop
		"ldur x1, [x17, #-24]",                           // 0x94: the open call's function
		"mov x2, #0x3", "cmp x1, x2, uxtx", "b.ne 0x164", // not 3: another's, which jumped into 3: it closes nothing
		"sub x17, x17, #0x40", "sub x1, x17, x16", "str x1, [x16, #64]", // 0xa4: the open call's frame, the top down to it: the commit
		"ldr x1, [x17]", "sub x0, x0, x1", // 0xb0: the call's time,
		"ldr x1, [x16, #72]", "ldr x2, [x17, #24]", "sub x1, x1, x2", "sub x0, x0, x1", // less the time held since its entry
		"ldur x1, [x17, #-56]", "add x1, x1, x0", "stur x1, [x17, #-56]", // the caller's children
		"ldr x1, [x17, #32]", "add x1, x1, #0x1", // the calls beneath, this one too,
		"ldur x2, [x17, #-32]", "add x2, x2, x1", "stur x2, [x17, #-32]", // the caller's
		"ldur x1, [x17, #-16]", "add x1, x1, #0x1", "stur x1, [x17, #-16]", // the caller's kids
		"ldr x1, [x17, #8]", "sub x1, x0, x1", // the own time: less the children's
		"mov x2, #0x280", "add x2, x16, x2", // function 3's figures
		"ldr x3, [x2]", "add x3, x3, #0x1", "str x3, [x2]", // one more call
		"ldr x3, [x2, #8]", "add x3, x3, x1", "str x3, [x2, #8]", // the own time
		"ldr x1, [x17, #48]", "ldr x3, [x2, #32]", "add x3, x3, x1", "str x3, [x2, #32]", // the kids
		"ldr x3, [x2, #24]", "subs x3, x3, #0x1", "str x3, [x2, #24]", // one call fewer open:
		"b.ne 0x164",                                               // others still open: a recursion's inner call, done
		"ldr x3, [x2, #16]", "add x3, x3, x0", "str x3, [x2, #16]", // the time with children
		"ldr x3, [x2, #40]", "add x3, x3, #0x1", "str x3, [x2, #40]", // one more outermost call
		"ldr x1, [x17, #32]", "ldr x3, [x2, #48]", "add x3, x3, x1", "str x3, [x2, #48]", // the calls beneath
		"ldp x0, x1, [x16]", "ldp x2, x3, [x16, #16]", // 0x164: back
	)
	if _, err := exec.LookPath("aarch64-linux-gnu-objdump"); err == nil {
		for _, c := range []struct {
			name string
			code []byte
			want []string
		}{{"entry", entry.Code, wantEntry}, {"exit", exit.Code, wantExit}} {
			if got := gnuDisasm(t, c.code, 0); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("%s code:\n%s\nwant:\n%s", c.name, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		}
		// An exit where the stack pointer is the entry's plus 8 compares
		// the entry's, x2 its scratch, then the open call's function, x2
		// its number; and the unchecked code jumps past the end.
		exit8, ok := ARM64.BookExitCode(b, 3, 8)
		if !ok {
			t.Fatal("no exit code 8 above the entry's stack pointer")
		}
		if got := gnuDisasm(t, exit8.Code, 0)[32:42]; !slices.Equal(got, []string{
			"ldur x1, [x17, #-48]", "sub x2, sp, #0x8", "cmp x2, x1, uxtx", "b.eq 0x98", "b.cc 0x168", "brk #0x0",
			"ldur x1, [x17, #-24]", "mov x2, #0x3", "cmp x1, x2, uxtx", "b.ne 0x168",
		}) {
			t.Errorf("exit 8 above the entry's stack pointer compares with %q", got)
		}
		if got := gnuDisasm(t, entry.Unchecked, 0); !slices.Equal(got, []string{"b 0xe0"}) {
			t.Errorf("unchecked entry %q, want a jump past its end", got)
		}
		// The farthest clock: its lock word at 2^32-4, the last 32-bit
		// word the two moves reach.
		far := b
		far.Clock = 1<<32 - PerfPageLock - 4
		if entry, ok := ARM64.BookEntryCode(far, 3); !ok {
			t.Error("a clock 2^32-12 past the area refused")
		} else if got := gnuDisasm(t, entry.Code, 0)[0x38/4 : 0x48/4]; !slices.Equal(got, []string{
			"mov x17, #0xfffc", "movk x17, #0xffff, lsl #16", "ldr w17, [x16, x17]", "ldr w1, [x16, #136]",
		}) {
			t.Errorf("a clock 2^32-12 past the area read with %q", got)
		}
		// A clock below the area (PROFILE's region of pages below the
		// memory it shares): the distance taken modulo 2^64.
		below := b
		below.Clock = ^uint64(0x10000 - 1) // (-64 KiB)
		if entry, ok := ARM64.BookEntryCode(below, 3); !ok {
			t.Error("a clock 64 KiB below the area refused")
		} else if got := strings.Join(gnuDisasm(t, entry.Code, 0), "\n"); !strings.Contains(got, "mov x17, #0x8\nmovk x17, #0xffff, lsl #16\nmovk x17, #0xffff, lsl #32\nmovk x17, #0xffff, lsl #48\nldr w17, [x16, x17]") {
			t.Errorf("a clock 64 KiB below the area read with\n%s", got)
		}
	}

	// Where each stops, and what is saved there: the entry's x0 and x1,
	// the exit's x0 to x3, in the save slots. A thread is rolled back
	// from the start to just after the saves (0x24, 0x28) with nothing
	// to restore; from there to just after the store of the top (0xb8,
	// 0xb0), the check of the CPU included, with the saved registers put
	// back; from there on it is stepped to the end.
	checkBookShape(t, "entry", entry, 0x84, 0x24, 0xb8, bookSlots[:2])
	checkBookShape(t, "exit", exit, 0x94, 0x28, 0xb0, bookSlots)

	// The books the code cannot keep. (edge's first frame after the root
	// is at 4096, one past what CMP's 12-bit immediate holds.)
	edge := Book{Offset: 4096 - BookFrames - BookFrameSize, Frames: 4, Funcs: 8, Table: abTable, Areas: abAreas}
	if edge.FrameAt(1) != 4096 {
		t.Fatalf("first frame at %#x, want 0x1000", edge.FrameAt(1))
	}
	for _, c := range []struct {
		name string
		b    Book
		f    int
	}{
		{"the root frame alone", Book{Frames: 1, Funcs: 8, Table: abTable, Areas: abAreas}, 3},
		{"no stack table", Book{Frames: 4, Funcs: 8, Areas: abAreas}, 3},
		{"no areas", Book{Frames: 4, Funcs: 8, Table: abTable}, 3},
		{"an offset not a multiple of 16", Book{Offset: 8, Frames: 4, Funcs: 8, Table: abTable, Areas: abAreas}, 3},
		{"function 8 of 8", b, 8},
		{"function -1", b, -1},
		{"the first frame past CMP's 12-bit immediate", edge, 3},
		{"the clock's lock word at 4 GiB", Book{Frames: 4, Funcs: 8, Table: abTable, Areas: abAreas, Clock: 1<<32 - PerfPageLock}, 3},
		{"the clock 4 GiB below", Book{Frames: 4, Funcs: 8, Table: abTable, Areas: abAreas, Clock: ^uint64(1<<32 - 1)}, 3},
	} {
		if _, ok := ARM64.BookEntryCode(c.b, c.f); ok {
			t.Errorf("%s: entry code", c.name)
		}
		if _, ok := ARM64.BookExitCode(c.b, c.f, 0); ok {
			t.Errorf("%s: exit code", c.name)
		}
	}
	for _, sp := range []int{-1, 4096} {
		if _, ok := ARM64.BookExitCode(b, 3, sp); ok {
			t.Errorf("an exit %d above the entry's stack pointer accepted", sp)
		}
	}
}

// TestBookCodeSavesARM64 runs the entry and exit code of books at
// offsets in their area up to STP's and LDP's reach and past it: their
// offset is a signed 7-bit count of words, 504 bytes at most, so that
// the exit's second pair of save slots (16 on) reaches a book 488 bytes
// in at most. Every book accepted must save the registers in its own
// save slots, put them back, and touch nothing outside itself. The same
// holds of books with nodes, whose entry saves two pairs too (the
// call's node in the table).
func TestBookCodeSavesARM64(t *testing.T) {
books:
	for _, book := range []struct {
		off   uint64
		nodes int
	}{{0, 0}, {0x100, 0}, {0x1e0, 0}, {0x1f0, 0}, {0x200, 0}, {0x400, 0}, {0xe00, 0}, {0, 4}, {0x1e0, 4}, {0x1f0, 4}} {
		off := book.off
		b := Book{Offset: off, Frames: 4, Funcs: 2, Nodes: book.nodes, Table: abTable, Areas: abAreas}
		entry, ok1 := ARM64.BookEntryCode(b, 1)
		exit, ok2 := ARM64.BookExitCode(b, 1, 0)
		if ok1 != ok2 || ok1 != (off <= 0x1e0) {
			t.Errorf("book at %#x, %d nodes: entry %v, exit %v; want both %v", off, book.nodes, ok1, ok2, off <= 0x1e0)
		}
		if !ok1 || !ok2 {
			continue
		}
		var ticks uint64
		mem := abMem(b)
		if book.nodes > 0 {
			abAddNode(mem, b, RootNode, 1)
		}
		for _, c := range []struct {
			name string
			code BookCode
		}{{"entry", entry}, {"exit", exit}} {
			mem.poke(abArea+b.Offset+BookSave, make([]byte, 32))
			r := abRegs(abSP-0x100, &ticks)
			want := r.clone()
			want.pc += uint64(len(c.code.Code))
			if err := a64Exec(c.code.Code, pTramp, r, mem); err != nil {
				t.Errorf("book at %#x: %s: %v", off, c.name, err)
				continue books
			}
			r.r[16], r.r[17], r.flags = want.r[16], want.r[17], want.flags
			if *r != *want {
				t.Errorf("book at %#x: %s: registers after\n got %+v\nwant %+v", off, c.name, *r, *want)
			}
			for _, s := range c.code.Saved {
				if got, want := mem.peek64(abArea+s.Offset), want.r[s.Reg]; got != want {
					t.Errorf("book at %#x: %s saved x%d as %#x, want %#x", off, c.name, s.Reg, got, want)
				}
			}
		}
		if top := mem.peek64(abArea + b.Offset + BookTop); top != b.FrameAt(1) {
			t.Errorf("book at %#x: top %#x after a call, want %#x", off, top, b.FrameAt(1))
		}
		if calls := mem.peek64(abArea + b.NodeAt(2)); book.nodes > 0 && calls != 1 {
			t.Errorf("book at %#x: node 2's calls %d after a call, want 1", off, calls)
		}
	}
}

// TestBookCodeRunsARM64 runs the book code in the A64 interpreter, where
// the counter counts the instructions run: functions made of it, a
// calling b twice and c calling itself to a depth of three, as
// TestBookCodeRunsAMD64's; then an entry and an exit alone, with a time
// held between them; then the stops.
func TestBookCodeRunsARM64(t *testing.T) {
	const fa, fb, fc = 0, 1, 2
	b := Book{Offset: 0x40, Frames: 16, Funcs: 3, Table: abTable, Areas: abAreas}
	entries, exits := abCloserCode(t, b)
	// The instructions that make up a call's time: those of the entry
	// from its reading of the counter to its end, but for the BRK,
	// jumped over, the store of a new deepest top, which only a call
	// deeper than any before makes (the book has no clock: its code
	// has no check of the CPU); those of the exit before its reading;
	// and outside the call's time, those of the entry before its
	// reading, and those of an exit that closes an outermost call from
	// its reading to its end, but for the B.LO to the end and the BRK,
	// both jumped over.
	entry, exit := entries[fb], exits[fb]
	entryRead, exitRead := abIndex(entry.Code, 0xffffffe0, abMrsCnt), abIndex(exit.Code, 0xffffffe0, abMrsCnt)
	if entryRead < 0 || exitRead < 0 {
		t.Fatal("the code reads no counter")
	}
	entryPre, exitPre := uint64(entryRead), uint64(exitRead)
	entryRest, exitRest := uint64(len(entry.Code)/4)-entryPre-2, uint64(len(exit.Code)/4)-exitPre-2
	at := func(off uint64) uint64 { return abArea + off }

	code, offA, offC := abCalls(entries, exits)

	mem := abMem(b)
	var ticks uint64
	ranA, ranC := abRunCalls(t, "", code, offA, offC, mem, &ticks)
	fig := abFigures(mem, b)
	t.Logf("a ran %d instructions, c %d; figures %v", ranA, ranC, fig)
	if top := mem.peek64(at(b.Offset + BookTop)); top != b.FrameAt(1) {
		t.Errorf("shadow stack's top at %#x, want %#x, the root's next", top, b.FrameAt(1))
	}
	if deepest := mem.peek64(at(b.Offset + BookDeepest)); deepest != b.FrameAt(4) {
		t.Errorf("deepest top %#x, want %#x: three calls of c open at once", deepest, b.FrameAt(4))
	}
	for f, calls := range []uint64{1, 2, 3} {
		if fig[f][FigureCalls/8] != calls || fig[f][FigureOpen/8] != 0 {
			t.Errorf("function %d: %d calls, %d open; want %d, 0", f, fig[f][FigureCalls/8], fig[f][FigureOpen/8], calls)
		}
	}
	self, incl := func(f int) uint64 { return fig[f][FigureSelf/8] }, func(f int) uint64 { return fig[f][FigureInclusive/8] }
	if incl(fa) != self(fa)+incl(fb) {
		t.Errorf("a with children %d, want its own %d and b's %d", incl(fa), self(fa), incl(fb))
	}
	if incl(fc) != self(fc) {
		t.Errorf("c with children %d, want its own three calls' %d (one recursion, counted once)", incl(fc), self(fc))
	}
	for f, want := range [][3]uint64{{2, 1, 2}, {0, 2, 0}, {2, 1, 2}} {
		got := [3]uint64{fig[f][FigureKids/8], fig[f][FigureOuter/8], fig[f][FigureBeneath/8]}
		if got != want {
			t.Errorf("function %d: kids, outermost calls and calls beneath %v, want %v", f, got, want)
		}
	}
	// The times, in instructions. A call of b is its entry's rest, the
	// prologue, two NOPs, the epilogue and its exit's instructions before
	// the reading; the first call is one deeper than any before. a's own
	// time is its entry's rest (a new depth too), the prologue, two BLs,
	// the epilogue and its exit's start, and what each call of b runs
	// outside its time: its entry's start, its exit's rest and its
	// return. An outermost call's time with its children is all it runs
	// but its entry's start, its exit's rest and its return.
	callB := entryRest + 6 + exitPre
	if want := 2*callB + 1; self(fb) != want || incl(fb) != want {
		t.Errorf("b's own time %d, with children %d; want %d, twice %d and a new depth", self(fb), incl(fb), want, callB)
	}
	if want := entryRest + 1 + 6 + exitPre + 2*(entryPre+exitRest+1); self(fa) != want {
		t.Errorf("a's own time %d, want %d", self(fa), want)
	}
	outside := entryPre + exitRest + 1
	if incl(fa) != ranA-outside || incl(fc) != ranC-outside {
		t.Errorf("a's and c's times with children %d, %d; want %d, %d: all their calls ran but %d", incl(fa), incl(fc), ranA-outside, ranC-outside, outside)
	}
	if last := mem.peek64(at(b.Offset + BookLast)); last != ticks-exitRest-1 {
		t.Errorf("last exit's time %d, want %d, c's reading", last, ticks-exitRest-1)
	}
	// The root frame's children are the two outermost calls, which made
	// two and three calls beneath it.
	root := [3]uint64{mem.peek64(at(b.FrameAt(0) + FrameChildren)), mem.peek64(at(b.FrameAt(0) + FrameKids)), mem.peek64(at(b.FrameAt(0) + FrameBeneath))}
	if want := [3]uint64{incl(fa) + incl(fc), 2, 6}; root != want {
		t.Errorf("root frame's children, kids and calls beneath %v, want %v", root, want)
	}

	// An entry and an exit alone, on a new book, at sp: each puts back
	// every register but x16 and x17, the stack pointer too, and goes on
	// at its end. PROFILE holds the thread for 7 ns between them: the
	// call's time is less that, the held time's difference, not the
	// held time.
	mem, ticks = abMem(b), 1000
	const sp, held = abSP - 0x100, 7
	thread := abRegs(0, nil).r
	goes := func(name string, c BookCode, sp uint64) {
		t.Helper()
		r := abRegs(sp, &ticks)
		want := r.clone()
		want.pc += uint64(len(c.Code))
		if err := a64Exec(c.Code, pTramp, r, mem); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r.r[16], r.r[17], r.flags = want.r[16], want.r[17], want.flags
		if *r != *want {
			t.Errorf("%s: registers after\n got %+v\nwant %+v", name, *r, *want)
		}
	}
	mem.poke64(at(b.Offset+BookHeld), 5000)
	goes("entry", entry, sp)
	mem.poke64(at(b.Offset+BookHeld), 5000+held)
	goes("exit", exit, sp)
	took := mem.peek64(at(b.Offset+BookLast)) - mem.peek64(at(b.FrameAt(1)+FrameTime))
	if want := entryRest + 1 + exitPre; took != want {
		t.Errorf("the call took %d from the entry's reading to the exit's, want %d", took, want)
	}
	got := [3]uint64{mem.peek64(at(b.FigureAt(fb) + FigureSelf)), mem.peek64(at(b.FigureAt(fb) + FigureInclusive)), mem.peek64(at(b.FrameAt(0) + FrameChildren))}
	if want := took - held; got != [3]uint64{want, want, want} {
		t.Errorf("the call's own time, with children and its caller's children %v, want %d: %d less the %d ns held", got, want, took, held)
	}

	// The stops: the thread at the BRK, x0 the time the code read (the
	// counter as it read it), the thread's registers in the save slots,
	// and nothing else written but, by an exit, the last exit's time.
	// last is that time's offset, 0 for none.
	clearSaves := func() { mem.poke(at(b.Offset+BookSave), make([]byte, 32)) }
	stops := func(name string, c BookCode, sp, last uint64) {
		t.Helper()
		clearSaves()
		r := abRegs(sp, &ticks)
		want, start := mem.clone(), ticks
		err := a64Exec(c.Code, pTramp, r, mem)
		var brk a64Break
		if !errors.As(err, &brk) || r.pc != brk.pc || brk.pc+4 != pTramp+uint64(c.Stop) {
			t.Fatalf("%s: %v, at %#x; want a stop at %#x", name, err, r.pc, pTramp+uint64(c.Stop)-4)
		}
		read := start + uint64(abIndex(c.Code, 0xffffffe0, abMrsCnt))
		if r.r[0] != read {
			t.Errorf("%s: x0 %d at the stop, want %d, the time read", name, r.r[0], read)
		}
		for _, s := range c.Saved {
			want.poke64(at(s.Offset), thread[s.Reg])
		}
		if last != 0 {
			want.poke64(at(last), read)
		}
		if !equalMem(mem, want) {
			t.Errorf("%s: the book written", name)
		}
	}
	last := b.Offset + BookLast
	goes("entry", entry, sp)
	stops("an entry at the open call's stack pointer", entry, sp, 0)
	stops("an entry above it", entry, sp+16, 0)
	stops("an exit above it", exit, sp+16, last)
	// An exit below the open call's stack pointer is a deeper call's,
	// whose entry opened nothing: it closes nothing.
	clearSaves()
	want := mem.clone()
	goes("an exit below the open call", exit, sp-16)
	for _, s := range exit.Saved {
		want.poke64(at(s.Offset), thread[s.Reg])
	}
	want.poke64(at(last), mem.peek64(at(last)))
	if !equalMem(mem, want) {
		t.Error("an exit below the open call wrote the book")
	}
	// A top written over: below the first frame after the root, past the
	// shadow stack's end.
	for _, top := range []uint64{b.FrameAt(0), b.FrameAt(1) - 8, b.FrameAt(b.Frames) + BookFrameSize} {
		mem.poke64(at(b.Offset+BookTop), top)
		if top < b.FrameAt(1) {
			stops("an entry, the top below the first frame", entry, sp-16, 0)
		}
		stops("an exit, the top written over", exit, sp, last)
	}
	// The shadow stack's last frame opens, the next does not, and the
	// last closes.
	mem.poke64(at(b.Offset+BookTop), b.FrameAt(b.Frames-1))
	mem.poke64(at(b.FrameAt(b.Frames-2)+FrameSP), sp+16)
	goes("an entry into the last frame", entry, sp)
	if top := mem.peek64(at(b.Offset + BookTop)); top != b.FrameAt(b.Frames) {
		t.Errorf("top %#x after the last frame opened, want %#x", top, b.FrameAt(b.Frames))
	}
	stops("an entry, the shadow stack full", entry, sp-16, 0)
	goes("an exit of the last frame", exit, sp)
	if top := mem.peek64(at(b.Offset + BookTop)); top != b.FrameAt(b.Frames-1) {
		t.Errorf("top %#x after the last frame closed, want %#x", top, b.FrameAt(b.Frames-1))
	}
}

// TestBookExitOtherFunctionARM64 runs, in the A64 interpreter, the exit
// of a function g where the open call, at the exit's stack pointer, is
// another function's, h's (h jumped into g, its own exit not seen). g's
// exit closes nothing: it goes on at its end with every register back
// but x16, x17 and the flags, and writes nothing but its save slots and
// the last exit's time (the top, the frames, the figures and the nodes
// as they were); then h's own exit closes h's call as ever. The functions' numbers take one move (0, 1,
// 2) or two (0x10001, which is 1 in its low half); in a book with
// nodes, g's exit finds the call another's before it reads its node,
// and does not stop even at a node it would stop at (0); in a book with
// a closer, g's exit has the closer close a call left below h's, and
// then finds h's open and closes nothing more.
func TestBookExitOtherFunctionARM64(t *testing.T) {
	// plain has the figures of 0x10002 functions, but its memory
	// (mapped) only those of the first three: the code may touch no
	// figures of g's.
	plain := Book{Offset: 0x40, Frames: 16, Funcs: 0x10002, Table: abTable, Areas: abAreas}
	mapped := plain
	mapped.Funcs = 3
	nodes := Book{Offset: 0x40, Frames: 16, Funcs: 3, Nodes: 8, Table: abTable, Areas: abAreas}
	const sp = abSP - 0x100
	at := func(off uint64) uint64 { return abArea + off }
	thread := abRegs(0, nil).r
	for _, c := range []struct {
		name      string
		b, mapped Book
		g, h      int
		node0     bool // h's frame's node written over with 0 before g's exit
	}{
		{"g 1, h 2", plain, mapped, 1, 2, false},
		{"g 0, h 2", plain, mapped, 0, 2, false},
		{"g 2, h 0", plain, mapped, 2, 0, false},
		{"g 0x10001, h 1", plain, mapped, 0x10001, 1, false},
		{"nodes, g 1, h 2", nodes, nodes, 1, 2, false},
		{"nodes, g 0, h 2, h's node 0", nodes, nodes, 0, 2, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.b
			entryH, ok1 := ARM64.BookEntryCode(b, c.h)
			exitG, ok2 := ARM64.BookExitCode(b, c.g, 0)
			exitH, ok3 := ARM64.BookExitCode(b, c.h, 0)
			if !ok1 || !ok2 || !ok3 {
				t.Fatal("no code")
			}
			mem, ticks := abMem(c.mapped), uint64(1000)
			// run runs code at sp, which must go on at its end, every
			// register back but x16, x17 and the flags; it returns the
			// time the code read.
			run := func(name string, code []byte) uint64 {
				t.Helper()
				r := abRegs(sp, &ticks)
				want := r.clone()
				want.pc += uint64(len(code))
				read := ticks + uint64(abIndex(code, 0xffffffe0, abMrsCnt))
				if err := a64Exec(code, pTramp, r, mem); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				r.r[16], r.r[17], r.flags = want.r[16], want.r[17], want.flags
				if *r != *want {
					t.Errorf("%s: registers after\n got %+v\nwant %+v", name, *r, *want)
				}
				return read
			}
			start := run("h's entry", entryH.Code)
			if top := mem.peek64(at(b.Offset + BookTop)); top != b.FrameAt(2) {
				t.Fatalf("top %#x after h's entry, want %#x", top, b.FrameAt(2))
			}
			node := mem.peek64(at(b.FrameAt(1) + FrameNode))
			if c.node0 {
				mem.poke64(at(b.FrameAt(1)+FrameNode), 0)
			}
			want := mem.clone()
			last := run("g's exit", exitG.Code)
			for _, s := range exitG.Saved {
				want.poke64(at(s.Offset), thread[s.Reg])
			}
			want.poke64(at(b.Offset+BookLast), last)
			for a, v := range mem.b {
				if want.b[a] != v {
					t.Errorf("g's exit wrote %#x (the area's %#x)", a, a-abArea)
					break
				}
			}
			// h's own exit closes its call: its time the exit's reading
			// less the entry's, all its own; one outermost call, none
			// open.
			mem.poke64(at(b.FrameAt(1)+FrameNode), node)
			end := run("h's exit", exitH.Code)
			took := end - start
			if top := mem.peek64(at(b.Offset + BookTop)); top != b.FrameAt(1) {
				t.Errorf("top %#x after h's exit, want %#x", top, b.FrameAt(1))
			}
			figures := func(f int) (w [7]uint64) {
				for i := range w {
					w[i] = mem.peek64(at(b.FigureAt(f) + 8*uint64(i)))
				}
				return w
			}
			if got, want := figures(c.h), [7]uint64{1, took, took, 0, 0, 1, 0}; got != want {
				t.Errorf("h's figures %v, want %v", got, want)
			}
			if c.g < c.mapped.Funcs {
				if got := figures(c.g); got != [7]uint64{} {
					t.Errorf("g's figures %v, want none", got)
				}
			}
			root := [3]uint64{mem.peek64(at(b.FrameAt(0) + FrameChildren)), mem.peek64(at(b.FrameAt(0) + FrameKids)), mem.peek64(at(b.FrameAt(0) + FrameBeneath))}
			if want := [3]uint64{took, 1, 1}; root != want {
				t.Errorf("the root's children, kids and calls beneath %v, want %v", root, want)
			}
			if b.Nodes > 0 {
				if got, want := abNode(mem, b, RootNode+1), [8]uint64{1, took, took, 0, 0, 0, 0, NodeKeyOf(RootNode, c.h)}; node != RootNode+1 || got != want {
					t.Errorf("h's call's node %d, its figures %v; want %d, %v", node, got, RootNode+1, want)
				}
			}
		})
	}

	// With a closer: h's call open at abSP0, d3's below it, left open
	// (its exit not seen); g's exit at abSP0 has the closer close d3's
	// call at its reading, and finds h's open at its stack pointer: it
	// closes nothing more, h's call still open, only d3 in its frame's
	// children, kids and calls beneath. Then h's exit closes h's call.
	t.Run("closer", func(t *testing.T) {
		b := abCloserBook
		entries, exits := abCloserCode(t, b)
		th := newCloserThread(t, b, abStackLo, abStackHi)
		h := th.goes("h's entry", entries[abH].Code, abSP0, false)
		d := th.goes("d3's entry", entries[abD3].Code, abSP0-0x40, false)
		g := th.goes("g's exit", exits[abG].Code, abSP0, true)
		td := g - d
		if top := th.word(b.Offset + BookTop); top != b.FrameAt(2) {
			t.Errorf("top %#x after g's exit, want %#x, h's call open", top, b.FrameAt(2))
		}
		if got, want := th.words(b.FrameAt(1)), [7]uint64{h, td, abSP0, 0, 1, abH, 1}; got != want {
			t.Errorf("h's frame %v after g's exit, want %v", got, want)
		}
		for _, w := range []struct {
			f    int
			figs [7]uint64
		}{
			{abD3, [7]uint64{1, td, td, 0, 0, 1, 0}},
			{abG, [7]uint64{}},
			{abH, [7]uint64{0, 0, 0, 1, 0, 0, 0}},
		} {
			if got := th.words(b.FigureAt(w.f)); got != w.figs {
				t.Errorf("function %d's figures %v after g's exit, want %v", w.f, got, w.figs)
			}
		}
		if last, key := th.word(b.Offset+BookLast), th.word(b.Offset+BookKey); last != g || key != abSP0-1 {
			t.Errorf("last exit %d, key %#x; want %d, %#x", last, key, g, uint64(abSP0-1))
		}
		x := th.goes("h's exit", exits[abH].Code, abSP0, false)
		th2 := x - h
		if got, want := th.words(b.FigureAt(abH)), [7]uint64{1, th2 - td, th2, 0, 1, 1, 1}; got != want {
			t.Errorf("h's figures %v after its exit, want %v", got, want)
		}
		if top := th.word(b.Offset + BookTop); top != b.FrameAt(1) {
			t.Errorf("top %#x after h's exit, want %#x", top, b.FrameAt(1))
		}
	})
}

// abCloserWord is, in the closer tests, the address of the word that
// holds the closer's address (Book.Closer), in the lowest 2 GiB as
// PROFILE maps it; the closer itself is at pTramp.
const abCloserWord = 0x7ff00000

// TestA64ExecBookCloserInstructions checks the interpreter's instructions
// that only the closer and its call use, each word written out from the
// Arm ARM (C6.2) and checked with the GNU disassembler: STP with a
// pre-indexed and LDP with a post-indexed sp, and their other indexed
// forms, ADR, BR and RET of a register other than x30, and ADD (shifted
// register) with LSL #6.
func TestA64ExecBookCloserInstructions(t *testing.T) {
	const sp = abSP - 0x100
	for _, c := range []struct {
		word uint32
		text string
		in   func(r *fakeRegs)
		want func(r *fakeRegs, m *fakeMem) bool
	}{
		// STP pre-index: 10 101 0 011 0 imm7 Rt2 Rn Rt, imm7 -6 (0x7a):
		// sp moves down 48 first, and x3 and x4 go there.
		{0xa9bd13e3, "stp x3, x4, [sp, #-48]!", nil, func(r *fakeRegs, m *fakeMem) bool {
			return r.r[31] == sp-48 && m.peek64(sp-48) == r.r[3] && m.peek64(sp-40) == r.r[4]
		}},
		// LDP post-index: 10 101 0 001 1 imm7 Rt2 Rn Rt, imm7 6: x3 and x4
		// come from sp, which then moves up 48.
		{0xa8c313e3, "ldp x3, x4, [sp], #48", nil, func(r *fakeRegs, m *fakeMem) bool {
			return r.r[31] == sp+48 && r.r[3] == 0x3333 && r.r[4] == 0x4444
		}},
		// STP post-index (10 101 0 001 0): x9 and x5 stored at x10, which
		// then moves down 16.
		{0xa8bf1549, "stp x9, x5, [x10], #-16", nil, func(r *fakeRegs, m *fakeMem) bool {
			return r.r[10] == sp-16 && m.peek64(sp) == r.r[9] && m.peek64(sp+8) == r.r[5]
		}},
		// LDP pre-index (10 101 0 011 1): x10 moves up 16 first, and x9
		// and x5 come from there.
		{0xa9c11549, "ldp x9, x5, [x10, #16]!", nil, func(r *fakeRegs, m *fakeMem) bool {
			return r.r[10] == sp+16 && r.r[9] == 0x9999 && r.r[5] == 0x5555
		}},
		// ADR: 0 immlo 10000 immhi Rd, the offset immhi:immlo signed:
		// immhi 2 and immlo 0 are 8 bytes on, immhi all ones and immlo 3
		// one byte back.
		{0x10000042, "adr x2, 0x8", nil, func(r *fakeRegs, m *fakeMem) bool { return r.r[2] == pTramp+8 }},
		{0x70ffffe5, "adr x5, 0xffffffffffffffff", nil, func(r *fakeRegs, m *fakeMem) bool { return r.r[5] == pTramp-1 }},
		// BR and RET: 1101011 0000 11111 000000 Rn 00000 and 1101011 0010
		// 11111 000000 Rn 00000: to the address in x1, x2, not x30.
		{0xd61f0020, "br x1", func(r *fakeRegs) { r.r[1] = abCaller }, func(r *fakeRegs, m *fakeMem) bool { return r.pc == abCaller }},
		{0xd65f0040, "ret x2", func(r *fakeRegs) { r.r[2] = abCaller + 8 }, func(r *fakeRegs, m *fakeMem) bool { return r.pc == abCaller+8 }},
		// ADD (shifted register): 1 0 0 01011 00 0 Rm imm6 Rn Rd, shift 00
		// LSL, imm6 6.
		{0x8b011863, "add x3, x3, x1, lsl #6", func(r *fakeRegs) { r.r[3], r.r[1] = 0x1000, 3 }, func(r *fakeRegs, m *fakeMem) bool {
			return r.r[3] == 0x1000+3*64
		}},
	} {
		if _, err := exec.LookPath("aarch64-linux-gnu-objdump"); err == nil {
			if got := gnuDisasm(t, a64Words(c.word), 0); got[0] != c.text {
				t.Errorf("%#08x is %q, want %q", c.word, got[0], c.text)
			}
		}
		m := newMem().poke(sp-0x40, make([]byte, 0x80))
		m.poke64(sp, 0x3333).poke64(sp+8, 0x4444).poke64(sp+16, 0x9999).poke64(sp+24, 0x5555)
		r := abRegs(sp, nil)
		r.r[10] = sp
		if c.in != nil {
			c.in(r)
		}
		err := a64Exec(a64Words(c.word), pTramp, r, m)
		if err != nil || !c.want(r, m) {
			t.Errorf("%s: %v, registers %+v", c.text, err, *r)
		}
	}
	// Where sp is the base and not a multiple of 16, the access faults.
	r := abRegs(sp+8, nil)
	if err := a64Exec(a64Words(0xa9bd13e3), pTramp, r, newMem().poke(sp-0x40, make([]byte, 0x80))); err == nil {
		t.Error("stp with sp not a multiple of 16 as its base ran")
	}
}

// TestBookCloserARM64 checks, with the GNU disassembler line by line as
// the Arm ARM reads them, the closer of a book and the entry and exit
// code of function 3 that call it: where they stop, what they save, and
// their rollback ranges; and the books the closer refuses.
func TestBookCloserARM64(t *testing.T) {
	b := Book{Offset: 0, Frames: 4, Funcs: 8, Table: abTable, Areas: abAreas, Closer: abCloserWord, Clock: 0x10000}
	closer, ok := ARM64.BookCloserCode(b)
	if !ok {
		t.Fatal("no closer")
	}
	entry, ok1 := ARM64.BookEntryCode(b, 3)
	exit, ok2 := ARM64.BookExitCode(b, 3, 0)
	exit16, ok3 := ARM64.BookExitCode(b, 3, 16)
	if !ok1 || !ok2 || !ok3 {
		t.Fatal("no entry or exit code with a closer")
	}
	// The book as TestBookCodeARM64's: the key at 32, the stack's
	// bounds at 40 and 48, the top at 64, the held time at 72; the first
	// frame after the root at 0x100, the figures at 0x1c0, function 3's
	// at 0x280. The closer reaches them from x16, B; its frame below
	// the next frame, x17, is at -64, the frame's stack pointer at -48
	// and its function at -24.
	lookup := []string{
		"mov x16, sp", "ubfx x16, x16, #12, #22",
		"mov x17, #0x1000", "movk x17, #0x7f00, lsl #32",
		"ldr w16, [x17, x16, lsl #2]",
		"mov x17, #0x100000", "movk x17, #0x7f00, lsl #32",
		"add x16, x17, x16",
	}
	// The closer's call: the key into the book, the closer's address
	// from the word at 0x7ff00000, and a branch to it, the return
	// address, the instruction after the BR, in x2.
	call := func(at int) []string {
		return []string{"str x1, [x16, #32]", "mov x1, #0x7ff00000", "ldr x1, [x1]", fmt.Sprintf("adr x2, %#x", at+20), "br x1"}
	}
	wantCloser := []string{
		"stp x3, x4, [sp, #-48]!", "stp x5, x6, [sp, #16]", "stp x7, x8, [sp, #32]", // 48 bytes below sp: x3 to x8 saved
		"ldr x4, [x16, #32]", "ldr x5, [x16, #40]", // 0xc: the key, the stack's low bound
		"ldr x6, [x16, #48]", "sub x6, x6, x5", // the high bound: the stack's size
		"sub x1, x4, x5", "cmp x1, x6, uxtx", "b.cs 0x12c", // the key not on the stack (below it too, unsigned): out
		"sub x1, x17, x16", "cmp x1, #0x100", "b.ls 0x12c", // 0x28, loop: the next frame the first after the root, no frame to close: out
		"ldur x1, [x17, #-48]", "cmp x1, x4, uxtx", "b.hi 0x12c", // the frame's stack pointer above the key: out
		"sub x1, x1, x5", "cmp x1, x6, uxtx", "b.cs 0x12c", // not on the stack: out
		"ldur x1, [x17, #-24]", "mov x3, #0x8", "cmp x1, x3, uxtx", "b.cs 0x12c", // its function: none the book knows, out
		"mov x3, #0x1c0", "add x3, x16, x3", "add x3, x3, x1, lsl #6", // its figures: 64 bytes each
		"add x7, x0, #0x0", // the time, kept
		// 0x6c: closed as the exit closes its call (TestBookCodeARM64's
		// lines; x8 the scratch where the exit uses x2, then x3, and x3
		// the figures' address where it uses x2):
		"sub x17, x17, #0x40", "sub x1, x17, x16", "str x1, [x16, #64]", // the top down a frame
		"ldr x1, [x17]", "sub x0, x0, x1", // the call's time,
		"ldr x1, [x16, #72]", "ldr x8, [x17, #24]", "sub x1, x1, x8", "sub x0, x0, x1", // less the time held since its entry
		"ldur x1, [x17, #-56]", "add x1, x1, x0", "stur x1, [x17, #-56]", // the caller's children
		"ldr x1, [x17, #32]", "add x1, x1, #0x1",
		"ldur x8, [x17, #-32]", "add x8, x8, x1", "stur x8, [x17, #-32]", // the caller's calls beneath
		"ldur x1, [x17, #-16]", "add x1, x1, #0x1", "stur x1, [x17, #-16]", // the caller's kids
		"ldr x1, [x17, #8]", "sub x1, x0, x1", // the own time
		"ldr x8, [x3]", "add x8, x8, #0x1", "str x8, [x3]", // one more call
		"ldr x8, [x3, #8]", "add x8, x8, x1", "str x8, [x3, #8]", // the own time
		"ldr x1, [x17, #48]", "ldr x8, [x3, #32]", "add x8, x8, x1", "str x8, [x3, #32]", // the kids
		"ldr x8, [x3, #24]", "subs x8, x8, #0x1", "str x8, [x3, #24]", // one call fewer open:
		"b.ne 0x124",                                               // others open, done
		"ldr x8, [x3, #16]", "add x8, x8, x0", "str x8, [x3, #16]", // the time with children
		"ldr x8, [x3, #40]", "add x8, x8, #0x1", "str x8, [x3, #40]", // one more outermost call
		"ldr x1, [x17, #32]", "ldr x8, [x3, #48]", "add x8, x8, x1", "str x8, [x3, #48]", // the calls beneath
		"add x0, x7, #0x0", "b 0x28", // 0x124: the time back, the next frame
		"ldp x5, x6, [sp, #16]", "ldp x7, x8, [sp, #32]", "ldp x3, x4, [sp], #48", // 0x12c, out: x3 to x8 back, sp too
		"ret x2", // to the book code, x17 the next frame
	}
	wantEntry := append(slices.Clip(lookup),
		"stp x0, x1, [x16]", "str x2, [x16, #16]", // 0x20: saved, x2 too, the closer's return
		"mrs x0, cntvct_el0", "ldr x17, [x16, #104]",
		"mul x1, x0, x17", "umulh x0, x0, x17", "extr x0, x0, x1, #32",
		"mov x17, #0x8", "movk x17, #0x1, lsl #16", "ldr w17, [x16, x17]", "ldr w1, [x16, #136]", // 0x3c: the check of the CPU
		"cmp w17, w1", "b.eq 0x5c", "str w17, [x16, #136]", "b 0xa8",
		"ldr x17, [x16, #64]",
		"cmp x17, #0x100", "b.cc 0xa8",
		"mov x1, #0x1c0",
		"cmp x17, x1, uxtx", "b.cs 0xa8",
		"add x17, x16, x17",
		"ldur x1, [x17, #-48]",
		"cmp sp, x1", "b.cc 0xac", // below the open call: to open a call
		"mov x1, sp") // 0x84: the key, sp: the frames at or below it closed
	wantEntry = append(append(wantEntry, call(0x88)...),
		"ldur x1, [x17, #-48]", "cmp sp, x1", "b.cc 0xac", // 0x9c: again
		"brk #0x0",                                                                // 0xa8: the stop
		"str x0, [x17]", "str xzr, [x17, #8]", "mov x1, sp", "str x1, [x17, #16]", // 0xac
		"ldr x1, [x16, #72]", "str x1, [x17, #24]",
		"str xzr, [x17, #32]", "str xzr, [x17, #48]",
		"mov x1, #0x3", "str x1, [x17, #40]",
		"add x17, x17, #0x40", "sub x1, x17, x16", "str x1, [x16, #64]", // the commit
		"ldr x0, [x16, #96]", "cmp x1, x0, uxtx", "b.ls 0xf0", // 0xe0
		"str x1, [x16, #96]",
		"mov x17, #0x280", "add x17, x16, x17", // 0xf0
		"ldr x0, [x17, #24]", "add x0, x0, #0x1", "str x0, [x17, #24]",
		"ldp x0, x1, [x16]", "ldr x2, [x16, #16]", // back, x2 too
	)
	wantExit := append(slices.Clip(lookup),
		"stp x0, x1, [x16]", "stp x2, x3, [x16, #16]",
		"isb", "mrs x0, cntvct_el0", "ldr x17, [x16, #104]",
		"mul x1, x0, x17", "umulh x0, x0, x17", "extr x0, x0, x1, #32",
		"mov x17, #0x8", "movk x17, #0x1, lsl #16", "ldr w17, [x16, x17]", "ldr w1, [x16, #136]", // 0x40: the check of the CPU
		"cmp w17, w1", "b.eq 0x60", "str w17, [x16, #136]", "b 0xb4",
		"str x0, [x16, #112]",
		"ldr x17, [x16, #64]",
		"cmp x17, #0x100", "b.cc 0xb4",
		"mov x1, #0x1c0",
		"cmp x17, x1, uxtx", "b.hi 0xb4",
		"add x17, x16, x17",
		"ldur x1, [x17, #-48]",
		"cmp sp, x1", "b.eq 0xb8", // the open call's: to close it
		"b.cc 0x188",       // deeper: nothing
		"sub x1, sp, #0x1") // 0x90: the key, one below sp: the frames below the exit's closed
	wantExit = append(append(wantExit, call(0x94)...),
		"ldur x1, [x17, #-48]", "cmp sp, x1", "b.eq 0xb8", // 0xa8: again, the open call's now
		"brk #0x0",                                                               // 0xb4: the stop
		"ldur x1, [x17, #-24]", "mov x2, #0x3", "cmp x1, x2, uxtx", "b.ne 0x188", // 0xb8: another function's call: nothing
		"sub x17, x17, #0x40", "sub x1, x17, x16", "str x1, [x16, #64]", // 0xc8: the commit
		"ldr x1, [x17]", "sub x0, x0, x1",
		"ldr x1, [x16, #72]", "ldr x2, [x17, #24]", "sub x1, x1, x2", "sub x0, x0, x1",
		"ldur x1, [x17, #-56]", "add x1, x1, x0", "stur x1, [x17, #-56]",
		"ldr x1, [x17, #32]", "add x1, x1, #0x1",
		"ldur x2, [x17, #-32]", "add x2, x2, x1", "stur x2, [x17, #-32]",
		"ldur x1, [x17, #-16]", "add x1, x1, #0x1", "stur x1, [x17, #-16]",
		"ldr x1, [x17, #8]", "sub x1, x0, x1",
		"mov x2, #0x280", "add x2, x16, x2",
		"ldr x3, [x2]", "add x3, x3, #0x1", "str x3, [x2]",
		"ldr x3, [x2, #8]", "add x3, x3, x1", "str x3, [x2, #8]",
		"ldr x1, [x17, #48]", "ldr x3, [x2, #32]", "add x3, x3, x1", "str x3, [x2, #32]",
		"ldr x3, [x2, #24]", "subs x3, x3, #0x1", "str x3, [x2, #24]",
		"b.ne 0x188",
		"ldr x3, [x2, #16]", "add x3, x3, x0", "str x3, [x2, #16]",
		"ldr x3, [x2, #40]", "add x3, x3, #0x1", "str x3, [x2, #40]",
		"ldr x1, [x17, #32]", "ldr x3, [x2, #48]", "add x3, x3, x1", "str x3, [x2, #48]",
		"ldp x0, x1, [x16]", "ldp x2, x3, [x16, #16]", // 0x188
	)
	if _, err := exec.LookPath("aarch64-linux-gnu-objdump"); err == nil {
		for _, c := range []struct {
			name string
			code []byte
			want []string
		}{{"closer", closer, wantCloser}, {"entry", entry.Code, wantEntry}, {"exit", exit.Code, wantExit}} {
			if got := gnuDisasm(t, c.code, 0); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("%s code:\n%s\nwant:\n%s", c.name, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		}
		// An exit where the stack pointer is the entry's plus 16 leaves
		// the key 17 below it, one below the entry's, and compares the
		// entry's again after the closer, then the open call's function.
		if got := gnuDisasm(t, exit16.Code, 0)[37:53]; !slices.Equal(got, append(append([]string{"sub x1, sp, #0x11"}, call(0x98)...),
			"ldur x1, [x17, #-48]", "sub x2, sp, #0x10", "cmp x2, x1, uxtx", "b.eq 0xc0", "brk #0x0",
			"ldur x1, [x17, #-24]", "mov x2, #0x3", "cmp x1, x2, uxtx", "b.ne 0x190", "sub x17, x17, #0x40")) {
			t.Errorf("exit 16 above the entry's stack pointer calls the closer with %q", got)
		}
	}

	// The entry saves x2 too, the closer's return address's register:
	// its saves end 4 bytes later than without a closer, and its stop
	// and commit 0x28 later, after the key, the call and the check made
	// again. The exit saves x2 already: its stop and commit are 0x24
	// later.
	checkBookShape(t, "entry", entry, 0xac, 0x28, 0xe0, bookSlots[:3])
	checkBookShape(t, "exit", exit, 0xb8, 0x28, 0xd4, bookSlots)

	// The books the closer cannot serve: those the entry and exit code
	// refuse, and one with no function (the closer needs no function of
	// its own, but a book of no figures has nothing to close).
	for _, c := range []struct {
		name string
		b    Book
	}{
		{"the root frame alone", Book{Frames: 1, Funcs: 8, Table: abTable, Areas: abAreas}},
		{"no stack table", Book{Frames: 4, Funcs: 8, Areas: abAreas}},
		{"no areas", Book{Frames: 4, Funcs: 8, Table: abTable}},
		{"an offset not a multiple of 16", Book{Offset: 8, Frames: 4, Funcs: 8, Table: abTable, Areas: abAreas}},
		{"no function", Book{Frames: 4, Table: abTable, Areas: abAreas}},
		{"the first frame past CMP's 12-bit immediate", Book{Offset: 4096 - BookFrames - BookFrameSize, Frames: 4, Funcs: 8, Table: abTable, Areas: abAreas}},
	} {
		if _, ok := ARM64.BookCloserCode(c.b); ok {
			t.Errorf("%s: a closer", c.name)
		}
	}
}

// abCloserThread is the thread of the closer's runs: its book b, with a
// closer, placed at pTramp, whose address the word at abCloserWord
// holds; its memory, abMem's, the stack's bounds written in the book;
// and its counter.
type abCloserThread struct {
	t      *testing.T
	b      Book
	closer []byte
	mem    *fakeMem
	ticks  uint64
}

// newCloserThread is a thread of book b whose stack is [lo, hi).
func newCloserThread(t *testing.T, b Book, lo, hi uint64) *abCloserThread {
	t.Helper()
	closer, ok := ARM64.BookCloserCode(b)
	if !ok {
		t.Fatal("no closer")
	}
	th := &abCloserThread{t: t, b: b, closer: closer, mem: abMem(b), ticks: 1000}
	th.mem.poke64(abCloserWord, pTramp)
	th.mem.poke64(abArea+b.Offset+BookStackLo, lo)
	th.mem.poke64(abArea+b.Offset+BookStackHi, hi)
	return th
}

// word is the book's word at offset off of the area; set writes it.
func (th *abCloserThread) word(off uint64) uint64 { return th.mem.peek64(abArea + off) }
func (th *abCloserThread) set(off, v uint64)      { th.mem.poke64(abArea+off, v) }

// words are the first seven words at offset off: a frame's, or a
// function's figures.
func (th *abCloserThread) words(off uint64) [7]uint64 {
	var w [7]uint64
	for i := range w {
		w[i] = th.word(off + 8*uint64(i))
	}
	return w
}

// run runs code, an entry's or an exit's, at sp, placed just after the
// closer, until it leaves its end or stops. It returns the thread's
// registers before and after, the time the code read (the instructions
// run before its MRS) and a64Exec's error.
func (th *abCloserThread) run(code []byte, sp uint64) (before, after *fakeRegs, read uint64, err error) {
	r := abRegs(sp, &th.ticks)
	r.pc = pTramp + uint64(len(th.closer))
	before, read = r.clone(), th.ticks+uint64(abIndex(code, 0xffffffe0, abMrsCnt))
	err = a64Exec(append(slices.Clip(th.closer), code...), pTramp, r, th.mem)
	return before, r, read, err
}

// goes runs code at sp, which must go on at its end with every register
// back but x16, x17 and the flags, and write nothing outside the book
// but, where the closer was called (called), the 48 bytes below sp. It
// returns the time the code read.
func (th *abCloserThread) goes(name string, code []byte, sp uint64, called bool) uint64 {
	th.t.Helper()
	old := th.mem.clone()
	before, r, read, err := th.run(code, sp)
	if err != nil {
		th.t.Fatalf("%s: %v", name, err)
	}
	want := before.clone()
	want.pc += uint64(len(code))
	r.r[16], r.r[17], r.flags = want.r[16], want.r[17], want.flags
	if *r != *want {
		th.t.Errorf("%s: registers after\n got %+v\nwant %+v", name, *r, *want)
	}
	th.outside(name, old, sp, called)
	return read
}

// stops runs code c at sp, which must stop at its breakpoint, x0 the
// time it read, the registers it saves in their slots and every other
// one but x16 and x17 as it was, having written nothing outside the
// book but, where called, the 48 bytes below sp. It returns the time.
func (th *abCloserThread) stops(name string, c BookCode, sp uint64, called bool) uint64 {
	th.t.Helper()
	old := th.mem.clone()
	before, r, read, err := th.run(c.Code, sp)
	var brk a64Break
	if !errors.As(err, &brk) || r.pc != brk.pc || brk.pc+4 != pTramp+uint64(len(th.closer)+c.Stop) {
		th.t.Fatalf("%s: %v, at %#x; want a stop at %#x", name, err, r.pc, pTramp+uint64(len(th.closer)+c.Stop)-4)
	}
	if r.r[0] != read {
		th.t.Errorf("%s: x0 %d at the stop, want %d, the time read", name, r.r[0], read)
	}
	for _, s := range c.Saved {
		if got := th.word(s.Offset); got != before.r[s.Reg] {
			th.t.Errorf("%s: x%d saved as %#x, want %#x", name, s.Reg, got, before.r[s.Reg])
		}
	}
	for i := len(c.Saved); i < len(r.r); i++ {
		if i != 16 && i != 17 && r.r[i] != before.r[i] {
			th.t.Errorf("%s: x%d %#x at the stop, %#x before", name, i, r.r[i], before.r[i])
		}
	}
	th.outside(name, old, sp, called)
	return read
}

// outside checks that nothing outside the book was written since old
// but, where called, the 48 bytes below sp, which hold x3 to x8, or,
// where the book keeps caller stacks, the 64 that hold x3 to x10.
func (th *abCloserThread) outside(name string, old *fakeMem, sp uint64, called bool) {
	th.t.Helper()
	want := old.clone()
	if called {
		thread := abRegs(sp, nil)
		saved := uint64(6)
		if th.b.Nodes > 0 {
			saved = 8
		}
		for i := range saved {
			want.poke64(sp-8*saved+8*i, thread.r[3+i])
		}
	}
	lo, hi := abArea+th.b.Offset, abArea+th.b.Offset+th.b.Size()
	for a, v := range th.mem.b {
		if (a < lo || a >= hi) && want.b[a] != v {
			th.t.Errorf("%s: %#x written outside the book", name, a)
			return
		}
	}
}

// abCloserBook is the book of the closer's runs: four functions, the
// closed ones d1, d2 and d3 (the last function, so that one of
// each closes) and e, whose entry calls the closer; or f, g and h.
var abCloserBook = Book{Offset: 0x40, Frames: 8, Funcs: 4, Table: abTable, Areas: abAreas, Closer: abCloserWord}

const (
	abD1, abD2, abE, abD3 = 0, 1, 2, 3
	abF, abG, abH         = 0, 1, 2
	// abSP0 is the stack pointer of the first entry of the closer's
	// runs; abAltSP one on another stack, below the thread's, where its
	// bounds are abStackLo and abStackHi.
	abSP0                = abSP - 0x100
	abAltSP              = abSP - 0x1800
	abStackLo, abStackHi = abSP - 0x1000, abSP + 0x1000
)

// abCloserCode is the entry code of each of book b's functions, and
// their exit code where the stack pointer is the entry's (the exits at
// the functions' own returns).
func abCloserCode(t *testing.T, b Book) (entries, exits []BookCode) {
	t.Helper()
	entries, exits = make([]BookCode, b.Funcs), make([]BookCode, b.Funcs)
	for f := range b.Funcs {
		var ok1, ok2 bool
		entries[f], ok1 = ARM64.BookEntryCode(b, f)
		exits[f], ok2 = ARM64.BookExitCode(b, f, 0)
		if !ok1 || !ok2 {
			t.Fatalf("no code of function %d", f)
		}
	}
	return entries, exits
}

// TestBookCloserRunsARM64 runs the closer in the A64 interpreter, where
// the counter counts the instructions run, called from an entry and from
// an exit. d1 calls d2, which calls itself, which calls d3, each a frame
// deeper, and d3 longjmps back above d1's entry, or to the stack pointer
// d1 was called at, whose caller calls e: e's entry has the closer close
// d3, d2 twice and d1 at the time it read, as their exits would have at
// that time, and opens e's call. f calls g, which leaves without its
// exit being seen, and f's exit, at the entry's stack pointer or 16
// above it, has the closer close g, and then closes f itself. No code
// stops, each puts back every register but x16 and x17, the stack
// pointer too, and the closer writes nothing outside the book but its
// 48 bytes below sp.
func TestBookCloserRunsARM64(t *testing.T) {
	b := abCloserBook
	entries, exits := abCloserCode(t, b)
	// The figures of earlier calls of each function, as different as can
	// be (none open), to which the closer must add.
	prior := func(f int) [7]uint64 {
		n := uint64(f + 1)
		return [7]uint64{10 * n, 1000*n + 1, 2000*n + 3, 0, 20*n + 1, 30*n + 2, 40*n + 3}
	}
	for _, c := range []struct {
		name       string
		sp, lo, hi uint64
	}{
		{"e above d1's entry", abSP0 + 16, abStackLo, abStackHi},
		{"e at d1's entry", abSP0, abStackLo, abStackHi},
		// The stack just holds the calls: from d3's stack pointer, on
		// it, to 16 above the key, e's stack pointer.
		{"e above d1's entry, the stack's bounds d3's stack pointer and 16 above e's", abSP0 + 16, abSP0 - 0x80, abSP0 + 0x20},
	} {
		th := newCloserThread(t, b, c.lo, c.hi)
		for f := range b.Funcs {
			for i, v := range prior(f) {
				th.set(b.FigureAt(f)+8*uint64(i), v)
			}
		}
		// The root's call made earlier calls: 777 ns, 3 of its own, 9
		// beneath it. PROFILE holds the thread 2 ns before d1's entry, 2
		// more before d2's, 1 between d2's second entry and d3's, 7 between
		// d3's and e's: a call's time is less what it held since the
		// call's entry.
		th.set(b.FrameAt(0)+FrameChildren, 777)
		th.set(b.FrameAt(0)+FrameKids, 3)
		th.set(b.FrameAt(0)+FrameBeneath, 9)
		th.set(b.Offset+BookHeld, 2)
		d1 := th.goes(c.name+": d1's entry", entries[abD1].Code, abSP0, false)
		// d1 made calls before d2's, closed as they ended: 40 ns, 2 calls
		// of its own, 5 beneath it.
		const ch1, kids1, beneath1 = 40, 2, 5
		th.set(b.FrameAt(1)+FrameChildren, ch1)
		th.set(b.FrameAt(1)+FrameKids, kids1)
		th.set(b.FrameAt(1)+FrameBeneath, beneath1)
		th.set(b.Offset+BookHeld, 4)
		d2 := th.goes(c.name+": d2's entry", entries[abD2].Code, abSP0-0x40, false)
		d22 := th.goes(c.name+": d2's entry again", entries[abD2].Code, abSP0-0x60, false)
		th.set(b.Offset+BookHeld, 5)
		d3 := th.goes(c.name+": d3's entry", entries[abD3].Code, abSP0-0x80, false)
		th.set(b.Offset+BookHeld, 12)
		e := th.goes(c.name+": e's entry", entries[abE].Code, c.sp, true)
		// Each call's time ends at e's reading, less what PROFILE held
		// since its entry. Each one's own time is its time less its
		// children's, its callee's time (and, for d1, its earlier calls');
		// d2's time with children is its outer call's time alone, one
		// recursion counted once; the kids are each call's one callee (and
		// d1's earlier ones); the calls beneath d2's outer call are two, d1's
		// three (and its earlier ones).
		t1, t2, t22, t3 := e-d1-10, e-d2-8, e-d22-8, e-d3-7
		plus := func(f int, d [7]uint64) [7]uint64 {
			p := prior(f)
			for i := range p {
				p[i] += d[i]
			}
			return p
		}
		for _, w := range []struct {
			f    int
			figs [7]uint64 // calls, own time, with children, open, kids, outermost calls, calls beneath
		}{
			{abD1, plus(abD1, [7]uint64{1, t1 - ch1 - t2, t1, 0, kids1 + 1, 1, beneath1 + 3})},
			{abD2, plus(abD2, [7]uint64{2, (t22 - t3) + (t2 - t22), t2, 0, 2, 1, 2})},
			{abD3, plus(abD3, [7]uint64{1, t3, t3, 0, 0, 1, 0})},
			{abE, plus(abE, [7]uint64{0, 0, 0, 1, 0, 0, 0})},
		} {
			if got := th.words(b.FigureAt(w.f)); got != w.figs {
				t.Errorf("%s: function %d's figures %v, want %v", c.name, w.f, got, w.figs)
			}
		}
		// d1's time with children is its earlier calls' and the own
		// times the closer added to d1, d2 and d3.
		added := func(f, word int) uint64 { return th.word(b.FigureAt(f)+uint64(word)) - prior(f)[word/8] }
		if incl, own := added(abD1, FigureInclusive), added(abD1, FigureSelf)+added(abD2, FigureSelf)+added(abD3, FigureSelf); incl != ch1+own {
			t.Errorf("%s: d1's time with children %d, not its earlier calls' %d and the own times' %d", c.name, incl, ch1, own)
		}
		// e's call is open in the frame d1's was: its time e's reading,
		// no children, its stack pointer, the 12 ns held, no calls
		// beneath, its function, no kids. The root's children are d1's
		// time more; it made one call more, five more beneath it.
		if got, want := th.words(b.FrameAt(1)), [7]uint64{e, 0, c.sp, 12, 0, abE, 0}; got != want {
			t.Errorf("%s: e's frame %v, want %v", c.name, got, want)
		}
		root := th.words(b.FrameAt(0))
		if got, want := [3]uint64{root[FrameChildren/8], root[FrameKids/8], root[FrameBeneath/8]}, [3]uint64{777 + t1, 3 + 1, 9 + beneath1 + 4}; got != want {
			t.Errorf("%s: the root's children, kids and calls beneath %v, want %v", c.name, got, want)
		}
		if top, deepest := th.word(b.Offset+BookTop), th.word(b.Offset+BookDeepest); top != b.FrameAt(2) || deepest != b.FrameAt(5) {
			t.Errorf("%s: top %#x, deepest %#x; want %#x, e's call open, and %#x", c.name, top, deepest, b.FrameAt(2), b.FrameAt(5))
		}
		if key := th.word(b.Offset + BookKey); key != c.sp {
			t.Errorf("%s: key %#x, want %#x, e's stack pointer", c.name, key, c.sp)
		}
	}

	// f's exit, where the stack pointer is the entry's plus 0 and 16:
	// PROFILE holds the thread 3 ns in g's call.
	for _, off := range []uint64{0, 16} {
		name := fmt.Sprintf("f's exit %d above its entry", off)
		exit, ok := ARM64.BookExitCode(b, abF, int(off))
		if !ok {
			t.Fatalf("%s: no code", name)
		}
		th := newCloserThread(t, b, abStackLo, abStackHi)
		f := th.goes(name+": f's entry", entries[abF].Code, abSP0, false)
		g := th.goes(name+": g's entry", entries[abG].Code, abSP0-0x40, false)
		th.set(b.Offset+BookHeld, 3)
		x := th.goes(name, exit.Code, abSP0+off, true)
		tf, tg := x-f-3, x-g-3
		for _, w := range []struct {
			f    int
			figs [7]uint64
		}{
			{abF, [7]uint64{1, tf - tg, tf, 0, 1, 1, 1}},
			{abG, [7]uint64{1, tg, tg, 0, 0, 1, 0}},
		} {
			if got := th.words(b.FigureAt(w.f)); got != w.figs {
				t.Errorf("%s: function %d's figures %v, want %v", name, w.f, got, w.figs)
			}
		}
		root := th.words(b.FrameAt(0))
		if got, want := [3]uint64{root[FrameChildren/8], root[FrameKids/8], root[FrameBeneath/8]}, [3]uint64{tf, 1, 2}; got != want {
			t.Errorf("%s: the root's children, kids and calls beneath %v, want %v", name, got, want)
		}
		if top, last, key := th.word(b.Offset+BookTop), th.word(b.Offset+BookLast), th.word(b.Offset+BookKey); top != b.FrameAt(1) || last != x || key != abSP0-1 {
			t.Errorf("%s: top %#x, last exit %d, key %#x; want %#x, %d, %#x", name, top, last, key, b.FrameAt(1), x, uint64(abSP0-1))
		}
	}
	// Exits and entries that need no closer do not call it: f's and g's
	// in turn, and g's exit as that of a deeper call that opened nothing.
	th := newCloserThread(t, b, abStackLo, abStackHi)
	th.goes("f's entry", entries[abF].Code, abSP0, false)
	th.goes("g's entry", entries[abG].Code, abSP0-0x40, false)
	th.goes("g's exit", exits[abG].Code, abSP0-0x40, false)
	th.goes("g's exit from a deeper call", exits[abG].Code, abSP0-0x80, false)
	th.goes("f's exit", exits[abF].Code, abSP0, false)
	if top, calls := th.word(b.Offset+BookTop), th.word(b.FigureAt(abG)+FigureCalls); top != b.FrameAt(1) || calls != 1 {
		t.Errorf("top %#x, g's calls %d; want %#x, 1", top, calls, b.FrameAt(1))
	}
}

// TestBookCloserStopsARM64 runs the closer where it must leave calls
// open, and the code that called it stops at its breakpoint for PROFILE,
// x0 the time it read: the stack's bounds unknown, a call on another
// stack, a key at the stack's high bound or above it, a frame just below
// its low bound, frames of no function the book knows, a root whose
// stack pointer was written over, and an exit whose own call was never
// opened. The closer writes nothing outside the book but the 48 bytes
// below sp, and, where it closes nothing, nothing in the book either:
// only the code's save slots, the key, and an exit's last exit's time
// change.
func TestBookCloserStopsARM64(t *testing.T) {
	b := abCloserBook
	entries, exits := abCloserCode(t, b)
	thread := abRegs(0, nil).r
	// nested enters d1, d2 and d3, each a frame deeper, and returns the
	// times they read.
	nested := func(th *abCloserThread, name string) (d1, d2, d3 uint64) {
		t.Helper()
		d1 = th.goes(name+": d1's entry", entries[abD1].Code, abSP0, false)
		d2 = th.goes(name+": d2's entry", entries[abD2].Code, abSP0-0x40, false)
		d3 = th.goes(name+": d3's entry", entries[abD3].Code, abSP0-0x80, false)
		return d1, d2, d3
	}
	// nothing checks that the code c, which stopped after the closer,
	// wrote nothing in the book since old but its save slots, the key
	// and, where last is set, the last exit's time, read.
	nothing := func(th *abCloserThread, name string, old *fakeMem, c BookCode, key uint64, last bool, read uint64) {
		t.Helper()
		want := old.clone()
		for _, s := range c.Saved {
			want.poke64(abArea+s.Offset, thread[s.Reg])
		}
		want.poke64(abArea+b.Offset+BookKey, key)
		if last {
			want.poke64(abArea+b.Offset+BookLast, read)
		}
		lo, hi := abArea+b.Offset, abArea+b.Offset+BookSize(b.Frames, b.Funcs)
		for a := lo; a < hi; a++ {
			if th.mem.b[a] != want.b[a] {
				t.Errorf("%s: the book written at %#x (offset %#x)", name, a, a-abArea)
				return
			}
		}
	}

	// Where the closer closes nothing, e's entry above d1's stops.
	for _, c := range []struct {
		name   string
		lo, hi uint64
		setup  func(th *abCloserThread)
		sp     uint64
	}{
		{"the stack's bounds unknown", 0, 0, nil, abSP0 + 16},
		{"d3 on another stack", abStackLo, abStackHi, func(th *abCloserThread) {
			th.goes("d1's entry", entries[abD1].Code, abSP0, false)
			th.goes("d3's entry on another stack", entries[abD3].Code, abAltSP, false)
		}, abSP0 + 16},
		{"the key the stack's high bound", abSP0 - 0x80, abSP0 + 16, nil, abSP0 + 16},
		{"the key above the stack", abSP0 - 0x80, abSP0 + 16, nil, abSP0 + 0x100},
		{"d3 16 below the stack's low bound", abSP0 - 0x70, abStackHi, nil, abSP0 + 16},
		{"d3 of function 4 of 4", abStackLo, abStackHi, func(th *abCloserThread) {
			nested(th, "d3 of function 4")
			th.set(b.FrameAt(3)+FrameFunc, uint64(b.Funcs))
		}, abSP0 + 16},
		{"d3 of function -1", abStackLo, abStackHi, func(th *abCloserThread) {
			nested(th, "d3 of function -1")
			th.set(b.FrameAt(3)+FrameFunc, ^uint64(0))
		}, abSP0 + 16},
	} {
		th := newCloserThread(t, b, c.lo, c.hi)
		if c.setup == nil {
			nested(th, c.name)
		} else {
			c.setup(th)
		}
		old := th.mem.clone()
		read := th.stops(c.name, entries[abE], c.sp, true)
		nothing(th, c.name, old, entries[abE], c.sp, false, read)
	}

	// An exit of f at its entry's stack pointer, the call below it g's on
	// another stack: the closer leaves it, and the exit stops.
	th := newCloserThread(t, b, abStackLo, abStackHi)
	th.goes("f's entry", entries[abF].Code, abSP0, false)
	th.goes("g's entry on another stack", entries[abG].Code, abAltSP, false)
	old := th.mem.clone()
	read := th.stops("f's exit above g's call on another stack", exits[abF], abSP0, true)
	nothing(th, "f's exit above g's call on another stack", old, exits[abF], abSP0-1, true, read)

	// d2 of function 4 of 4: the closer closes d3 and stops at d2, whose
	// children are d3's time now, the top its next frame.
	th = newCloserThread(t, b, abStackLo, abStackHi)
	_, _, d3 := nested(th, "d2 of function 4")
	th.set(b.FrameAt(2)+FrameFunc, uint64(b.Funcs))
	e := th.stops("d2 of function 4", entries[abE], abSP0+16, true)
	t3 := e - d3
	if got, want := th.words(b.FigureAt(abD3)), [7]uint64{1, t3, t3, 0, 0, 1, 0}; got != want {
		t.Errorf("d2 of function 4: d3's figures %v, want %v", got, want)
	}
	d2 := th.words(b.FrameAt(2))
	if got, want := [3]uint64{d2[FrameChildren/8], d2[FrameKids/8], d2[FrameBeneath/8]}, [3]uint64{t3, 1, 1}; got != want {
		t.Errorf("d2 of function 4: d2's children, kids and calls beneath %v, want %v", got, want)
	}
	if top := th.word(b.Offset + BookTop); top != b.FrameAt(3) {
		t.Errorf("d2 of function 4: top %#x, want %#x, d2's call open", top, b.FrameAt(3))
	}
	for _, f := range []int{abD1, abD2} {
		if got, want := th.words(b.FigureAt(f)), [7]uint64{0, 0, 0, 1, 0, 0, 0}; got != want {
			t.Errorf("d2 of function 4: function %d's figures %v, want %v, one call open", f, got, want)
		}
	}

	// The root's stack pointer written over, below e's: the closer closes
	// d1 and never the root, and e's entry stops.
	th = newCloserThread(t, b, abStackLo, abStackHi)
	th.set(b.FrameAt(0)+FrameSP, abSP0+0x200)
	d1 := th.goes("the root written over: d1's entry", entries[abD1].Code, abSP0, false)
	e = th.stops("the root written over", entries[abE], abSP0+0x300, true)
	if got, want := th.words(b.FigureAt(abD1)), [7]uint64{1, e - d1, e - d1, 0, 0, 1, 0}; got != want {
		t.Errorf("the root written over: d1's figures %v, want %v", got, want)
	}
	if got, want := th.words(b.FrameAt(0)), [7]uint64{0, e - d1, abSP0 + 0x200, 0, 1, 0, 1}; got != want || th.word(b.Offset+BookTop) != b.FrameAt(1) {
		t.Errorf("the root written over: the root's frame %v, want %v, the top %#x at it", got, want, th.word(b.Offset+BookTop))
	}

	// f's exit where f's call was never opened: the closer closes g's
	// call below it, and the exit stops at the root's.
	th = newCloserThread(t, b, abStackLo, abStackHi)
	g := th.goes("f's call not opened: g's entry", entries[abG].Code, abSP0-0x40, false)
	x := th.stops("f's exit, its call not opened", exits[abF], abSP0, true)
	if got, want := th.words(b.FigureAt(abG)), [7]uint64{1, x - g, x - g, 0, 0, 1, 0}; got != want {
		t.Errorf("f's call not opened: g's figures %v, want %v", got, want)
	}
	if top, last, calls := th.word(b.Offset+BookTop), th.word(b.Offset+BookLast), th.word(b.FigureAt(abF)+FigureCalls); top != b.FrameAt(1) || last != x || calls != 0 {
		t.Errorf("f's call not opened: top %#x, last exit %d, f's calls %d; want %#x, %d, 0", top, last, calls, b.FrameAt(1), x)
	}
}

// abAddNode adds to book b in m the node of a call of fn from node
// parent, as PROFILE adds one (books' addNode): the next node, its
// figures zero but for its key, in the first free slot from the key's
// (NodeSlot) on, the node written before the key. It returns the node,
// and how many slots an entry searches for it (1: the key's own).
func abAddNode(m *fakeMem, b Book, parent, fn int) (node, probes int) {
	key := NodeKeyOf(parent, fn)
	node = int(m.peek64(abArea + b.Offset + BookNodeCount))
	i := b.NodeSlot(key)
	for probes = 1; m.peek64(abArea+b.NodeTableAt()+BookNodeSlotSize*uint64(i)) != 0; probes++ {
		i = (i + 1) % b.NodeSlots()
	}
	at := abArea + b.NodeAt(node)
	m.poke(at, make([]byte, BookFigureSize))
	m.poke64(at+NodeKey, key)
	abSetSlot(m, b, i, key, node)
	m.poke64(abArea+b.Offset+BookNodeCount, uint64(node+1))
	return node, probes
}

// abSetSlot writes slot i of b's table of nodes in m: key, and node.
func abSetSlot(m *fakeMem, b Book, i int, key uint64, node int) {
	slot := abArea + b.NodeTableAt() + BookNodeSlotSize*uint64(i)
	m.poke64(slot+8, uint64(node)).poke64(slot, key)
}

// abNode is the figures of node n of b in m, its key the last word.
func abNode(m *fakeMem, b Book, n int) [BookFigureSize / 8]uint64 {
	var w [BookFigureSize / 8]uint64
	for i := range w {
		w[i] = m.peek64(abArea + b.NodeAt(n) + 8*uint64(i))
	}
	return w
}

// TestBookNodesCodeARM64 checks, with the GNU disassembler line by line
// as the Arm ARM reads them, the entry and exit code of function 3 and
// the closer of a book that keeps caller stacks (Book.Nodes), where they
// stop, what they save, their rollback ranges, and the books with nodes
// the code keeps and refuses.
func TestBookNodesCodeARM64(t *testing.T) {
	b := Book{Offset: 0, Frames: 4, Funcs: 8, Nodes: 100, Table: abTable, Areas: abAreas, Clock: 0x10000}
	// TestBookCodeARM64's book, with room for 100 nodes: 256 slots of 16
	// bytes (the power of two at least twice 100) at 0x3c0, after the
	// eight functions' figures (0x1c0 + 8*64), then the nodes' figures
	// at 0x13c0 (0x3c0 + 256*16), 64 bytes each. A frame's node is its
	// word 56, the frame below's at -8.
	if b.NodeSlots() != 256 || b.NodeTableAt() != 0x3c0 || b.NodeAt(0) != 0x13c0 || b.Size() != 0x13c0+100*64 {
		t.Fatalf("%d slots at %#x, nodes at %#x, %#x bytes", b.NodeSlots(), b.NodeTableAt(), b.NodeAt(0), b.Size())
	}
	entry, ok1 := ARM64.BookEntryCode(b, 3)
	exit, ok2 := ARM64.BookExitCode(b, 3, 0)
	closed := b
	closed.Closer = abCloserWord
	closer, ok3 := ARM64.BookCloserCode(closed)
	entryC, ok4 := ARM64.BookEntryCode(closed, 3)
	exitC, ok5 := ARM64.BookExitCode(closed, 3, 0)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		t.Fatal("no code of a book with nodes")
	}
	lookup := []string{
		"mov x16, sp", "ubfx x16, x16, #12, #22",
		"mov x17, #0x1000", "movk x17, #0x7f00, lsl #32",
		"ldr w16, [x17, x16, lsl #2]",
		"mov x17, #0x100000", "movk x17, #0x7f00, lsl #32",
		"add x16, x17, x16",
	}
	wantEntry := append(slices.Clip(lookup),
		"stp x0, x1, [x16]", "stp x2, x3, [x16, #16]", // 0x20: saved, x2 and x3 too, the search's
		"mrs x0, cntvct_el0", "ldr x17, [x16, #104]", // 0x28: the time
		"mul x1, x0, x17", "umulh x0, x0, x17", "extr x0, x0, x1, #32",
		"mov x17, #0x8", "movk x17, #0x1, lsl #16", "ldr w17, [x16, x17]", "ldr w1, [x16, #136]", // 0x3c: the check of the CPU
		"cmp w17, w1", "b.eq 0x5c", "str w17, [x16, #136]", "b 0x84",
		"ldr x17, [x16, #64]",
		"cmp x17, #0x100", "b.cc 0x84",
		"mov x1, #0x1c0",
		"cmp x17, x1, uxtx", "b.cs 0x84",
		"add x17, x16, x17",
		"ldur x1, [x17, #-48]",
		"cmp sp, x1", "b.cc 0x88",
		"brk #0x0",                                                                // 0x84: the stop
		"str x0, [x17]", "str xzr, [x17, #8]", "mov x1, sp", "str x1, [x17, #16]", // 0x88: the frame, as without nodes
		"ldr x1, [x16, #72]", "str x1, [x17, #24]",
		"str xzr, [x17, #32]", "str xzr, [x17, #48]",
		"mov x1, #0x3", "str x1, [x17, #40]", // the function, left in x1
		"ldur x0, [x17, #-8]", "orr x1, x1, x0, lsl #32", // 0xb0: the caller's node (x0 free: the time is in the frame): the key, node << 32 | 3
		"mov x2, #0x7c15", "movk x2, #0x7f4a, lsl #16", // NodeHash, 0x9e3779b97f4a7c15, 16 bits a move,
		"movk x2, #0x79b9, lsl #32", "movk x2, #0x9e37, lsl #48",
		"mul x2, x1, x2",                    // 0xc8: the key times it, the low 64 bits,
		"lsr x2, x2, #56", "lsl x2, x2, #4", // their top 8 bits (256 slots), times 16: the key's slot's offset
		"mov x3, #0x3c0", "add x3, x16, x3", // the table
		"ldr x0, [x3, x2]", "cmp x0, x1, uxtx", "b.eq 0x138", // 0xdc: the slot's key the call's: found
		"cbz x0, 0x100",                                     // 0xe8: a free slot: the node missing
		"add x2, x2, #0x10", "and x2, x2, #0xfff", "b 0xdc", // the next slot, past the last the first (4096 bytes of slots)
		"ldr x0, [x17]", "b 0x84", // 0xf8: full: the time back into x0, to the stop
		"add x2, x3, x2", "ldr x0, [x16, #80]", // 0x100: missing: the slot's address; the count, the next node
		"mov x3, #0x64", "cmp x0, x3, uxtx", "b.cs 0xf8", // 100 nodes or more in use: the table full
		"add x3, x0, #0x1", "str x3, [x16, #80]", // 0x114: the node taken, the count one more first
		"str x0, [x2, #8]",                                             // the slot's node
		"mov x3, #0x13f8", "add x3, x3, x0, lsl #6", "add x3, x16, x3", // 0x120: its key's word, 0x13c0 + 56 + 64 a node
		"str x1, [x3]", "str x1, [x2]", "b 0x13c", // 0x12c: the key in the node, then in the slot: found from now on
		"add x2, x3, x2",                         // 0x138: found: the slot's address
		"ldr x1, [x2, #8]", "str x1, [x17, #56]", // 0x13c: the slot's node, the frame's
		"add x17, x17, #0x40", "sub x1, x17, x16", "str x1, [x16, #64]", // 0x144: the commit
		"ldr x0, [x16, #96]", "cmp x1, x0, uxtx", "b.ls 0x160", // 0x150
		"str x1, [x16, #96]",
		"mov x17, #0x280", "add x17, x16, x17", // 0x160
		"ldr x0, [x17, #24]", "add x0, x0, #0x1", "str x0, [x17, #24]",
		"ldp x0, x1, [x16]", "ldp x2, x3, [x16, #16]", // back, x2 and x3 too
	)
	wantExit := append(slices.Clip(lookup),
		"stp x0, x1, [x16]", "stp x2, x3, [x16, #16]",
		"isb", "mrs x0, cntvct_el0", "ldr x17, [x16, #104]",
		"mul x1, x0, x17", "umulh x0, x0, x17", "extr x0, x0, x1, #32",
		"mov x17, #0x8", "movk x17, #0x1, lsl #16", "ldr w17, [x16, x17]", "ldr w1, [x16, #136]", // 0x40: the check of the CPU
		"cmp w17, w1", "b.eq 0x60", "str w17, [x16, #136]", "b 0x90",
		"str x0, [x16, #112]",
		"ldr x17, [x16, #64]",
		"cmp x17, #0x100", "b.cc 0x90",
		"mov x1, #0x1c0",
		"cmp x17, x1, uxtx", "b.hi 0x90",
		"add x17, x16, x17",
		"ldur x1, [x17, #-48]",
		"cmp sp, x1", "b.eq 0x94",
		"b.cc 0x1d0",
		"brk #0x0",                                                               // 0x90: the stop
		"ldur x1, [x17, #-24]", "mov x2, #0x3", "cmp x1, x2, uxtx", "b.ne 0x1d0", // 0x94: another function's call: nothing, its node not read
		"ldur x3, [x17, #-8]", "sub x3, x3, #0x2", // 0xa4: the call's node less the first's (2), in x3:
		"mov x2, #0x62", "cmp x3, x2, uxtx", "b.cs 0x90", // 98 or more, unsigned (node 0, the root's 1, 100 on): to the stop, before the commit
		"sub x17, x17, #0x40", "sub x1, x17, x16", "str x1, [x16, #64]", // 0xb8: the commit
		"ldr x1, [x17]", "sub x0, x0, x1", // 0xc4: closed as without nodes (x2 the scratch, x3 kept)
		"ldr x1, [x16, #72]", "ldr x2, [x17, #24]", "sub x1, x1, x2", "sub x0, x0, x1",
		"ldur x1, [x17, #-56]", "add x1, x1, x0", "stur x1, [x17, #-56]",
		"ldr x1, [x17, #32]", "add x1, x1, #0x1",
		"ldur x2, [x17, #-32]", "add x2, x2, x1", "stur x2, [x17, #-32]",
		"ldur x1, [x17, #-16]", "add x1, x1, #0x1", "stur x1, [x17, #-16]",
		"ldr x1, [x17, #8]", "sub x1, x0, x1", // the own time
		"mov x2, #0x1440", "add x2, x16, x2", "add x2, x2, x3, lsl #6", // 0x110: the node's figures, 64 bytes each from node 2's, 0x13c0 + 2*64
		"ldr x3, [x2]", "add x3, x3, #0x1", "str x3, [x2]", // one more call
		"ldr x3, [x2, #8]", "add x3, x3, x1", "str x3, [x2, #8]", // the own time
		"ldr x3, [x2, #16]", "add x3, x3, x0", "str x3, [x2, #16]", // the time with children: a node's call is its outermost
		"ldr x1, [x17, #48]", "ldr x3, [x2, #32]", "add x3, x3, x1", "str x3, [x2, #32]", // the kids
		"ldr x1, [x17, #32]", "ldr x3, [x2, #48]", "add x3, x3, x1", "str x3, [x2, #48]", // the calls beneath
		"ldr x1, [x17, #8]", "sub x1, x0, x1", // 0x160: the own time again
		"mov x2, #0x280", "add x2, x16, x2", // function 3's figures, as without nodes
		"ldr x3, [x2]", "add x3, x3, #0x1", "str x3, [x2]",
		"ldr x3, [x2, #8]", "add x3, x3, x1", "str x3, [x2, #8]",
		"ldr x1, [x17, #48]", "ldr x3, [x2, #32]", "add x3, x3, x1", "str x3, [x2, #32]",
		"ldr x3, [x2, #24]", "subs x3, x3, #0x1", "str x3, [x2, #24]",
		"b.ne 0x1d0",
		"ldr x3, [x2, #16]", "add x3, x3, x0", "str x3, [x2, #16]",
		"ldr x3, [x2, #40]", "add x3, x3, #0x1", "str x3, [x2, #40]",
		"ldr x1, [x17, #32]", "ldr x3, [x2, #48]", "add x3, x3, x1", "str x3, [x2, #48]",
		"ldp x0, x1, [x16]", "ldp x2, x3, [x16, #16]", // 0x1d0
	)
	wantCloser := []string{
		"stp x3, x4, [sp, #-64]!", "stp x5, x6, [sp, #16]", "stp x7, x8, [sp, #32]", "stp x9, x10, [sp, #48]", // 64 bytes below sp: x3 to x10
		"ldr x4, [x16, #32]", "ldr x5, [x16, #40]", // 0x10
		"ldr x6, [x16, #48]", "sub x6, x6, x5",
		"sub x1, x4, x5", "cmp x1, x6, uxtx", "b.cs 0x194",
		"sub x1, x17, x16", "cmp x1, #0x100", "b.ls 0x194", // 0x2c: loop
		"ldur x1, [x17, #-48]", "cmp x1, x4, uxtx", "b.hi 0x194",
		"sub x1, x1, x5", "cmp x1, x6, uxtx", "b.cs 0x194",
		"ldur x1, [x17, #-24]", "mov x3, #0x8", "cmp x1, x3, uxtx", "b.cs 0x194", // its function
		"ldur x9, [x17, #-8]", "sub x9, x9, #0x2", // 0x60: its node less the first's (2):
		"mov x3, #0x62", "cmp x9, x3, uxtx", "b.cs 0x194", // 98 or more, unsigned (node 0, 1, 100 on), out
		"mov x3, #0x1440", "add x3, x16, x3", "add x9, x3, x9, lsl #6", // its node's figures, in x9, from node 2's
		"mov x3, #0x1c0", "add x3, x16, x3", "add x3, x3, x1, lsl #6", // 0x80: its function's
		"add x7, x0, #0x0",
		"sub x17, x17, #0x40", "sub x1, x17, x16", "str x1, [x16, #64]", // 0x90: closed
		"ldr x1, [x17]", "sub x0, x0, x1",
		"ldr x1, [x16, #72]", "ldr x8, [x17, #24]", "sub x1, x1, x8", "sub x0, x0, x1",
		"ldur x1, [x17, #-56]", "add x1, x1, x0", "stur x1, [x17, #-56]",
		"ldr x1, [x17, #32]", "add x1, x1, #0x1",
		"ldur x8, [x17, #-32]", "add x8, x8, x1", "stur x8, [x17, #-32]",
		"ldur x1, [x17, #-16]", "add x1, x1, #0x1", "stur x1, [x17, #-16]",
		"ldr x1, [x17, #8]", "sub x1, x0, x1",
		"ldr x8, [x9]", "add x8, x8, #0x1", "str x8, [x9]", // 0xe8: the node's figures, x8 the scratch
		"ldr x8, [x9, #8]", "add x8, x8, x1", "str x8, [x9, #8]",
		"ldr x8, [x9, #16]", "add x8, x8, x0", "str x8, [x9, #16]",
		"ldr x10, [x17, #48]", "ldr x8, [x9, #32]", "add x8, x8, x10", "str x8, [x9, #32]", // the kids, read into x10: x1 kept
		"ldr x10, [x17, #32]", "ldr x8, [x9, #48]", "add x8, x8, x10", "str x8, [x9, #48]", // the calls beneath
		"ldr x8, [x3]", "add x8, x8, #0x1", "str x8, [x3]", // 0x12c: the function's
		"ldr x8, [x3, #8]", "add x8, x8, x1", "str x8, [x3, #8]",
		"ldr x1, [x17, #48]", "ldr x8, [x3, #32]", "add x8, x8, x1", "str x8, [x3, #32]",
		"ldr x8, [x3, #24]", "subs x8, x8, #0x1", "str x8, [x3, #24]",
		"b.ne 0x18c",
		"ldr x8, [x3, #16]", "add x8, x8, x0", "str x8, [x3, #16]",
		"ldr x8, [x3, #40]", "add x8, x8, #0x1", "str x8, [x3, #40]",
		"ldr x1, [x17, #32]", "ldr x8, [x3, #48]", "add x8, x8, x1", "str x8, [x3, #48]",
		"add x0, x7, #0x0", "b 0x2c", // 0x18c
		"ldp x5, x6, [sp, #16]", "ldp x7, x8, [sp, #32]", "ldp x9, x10, [sp, #48]", "ldp x3, x4, [sp], #64", // 0x194, out
		"ret x2",
	}
	if _, err := exec.LookPath("aarch64-linux-gnu-objdump"); err == nil {
		for _, c := range []struct {
			name string
			code []byte
			want []string
		}{{"entry", entry.Code, wantEntry}, {"exit", exit.Code, wantExit}, {"closer", closer, wantCloser}} {
			if got := gnuDisasm(t, c.code, 0); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("%s code:\n%s\nwant:\n%s", c.name, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		}
		// With a closer, the entry saves x2 with x3, and searches
		// after the closer's call and the check made again, 0x24 later;
		// the exit checks its function and its node after them, 0x24
		// later too.
		got := gnuDisasm(t, entryC.Code, 0)
		if !slices.Equal(got[8:10], wantEntry[8:10]) || !slices.Equal(got[len(got)-2:], wantEntry[len(wantEntry)-2:]) ||
			!slices.Equal(got[(0x84+0x24)/4:(0x144+0x24)/4], slices.Concat([]string{"brk #0x0"}, wantEntry[0x88/4:0xb0/4],
				[]string{"ldur x0, [x17, #-8]", "orr x1, x1, x0, lsl #32",
					"mov x2, #0x7c15", "movk x2, #0x7f4a, lsl #16", "movk x2, #0x79b9, lsl #32", "movk x2, #0x9e37, lsl #48",
					"mul x2, x1, x2", "lsr x2, x2, #56", "lsl x2, x2, #4", "mov x3, #0x3c0", "add x3, x16, x3",
					"ldr x0, [x3, x2]", "cmp x0, x1, uxtx", "b.eq 0x15c", "cbz x0, 0x124",
					"add x2, x2, #0x10", "and x2, x2, #0xfff", "b 0x100", "ldr x0, [x17]", "b 0xa8",
					"add x2, x3, x2", "ldr x0, [x16, #80]", "mov x3, #0x64", "cmp x0, x3, uxtx", "b.cs 0x11c",
					"add x3, x0, #0x1", "str x3, [x16, #80]", "str x0, [x2, #8]",
					"mov x3, #0x13f8", "add x3, x3, x0, lsl #6", "add x3, x16, x3",
					"str x1, [x3]", "str x1, [x2]", "b 0x160",
					"add x2, x3, x2", "ldr x1, [x2, #8]", "str x1, [x17, #56]"})) {
			t.Errorf("entry with a closer:\n%s", strings.Join(got, "\n"))
		}
		if got := gnuDisasm(t, exitC.Code, 0)[0xb4/4 : 0xdc/4]; !slices.Equal(got, []string{
			"brk #0x0", "ldur x1, [x17, #-24]", "mov x2, #0x3", "cmp x1, x2, uxtx", "b.ne 0x1f4",
			"ldur x3, [x17, #-8]", "sub x3, x3, #0x2", "mov x2, #0x62", "cmp x3, x2, uxtx", "b.cs 0xb4",
		}) {
			t.Errorf("exit with a closer checks its node with %q", got)
		}
	}

	checkBookShape(t, "entry", entry, 0x88, 0x28, 0x150, bookSlots)
	checkBookShape(t, "exit", exit, 0x94, 0x28, 0xc4, bookSlots)
	checkBookShape(t, "entry with a closer", entryC, 0xac, 0x28, 0x174, bookSlots)
	checkBookShape(t, "exit with a closer", exitC, 0xb8, 0x28, 0xe8, bookSlots)

	// The books with nodes: as many as 2^24, their table of 2^25
	// slots masked with 2^29-1, within 4 GiB; not 2^26, past it; and
	// the books refused without nodes.
	big := Book{Frames: 4, Funcs: 8, Nodes: 1 << 24, Table: abTable, Areas: abAreas}
	if entry, ok := ARM64.BookEntryCode(big, 3); !ok {
		t.Error("2^24 nodes refused")
	} else if _, err := exec.LookPath("aarch64-linux-gnu-objdump"); err == nil {
		got := gnuDisasm(t, entry.Code, 0)
		if !slices.Contains(got, "lsr x2, x2, #39") || !slices.Contains(got, "and x2, x2, #0x1fffffff") {
			t.Errorf("2^25 slots:\n%s", strings.Join(got, "\n"))
		}
	}
	for _, c := range []struct {
		name string
		b    Book
	}{
		{"2^26 nodes, past 4 GiB", Book{Frames: 4, Funcs: 8, Nodes: 1 << 26, Table: abTable, Areas: abAreas}},
		{"the root frame alone", Book{Frames: 1, Funcs: 8, Nodes: 100, Table: abTable, Areas: abAreas}},
		{"no stack table", Book{Frames: 4, Funcs: 8, Nodes: 100, Areas: abAreas}},
		{"an offset not a multiple of 16", Book{Offset: 8, Frames: 4, Funcs: 8, Nodes: 100, Table: abTable, Areas: abAreas}},
		{"the save slots past STP's reach", Book{Offset: 0x1f0, Frames: 4, Funcs: 8, Nodes: 100, Table: abTable, Areas: abAreas}},
	} {
		_, ok1 := ARM64.BookEntryCode(c.b, 3)
		_, ok2 := ARM64.BookExitCode(c.b, 3, 0)
		_, ok3 := ARM64.BookCloserCode(c.b)
		if ok1 || ok2 || ok3 {
			t.Errorf("%s: code (entry %v, exit %v, closer %v)", c.name, ok1, ok2, ok3)
		}
	}
}

// TestA64ExecBookNodeInstructions checks the interpreter's instructions
// that only the search for a node and the closer's node use, each word
// written out from the Arm ARM (C6.2) and checked with the GNU
// disassembler: ORR (shifted register), LDR (register), LSL and LSR
// (UBFM), AND (immediate), CBZ, B back and on, ADD (shifted register)
// into another register, MOVK of the top 16 bits and MUL's low 64 bits
// (NodeHash's), and SUB (immediate) below zero (the node check's).
func TestA64ExecBookNodeInstructions(t *testing.T) {
	const sp = abSP - 0x100
	for _, c := range []struct {
		word uint32
		text string
		in   func(r *fakeRegs)
		want func(r *fakeRegs) bool
	}{
		// ORR (shifted register): 1 01 01010 shift 00 (LSL) N 0 Rm imm6
		// Rn Rd; Rn 31 is xzr (MOV).
		{0xaa008021, "orr x1, x1, x0, lsl #32", func(r *fakeRegs) { r.r[0], r.r[1] = 0xffffffff00000005, 3 }, func(r *fakeRegs) bool {
			return r.r[1] == 0x500000003
		}},
		{0xaa0603e5, "mov x5, x6", nil, func(r *fakeRegs) bool { return r.r[5] == r.r[6] }},
		// LDR (register), 64-bit: 11 111 0 00 01 1 Rm option S 10 Rn Rt,
		// option 011 (LSL), S 0: no shift, 1: 3.
		{0xf8626860, "ldr x0, [x3, x2]", func(r *fakeRegs) { r.r[3], r.r[2] = sp-0x20, 0x28 }, func(r *fakeRegs) bool { return r.r[0] == 0x9999 }},
		{0xf8627860, "ldr x0, [x3, x2, lsl #3]", func(r *fakeRegs) { r.r[3], r.r[2] = sp-0x20, 6 }, func(r *fakeRegs) bool { return r.r[0] == 0x5555 }},
		// UBFM: 1 10 100110 N 1 immr imms Rn Rd. LSL #4 is immr 60, imms
		// 59: bits 59-0 placed at bit 4; LSR #56 is immr 56, imms 63.
		{0xd37cec42, "lsl x2, x2, #4", func(r *fakeRegs) { r.r[2] = 0xf000000000000021 }, func(r *fakeRegs) bool { return r.r[2] == 0x210 }},
		{0xd378fc42, "lsr x2, x2, #56", func(r *fakeRegs) { r.r[2] = 0xa500000000000021 }, func(r *fakeRegs) bool { return r.r[2] == 0xa5 }},
		// AND (immediate): 1 00 100100 N 1 immr 0 imms 11 Rn Rd: 12 ones.
		{0x92402c42, "and x2, x2, #0xfff", func(r *fakeRegs) { r.r[2] = 0x1010 }, func(r *fakeRegs) bool { return r.r[2] == 0x10 }},
		// CBZ: 1 011010 0 imm19 Rt, imm19 2: 8 bytes on where Xt is 0
		// (all 64 bits), else the next instruction.
		{0xb4000040, "cbz x0, 0x8", func(r *fakeRegs) { r.r[0] = 0 }, func(r *fakeRegs) bool { return r.pc == pTramp+8 }},
		{0xb4000040, "cbz x0, 0x8", func(r *fakeRegs) { r.r[0] = 1 << 32 }, func(r *fakeRegs) bool { return r.pc == pTramp+4 }},
		// B: 000101 imm26, imm26 -1: one instruction back; 2: two on.
		{0x17ffffff, "b 0xfffffffffffffffc", nil, func(r *fakeRegs) bool { return r.pc == pTramp-4 }},
		{0x14000002, "b 0x8", nil, func(r *fakeRegs) bool { return r.pc == pTramp+8 }},
		// MOVK (64-bit): 1 11 100101 hw imm16 Rd, hw 3: bits 63-48
		// replaced, the others kept.
		{0xf2f3c6e2, "movk x2, #0x9e37, lsl #48", func(r *fakeRegs) { r.r[2] = 0xffff79b97f4a7c15 }, func(r *fakeRegs) bool {
			return r.r[2] == NodeHash
		}},
		// MUL (MADD, Ra xzr): 1 00 11011 000 Rm 0 11111 Rn Rd: the low 64
		// bits of the product.
		{0x9b027c22, "mul x2, x1, x2", func(r *fakeRegs) { r.r[1], r.r[2] = NodeKeyOf(RootNode, 1), NodeHash }, func(r *fakeRegs) bool {
			return r.r[2] == 0x1d81f5ce7f4a7c15
		}},
		// SUB (immediate): 1 1 0 100010 0 imm12 Rn Rd: 0 less 2 is
		// 2^64-2.
		{0xd1000863, "sub x3, x3, #0x2", func(r *fakeRegs) { r.r[3] = 0 }, func(r *fakeRegs) bool { return r.r[3] == 1<<64-2 }},
		// ADD (shifted register), LSL #6, into another register.
		{0x8b091869, "add x9, x3, x9, lsl #6", func(r *fakeRegs) { r.r[3], r.r[9] = 0x1000, 5 }, func(r *fakeRegs) bool {
			return r.r[9] == 0x1000+5*64
		}},
	} {
		if _, err := exec.LookPath("aarch64-linux-gnu-objdump"); err == nil {
			if got := gnuDisasm(t, a64Words(c.word), 0); got[0] != c.text {
				t.Errorf("%#08x is %q, want %q", c.word, got[0], c.text)
			}
		}
		m := newMem().poke(sp-0x40, make([]byte, 0x80))
		m.poke64(sp, 0x3333).poke64(sp+8, 0x9999).poke64(sp+16, 0x5555)
		r := abRegs(sp, nil)
		if c.in != nil {
			c.in(r)
		}
		if err := a64Exec(a64Words(c.word), pTramp, r, m); err != nil || !c.want(r) {
			t.Errorf("%s: %v, registers %+v", c.text, err, *r)
		}
	}
	// LDR (register) with an extended register (option 010, UXTW) is not
	// emulated.
	if _, err := exec.LookPath("aarch64-linux-gnu-objdump"); err == nil {
		if got := gnuDisasm(t, a64Words(0xf8624860), 0); got[0] != "ldr x0, [x3, w2, uxtw]" {
			t.Errorf("0xf8624860 is %q", got[0])
		}
	}
	if err := a64Exec(a64Words(0xf8624860), pTramp, abRegs(sp, nil), newMem()); err == nil {
		t.Error("ldr x0, [x3, w2, uxtw] ran")
	}
}

// abNodeBook is the book of the runs with caller stacks: as
// TestBookCodeRunsARM64's, with room for 8 nodes, 16 slots.
var abNodeBook = Book{Offset: 0x40, Frames: 16, Funcs: 3, Nodes: 8, Table: abTable, Areas: abAreas}

// abNodeCode is the entry and exit code of each of b's functions, which
// must be as long as each other's.
func abNodeCode(t *testing.T, b Book) (entries, exits []BookCode) {
	t.Helper()
	entries, exits = make([]BookCode, b.Funcs), make([]BookCode, b.Funcs)
	for f := range b.Funcs {
		var ok1, ok2 bool
		entries[f], ok1 = ARM64.BookEntryCode(b, f)
		exits[f], ok2 = ARM64.BookExitCode(b, f, 0)
		if !ok1 || !ok2 {
			t.Fatalf("no code of function %d", f)
		}
		if len(entries[f].Code) != len(entries[0].Code) || len(exits[f].Code) != len(exits[0].Code) {
			t.Fatalf("function %d's code not as long as function 0's", f)
		}
	}
	return entries, exits
}

// abSearchLeft is how many instructions of the entry's search for its
// node (TestBookNodesCodeARM64) a search that finds it in the key's
// slot does not run: the way to the next slot (cbz, add, and, b), to the
// stop (ldr, b), and the node's adding (add, ldr, mov, cmp, b.hs, add,
// str, str, mov, add, add, str, str, b: each move one instruction in
// abNodeBook); abAddLeft how many a search that adds it in the key's
// slot does not run: the way to the next slot past the CBZ (add, and,
// b), to the stop (ldr, b), and the found node's ADD; abSearchSlot how
// many more either runs for each slot more searched (ldr, cmp, b.eq,
// cbz, add, and, b).
const abSearchLeft, abAddLeft, abSearchSlot = 20, 6, 7

// abHomes are the slots of abNodeBook's table of 16 where the searches
// of TestBookNodesRunsARM64's keys start, worked out by hand: the top 4
// bits of key × 0x9e3779b97f4a7c15 (mod 2^64). The key 1<<32 (a from
// the root) times it is 0x7f4a7c15 << 32: slot 7.
var abHomes = map[uint64]int{
	NodeKeyOf(RootNode, 0): 7,  // a
	NodeKeyOf(2, 1):        9,  // a b
	NodeKeyOf(RootNode, 2): 11, // c
	NodeKeyOf(4, 2):        3,  // c c
	NodeKeyOf(5, 2):        11, // c c c: c's slot, taken; the next
}

// TestBookNodesRunsARM64 runs the code of a book that keeps caller
// stacks in the A64 interpreter, where the counter counts the
// instructions run: TestBookCodeRunsARM64's a calling b twice and c
// calling itself to a depth of three. First with their nodes in the
// table as PROFILE adds them: the code adds no node and changes no
// slot. Then with the table empty (the root's node alone): each first
// call of a path adds its node, as PROFILE would have, in the order
// they are met (a, a b, c, c c, c c c: nodes 2 to 6), the count one
// more each, the node's key in its last word, the slot the search
// started at the key's (abHomes) or the first free after it keyed with
// it; b's second call finds its node. Either way the functions' figures
// are as they are without nodes, and each node has its calls' figures,
// exactly: where a path is its function's only one, the function's.
func TestBookNodesRunsARM64(t *testing.T) {
	const fa, fb, fc = 0, 1, 2
	b := abNodeBook
	entries, exits := abNodeCode(t, b)
	entry, exit := entries[fb], exits[fb]
	entryPre, exitPre := uint64(abIndex(entry.Code, 0xffffffe0, abMrsCnt)), uint64(abIndex(exit.Code, 0xffffffe0, abMrsCnt))
	// The instructions of a call's time and outside it, as
	// TestBookCodeRunsARM64's: an entry runs, from its reading of the
	// counter on, all but the BRK, the store of a new deepest top and
	// what its search does not run (rest); an exit that closes an
	// outermost call all but the B.LO and the BRK, and one that closes a
	// recursion's inner call, to its B.NE, not what follows, but for the
	// two LDPs at the end. (The book has no clock: no check of the CPU.)
	exitRest := uint64(len(exit.Code)/4) - exitPre - 2
	bne := -1
	for i := 0; i < len(exit.Code); i += 4 {
		if binary.LittleEndian.Uint32(exit.Code[i:])&0xff00001f == 0x54000000|condNE {
			bne = i / 4
		}
	}
	exitInner := exitRest - (uint64(len(exit.Code)/4) - 2 - uint64(bne) - 1)
	at := func(off uint64) uint64 { return abArea + off }
	// The nodes as PROFILE adds them: a's and c's from the root, b's
	// from a's, c's from c's twice; a search finds each in the slot it
	// was added to, past probes-1 slots.
	profile := abMem(b)
	type node struct{ n, probes int }
	add := func(parent, fn int) node { n, p := abAddNode(profile, b, parent, fn); return node{n, p} }
	na := add(RootNode, fa)
	nab := add(na.n, fb)
	nc := add(RootNode, fc)
	ncc := add(nc.n, fc)
	nccc := add(ncc.n, fc)
	if na.n != 2 || nccc.n != 6 {
		t.Fatalf("nodes %v to %v, want 2 to 6", na, nccc)
	}
	t.Logf("slots searched: a %d, b %d, c %d, %d, %d", na.probes, nab.probes, nc.probes, ncc.probes, nccc.probes)
	if na.probes+nab.probes+nc.probes+ncc.probes+nccc.probes == 5 {
		t.Fatal("every node in its key's slot: no search goes on past one")
	}
	// Each in the slot the hand's hash gives, or past it.
	for key, home := range abHomes {
		if b.NodeSlot(key) != home {
			t.Errorf("key %#x's slot %d, want %d", key, b.NodeSlot(key), home)
		}
	}
	slotOf := func(m *fakeMem, key uint64) (int, uint64) {
		for i := range b.NodeSlots() {
			if s := at(b.NodeTableAt() + BookNodeSlotSize*uint64(i)); m.peek64(s) == key {
				return i, m.peek64(s + 8)
			}
		}
		return -1, 0
	}
	for _, w := range []struct {
		name       string
		n          node
		key        uint64
		slot, node int
	}{
		{"a", na, NodeKeyOf(RootNode, fa), 7, 2},
		{"a b", nab, NodeKeyOf(2, fb), 9, 3},
		{"c", nc, NodeKeyOf(RootNode, fc), 11, 4},
		{"c c", ncc, NodeKeyOf(4, fc), 3, 5},
		{"c c c", nccc, NodeKeyOf(5, fc), 12, 6},
	} {
		if s, n := slotOf(profile, w.key); s != w.slot || int(n) != w.node || w.n.n != w.node || w.n.probes != (w.slot-abHomes[w.key]+1) {
			t.Errorf("%s's node %d in slot %d, %d searched; want %d in %d", w.name, n, s, w.n.probes, w.node, w.slot)
		}
	}
	table := profile.clone().b

	code, offA, offC := abCalls(entries, exits)

	for _, added := range []bool{false, true} {
		name := "PROFILE's nodes"
		mem := profile.clone()
		if added {
			name, mem = "the nodes added", abMem(b)
		}
		var ticks uint64
		ranA, ranC := abRunCalls(t, name+": ", code, offA, offC, mem, &ticks)

		// The times, as TestBookCodeRunsARM64's, each entry's rest its
		// own: what its search ran, a node found or added, past
		// probes-1 slots. c's innermost call runs its entry's rest, a
		// new depth, the prologue, SUBS, B.EQ, the epilogue and its
		// exit's start; each of the two around it its entry's rest, the
		// prologue, three instructions, the epilogue, its exit's start,
		// and what its callee runs outside its time: its entry's start,
		// an inner call's exit's rest, the return. b's second call finds
		// the node its first added.
		rest := func(n node, add bool) uint64 {
			left := uint64(abSearchLeft)
			if add {
				left = abAddLeft
			}
			return uint64(len(entry.Code)/4) - entryPre - 2 - left + abSearchSlot*uint64(n.probes-1)
		}
		callB1, callB2 := rest(nab, added)+6+exitPre, rest(nab, false)+6+exitPre
		selfB := callB1 + callB2 + 1
		outside := entryPre + exitRest + 1
		selfA, inclA := rest(na, added)+1+6+exitPre+2*outside, ranA-outside
		selfCCC := rest(nccc, added) + 1 + 6 + exitPre
		selfCC := rest(ncc, added) + 7 + exitPre + entryPre + exitInner + 1
		selfC := rest(nc, added) + 7 + exitPre + entryPre + exitInner + 1
		inclC := ranC - outside
		if inclC != selfC+selfCC+selfCCC || inclA != selfA+selfB {
			t.Errorf("%s: a's and c's times with children %d, %d; want %d, %d, their calls' own times", name, inclA, inclC, selfA+selfB, selfC+selfCC+selfCCC)
		}
		type words = [BookFigureSize / 8]uint64
		for f, want := range []words{
			{1, selfA, inclA, 0, 2, 1, 2}, // calls, own time, with children, open, kids, outermost calls, calls beneath
			{2, selfB, selfB, 0, 0, 2, 0},
			{3, selfC + selfCC + selfCCC, inclC, 0, 2, 1, 2},
		} {
			var got words
			for i := range got {
				got[i] = mem.peek64(at(b.FigureAt(f) + 8*uint64(i)))
			}
			if got != want {
				t.Errorf("%s: function %d's figures %v, want %v", name, f, got, want)
			}
		}
		// Each node's figures: its calls, their own time, with children,
		// kids and calls beneath, its open and outermost calls
		// untouched, and its key. Where a path is a function's only one,
		// its node's figures are the function's; c's time with children
		// is its own and its callee's, twice.
		key := func(parent node, fn int) uint64 { return NodeKeyOf(parent.n, fn) }
		root := node{RootNode, 0}
		for _, w := range []struct {
			name string
			n    node
			want words
		}{
			{"a", na, words{1, selfA, inclA, 0, 2, 0, 2, key(root, fa)}},
			{"a b", nab, words{2, selfB, selfB, 0, 0, 0, 0, key(na, fb)}},
			{"c", nc, words{1, selfC, selfC + selfCC + selfCCC, 0, 1, 0, 2, key(root, fc)}},
			{"c c", ncc, words{1, selfCC, selfCC + selfCCC, 0, 1, 0, 1, key(nc, fc)}},
			{"c c c", nccc, words{1, selfCCC, selfCCC, 0, 0, 0, 0, key(ncc, fc)}},
		} {
			if got := abNode(mem, b, w.n.n); got != w.want {
				t.Errorf("%s: node %d (%s): figures %v, want %v", name, w.n.n, w.name, got, w.want)
			}
		}
		for f, n := range []int{na.n, nab.n} {
			var fig words
			for i := range fig {
				fig[i] = mem.peek64(at(b.FigureAt(f) + 8*uint64(i)))
			}
			if node := abNode(mem, b, n); node[FigureCalls/8] != fig[FigureCalls/8] || node[FigureSelf/8] != fig[FigureSelf/8] ||
				node[FigureInclusive/8] != fig[FigureInclusive/8] || node[FigureKids/8] != fig[FigureKids/8] || node[FigureBeneath/8] != fig[FigureBeneath/8] {
				t.Errorf("%s: node %d's figures %v, function %d's %v: want its calls, own time, time with children, kids and calls beneath", name, n, node, f, fig)
			}
		}
		if got := abNode(mem, b, nccc.n+1); got != (words{}) {
			t.Errorf("%s: node %d, not in use: %v", name, nccc.n+1, got)
		}
		// The root's frame and node; the nodes PROFILE's, the count 7,
		// and the slots as PROFILE keys them: the code added the nodes
		// in the slots PROFILE would have, or none.
		rootFrame := [4]uint64{mem.peek64(at(b.FrameAt(0) + FrameChildren)), mem.peek64(at(b.FrameAt(0) + FrameKids)),
			mem.peek64(at(b.FrameAt(0) + FrameBeneath)), mem.peek64(at(b.FrameAt(0) + FrameNode))}
		if want := [4]uint64{inclA + inclC, 2, 6, RootNode}; rootFrame != want {
			t.Errorf("%s: root frame's children, kids, calls beneath and node %v, want %v", name, rootFrame, want)
		}
		if count := mem.peek64(at(b.Offset + BookNodeCount)); count != 7 {
			t.Errorf("%s: node count %d, want 7", name, count)
		}
		for i := range b.NodeSlots() * BookNodeSlotSize {
			if a := at(b.NodeTableAt() + uint64(i)); mem.b[a] != table[a] {
				t.Errorf("%s: slot %d %#x, node %d; want %#x, node %d", name, i/BookNodeSlotSize, mem.peek64(a&^15), mem.peek64(a&^15+8),
					profile.peek64(a&^15), profile.peek64(a&^15+8))
				break
			}
		}
		if top, deepest := mem.peek64(at(b.Offset+BookTop)), mem.peek64(at(b.Offset+BookDeepest)); top != b.FrameAt(1) || deepest != b.FrameAt(4) {
			t.Errorf("%s: top %#x, deepest %#x; want %#x, %#x", name, top, deepest, b.FrameAt(1), b.FrameAt(4))
		}
	}
}

// TestBookNodesStopsARM64 runs the entry and exit code of a book that
// keeps caller stacks where it finds the node after a search that wraps
// past the table's last slot; where it adds a missing node (the table
// empty; the key's slot and those after it taken by other keys; one
// node left), as PROFILE would, and where a signal stops it doing so and
// it starts again; and where it stops for PROFILE: an entry whose node
// is missing and the table full (or its count written over) stops at
// its BRK before the commit, x0 the time it read, its frame written and
// not opened, nothing else, and an exit whose frame's node is not one
// the book has (0, the root's, Nodes on) stops before its commit. Each
// stop leaves the thread's registers in the save slots, and every other
// one but x16 and x17 as it was.
func TestBookNodesStopsARM64(t *testing.T) {
	const fb = 1
	b := abNodeBook
	entries, exits := abNodeCode(t, b)
	entry, exit := entries[fb], exits[fb]
	const sp, held = abSP - 0x100, 5000
	at := func(off uint64) uint64 { return abArea + off }
	thread := abRegs(0, nil).r
	ticks := uint64(1000)
	fresh := func() *fakeMem {
		m := abMem(b)
		m.poke64(at(b.Offset+BookHeld), held)
		return m
	}
	// goes runs c at sp on m, which must go on at its end with every
	// register back but x16, x17 and the flags, and returns the
	// instructions it ran.
	goes := func(name string, m *fakeMem, c BookCode) uint64 {
		t.Helper()
		r := abRegs(sp, &ticks)
		want := r.clone()
		want.pc += uint64(len(c.Code))
		start := ticks
		if err := a64Exec(c.Code, pTramp, r, m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r.r[16], r.r[17], r.flags = want.r[16], want.r[17], want.flags
		if *r != *want {
			t.Errorf("%s: registers after\n got %+v\nwant %+v", name, *r, *want)
		}
		return ticks - start
	}
	// stops runs c at sp on m, which must stop at its BRK, x0 the time
	// it read, x1 to x3 anything, the other registers as they were, and
	// write nothing but the save slots and what written writes in want.
	stops := func(name string, m *fakeMem, c BookCode, written func(want *fakeMem, read uint64)) {
		t.Helper()
		r := abRegs(sp, &ticks)
		before, want, read := r.clone(), m.clone(), ticks+uint64(abIndex(c.Code, 0xffffffe0, abMrsCnt))
		err := a64Exec(c.Code, pTramp, r, m)
		var brk a64Break
		if !errors.As(err, &brk) || r.pc != brk.pc || brk.pc+4 != pTramp+uint64(c.Stop) {
			t.Fatalf("%s: %v, at %#x; want a stop at %#x", name, err, r.pc, pTramp+uint64(c.Stop)-4)
		}
		if r.r[0] != read {
			t.Errorf("%s: x0 %d at the stop, want %d, the time read", name, r.r[0], read)
		}
		for i := 4; i < len(r.r); i++ {
			if i != 16 && i != 17 && r.r[i] != before.r[i] {
				t.Errorf("%s: x%d %#x at the stop, %#x before", name, i, r.r[i], before.r[i])
			}
		}
		for _, s := range c.Saved {
			want.poke64(at(s.Offset), thread[s.Reg])
		}
		written(want, read)
		if !equalMem(m, want) {
			for a, v := range m.b {
				if want.b[a] != v {
					t.Errorf("%s: %#x (offset %#x in the area) written", name, a, a-abArea)
					break
				}
			}
		}
	}
	// frame is what an entry that stops at its search writes: its frame,
	// its node but, not opened.
	frame := func(want *fakeMem, read uint64) {
		f := b.FrameAt(1)
		want.poke64(at(f+FrameTime), read).poke64(at(f+FrameSP), sp).poke64(at(f+FrameHeld), held).poke64(at(f+FrameFunc), fb)
	}
	key := NodeKeyOf(RootNode, fb)
	home, slots := b.NodeSlot(key), b.NodeSlots()
	if home != 1 { // 1<<32|1 times NodeHash is 0x1d81f5ce7f4a7c15 (mod 2^64): its top 4 bits, 1
		t.Fatalf("key %#x's slot %d, want 1", key, home)
	}
	// addedAt checks that an entry that ran on m, as before was, added
	// the call's node as PROFILE would have (abAddNode): node n, the
	// count one more, its key in its last word and in slot i, nothing
	// else of the table or the nodes written, and opened the call with
	// it.
	addedAt := func(name string, m, before *fakeMem, n, i int) {
		t.Helper()
		want := before.clone()
		if got, _ := abAddNode(want, b, RootNode, fb); got != n {
			t.Fatalf("%s: PROFILE would add node %d, not %d", name, got, n)
		}
		if count := m.peek64(at(b.Offset + BookNodeCount)); count != uint64(n+1) {
			t.Errorf("%s: count %d, want %d", name, count, n+1)
		}
		s := at(b.NodeTableAt() + BookNodeSlotSize*uint64(i))
		if k, node := m.peek64(s), m.peek64(s+8); k != key || node != uint64(n) {
			t.Errorf("%s: slot %d has key %#x, node %d; want %#x, %d", name, i, k, node, key, n)
		}
		if got := abNode(m, b, n); got != [8]uint64{7: key} {
			t.Errorf("%s: node %d's figures %v, want its key alone", name, n, got)
		}
		for a := at(b.NodeTableAt()); a < at(b.Offset+b.Size()); a++ {
			if m.b[a] != want.b[a] {
				t.Errorf("%s: offset %#x in the area written, not as PROFILE adds the node", name, a-abArea)
				break
			}
		}
		if top, node := m.peek64(at(b.Offset+BookTop)), m.peek64(at(b.FrameAt(1)+FrameNode)); top != b.FrameAt(2) || node != uint64(n) {
			t.Errorf("%s: top %#x, the call's node %d; want %#x, %d", name, top, node, b.FrameAt(2), n)
		}
	}

	// The node in its key's slot: the entry finds it.
	own := fresh()
	n, probes := abAddNode(own, b, RootNode, fb)
	ranOwn := goes("an entry, its node in its key's slot", own, entry)
	// The node missing, the table empty: the entry adds it, node 2, in
	// its key's slot, running abSearchLeft-abAddLeft instructions more
	// than where it finds it there.
	empty := fresh()
	before := empty.clone()
	ranAdd := goes("an entry, the table empty", empty, entry)
	addedAt("an entry, the table empty", empty, before, 2, home)
	if ranAdd != ranOwn+abSearchLeft-abAddLeft {
		t.Errorf("the entry that adds its node ran %d instructions, %d where it finds it; want %d more", ranAdd, ranOwn, abSearchLeft-abAddLeft)
	}
	// The key's slot and the next two taken by other keys (b's from
	// another node, another function's from the root, the key with bit
	// 40 set), the one after free: the entry adds its node there, node
	// 5 (the count at 5: nodes 2 to 4 those of the other keys), after
	// three slots more.
	taken := fresh()
	for i, k := range []uint64{NodeKeyOf(RootNode+1, fb), NodeKeyOf(RootNode, fb+1), key | 1<<40} {
		abSetSlot(taken, b, (home+i)%slots, k, 2+i)
	}
	taken.poke64(at(b.Offset+BookNodeCount), 5)
	before = taken.clone()
	ran := goes("an entry, its key's slot and the next two taken", taken, entry)
	addedAt("an entry, its key's slot and the next two taken", taken, before, 5, home+3)
	if ran != ranAdd+3*abSearchSlot {
		t.Errorf("the entry that adds its node 3 slots on ran %d instructions, %d in its key's slot; want %d more", ran, ranAdd, 3*abSearchSlot)
	}

	// The node past every slot from the key's to the last, in the
	// first: the search runs abSearchSlot more instructions for each
	// slot more, and the entry opens the call, its node the one found.
	// (The key's slot is not the first: the search wraps.)
	wrapped := fresh()
	for i := home; i < slots; i++ {
		abSetSlot(wrapped, b, i, NodeKeyOf(RootNode+1+i, fb), 7)
	}
	n2, probes2 := abAddNode(wrapped, b, RootNode, fb)
	if n != 2 || n2 != 2 || probes != 1 || probes2 != slots-home+1 {
		t.Fatalf("nodes %d and %d, %d and %d slots searched", n, n2, probes, probes2)
	}
	wrappedTable := wrapped.clone()
	ran = goes("an entry, its node past the last slot", wrapped, entry)
	if ran != ranOwn+abSearchSlot*uint64(slots-home) {
		t.Errorf("the entry ran %d instructions, %d with its node in its key's slot; want %d more for each of the %d slots on",
			ran, ranOwn, abSearchSlot, slots-home)
	}
	for _, m := range []*fakeMem{own, wrapped} {
		if top, node, count := m.peek64(at(b.Offset+BookTop)), m.peek64(at(b.FrameAt(1)+FrameNode)), m.peek64(at(b.Offset+BookNodeCount)); top != b.FrameAt(2) || node != 2 || count != 3 {
			t.Errorf("top %#x, the call's node %d, the count %d; want %#x, 2, 3", top, node, count, b.FrameAt(2))
		}
	}
	for a := at(b.NodeTableAt()); a < at(b.NodeAt(0)); a++ {
		if wrapped.b[a] != wrappedTable.b[a] {
			t.Errorf("the entry that found its node wrote the table at offset %#x", a-abArea)
			break
		}
	}
	// Its exit adds the call to node 2.
	goes("its exit", wrapped, exit)
	took := wrapped.peek64(at(b.Offset+BookLast)) - wrapped.peek64(at(b.FrameAt(1)+FrameTime))
	if got, want := abNode(wrapped, b, 2), [8]uint64{1, took, took, 0, 0, 0, 0, key}; got != want {
		t.Errorf("node 2's figures %v, want %v", got, want)
	}

	// The table full, the node missing: the entry stops at its BRK
	// before its commit, x0 the time it read again, its frame written
	// and not opened; the count, the table and the nodes as they were.
	// So where the count is past the nodes (written over), and where the
	// search went past taken slots first. One node short of full, the
	// entry adds the last, Nodes-1; then the table is full.
	for _, c := range []struct {
		name  string
		count uint64
		taken bool
	}{
		{"the table full", uint64(b.Nodes), false},
		{"the table full, the key's slot and the next two taken", uint64(b.Nodes), true},
		{"the count 2^32", 1 << 32, false},
		{"the count ~0", ^uint64(0), false},
	} {
		m := fresh()
		if c.taken {
			for i, k := range []uint64{NodeKeyOf(RootNode+1, fb), NodeKeyOf(RootNode, fb+1), key | 1<<40} {
				abSetSlot(m, b, (home+i)%slots, k, 2+i)
			}
		}
		m.poke64(at(b.Offset+BookNodeCount), c.count)
		stops("an entry, "+c.name, m, entry, frame)
	}
	last := fresh()
	last.poke64(at(b.Offset+BookNodeCount), uint64(b.Nodes-1))
	before = last.clone()
	goes("an entry, one node left", last, entry)
	addedAt("an entry, one node left", last, before, b.Nodes-1, home)
	goes("its exit", last, exit)
	took = last.peek64(at(b.Offset+BookLast)) - last.peek64(at(b.FrameAt(1)+FrameTime))
	if got, want := abNode(last, b, b.Nodes-1), [8]uint64{1, took, took, 0, 0, 0, 0, key}; got != want {
		t.Errorf("node %d, the last, added: figures %v, want %v", b.Nodes-1, got, want)
	}
	abSetSlot(last, b, home, 0, 0)
	stops("an entry, the table filled by the last node, the node taken out", last, entry, frame)

	// A signal stops the entry that adds its node anywhere before its
	// commit, and the thread starts again (its rollback: the registers
	// back from the save slots, the code from its start): the count goes
	// up before the slot is keyed, so that it finds a node whose key is
	// in the slot and in the node, below the count, never one the next
	// added node takes again. Stopped between the count and the key,
	// it takes a node more, 3, and node 2 stays unused.
	rb := entry.Rollback[1]
	saves, committed := rb.From, rb.To
	counted := 4 * abIndex(entry.Code, ^uint32(0), a64Str(bookX3, a64X16, uint32(b.Offset+BookNodeCount)))
	keyed := 4 * abIndex(entry.Code, ^uint32(0), a64Str(bookX1, bookX2, 0))
	if counted < saves || keyed <= counted || keyed >= committed {
		t.Errorf("the count stored at %#x, the slot keyed at %#x: want the count first, both in %+v", counted, keyed, rb)
	}
	for k := saves; k < committed; k += 4 {
		m := fresh()
		r := abRegs(sp, &ticks)
		want := r.clone()
		want.pc += uint64(len(entry.Code))
		if err := a64Exec(entry.Code[:k], pTramp, r, m); err != nil {
			t.Fatalf("an entry stopped before %#x: %v", k, err)
		}
		stopped := r.pc - pTramp
		if stopped < uint64(saves) || stopped >= uint64(committed) {
			t.Fatalf("an entry stopped before %#x at %#x, outside its rollback range %+v", k, stopped, rb)
		}
		for _, s := range rb.Restore {
			r.r[s.Reg] = m.peek64(at(s.Offset))
		}
		r.pc = pTramp
		name := fmt.Sprintf("an entry stopped at %#x, started again", stopped)
		if err := a64Exec(entry.Code, pTramp, r, m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r.r[16], r.r[17], r.flags = want.r[16], want.r[17], want.flags
		if *r != *want {
			t.Errorf("%s: registers after\n got %+v\nwant %+v", name, *r, *want)
		}
		node, count := m.peek64(at(b.FrameAt(1)+FrameNode)), m.peek64(at(b.Offset+BookNodeCount))
		if between := stopped > uint64(counted) && stopped <= uint64(keyed); between && (node != 3 || count != 4) || !between && (node != 2 || count != 3) {
			t.Errorf("%s: the call's node %d, the count %d; want 3 and 4 where stopped after the count, before the key, else 2 and 3", name, node, count)
		}
		s := at(b.NodeTableAt() + BookNodeSlotSize*uint64(home))
		if node < 2 || node >= count || count > 4 || m.peek64(s) != key || m.peek64(s+8) != node ||
			m.peek64(at(b.NodeAt(int(node))+NodeKey)) != key || m.peek64(at(b.Offset+BookTop)) != b.FrameAt(2) {
			t.Errorf("%s: the call's node %d, the count %d, the key's slot %#x, node %d, the node's key %#x, top %#x; want a node below the count, keyed",
				name, node, count, m.peek64(s), m.peek64(s+8), m.peek64(at(b.NodeAt(int(node))+NodeKey)), m.peek64(at(b.Offset+BookTop)))
		}
	}

	// An exit whose call's node is not one the book has, node 0 (none:
	// PROFILE books it by its path), the root's, the book's count of
	// nodes or more, stops before its commit: it writes the last exit's
	// time, nothing else. Node Nodes-1 is one, and gets the call.
	for _, bad := range []uint64{0, RootNode, uint64(b.Nodes), 1 << 32, ^uint64(0)} {
		m := fresh()
		abAddNode(m, b, RootNode, fb)
		goes("an entry", m, entry)
		m.poke64(at(b.FrameAt(1)+FrameNode), bad)
		stops(fmt.Sprintf("an exit, the call's node %#x", bad), m, exit, func(want *fakeMem, read uint64) {
			want.poke64(at(b.Offset+BookLast), read)
		})
	}
	m := fresh()
	abAddNode(m, b, RootNode, fb)
	goes("an entry", m, entry)
	m.poke64(at(b.FrameAt(1)+FrameNode), uint64(b.Nodes-1))
	goes("an exit, the call's node the last", m, exit)
	took = m.peek64(at(b.Offset+BookLast)) - m.peek64(at(b.FrameAt(1)+FrameTime))
	if got, want := abNode(m, b, b.Nodes-1), [8]uint64{1, took, took, 0, 0, 0, 0, 0}; got != want {
		t.Errorf("node %d's figures %v, want %v", b.Nodes-1, got, want)
	}
	if got := abNode(m, b, 2); got != [8]uint64{7: key} {
		t.Errorf("node 2's figures %v, want none", got)
	}
}

// TestBookNodesCloserRunsARM64 runs the closer of a book that keeps
// caller stacks, as TestBookCloserRunsARM64 runs it: each call it
// closes adds its figures to its node's as an exit does, and the entry
// that called it then finds its own node from the caller's the closer
// left; a frame whose node is not one the book has (node 0, a call of
// no node, the root's, Nodes on) stops the closing, as a frame of no
// function does; an entry whose node is missing adds it after the
// closer, and where the table is full stops after it, its calls closed.
func TestBookNodesCloserRunsARM64(t *testing.T) {
	b := abCloserBook
	b.Nodes = 16
	entries, _ := abCloserCode(t, b)
	type words = [BookFigureSize / 8]uint64
	// nodes adds the nodes of d1, d2 from d1, d2 from that, d3 from
	// that, and, where e, e from the root; each but e's with earlier
	// calls' figures, as different as can be, to which the closer must
	// add.
	prior := func(n int) words {
		k := uint64(n)
		return words{10 * k, 1000*k + 1, 2000*k + 3, 0, 20*k + 1, 0, 40*k + 3}
	}
	nodes := func(th *abCloserThread, e bool) (ns [5]int) {
		parent := RootNode
		for i, f := range []int{abD1, abD2, abD2, abD3} {
			ns[i], _ = abAddNode(th.mem, b, parent, f)
			parent = ns[i]
			p := prior(ns[i])
			for w, v := range p[:NodeKey/8] {
				th.set(b.NodeAt(ns[i])+8*uint64(w), v)
			}
		}
		if e {
			ns[4], _ = abAddNode(th.mem, b, RootNode, abE)
		}
		return ns
	}
	plus := func(n int, key uint64, d words) words {
		p := prior(n)
		for i := range p {
			p[i] += d[i]
		}
		p[NodeKey/8] = key
		return p
	}
	// nested enters d1, d2, d2 and d3, as TestBookCloserRunsARM64 does:
	// PROFILE holds the thread 2 ns before d1's entry, 2 more before
	// d2's, 1 between d2's second entry and d3's, 7 between d3's and
	// the next event; d1 made calls before d2's.
	const ch1, kids1, beneath1 = 40, 2, 5
	nested := func(th *abCloserThread, name string) (d1, d2, d22, d3 uint64) {
		th.set(b.Offset+BookHeld, 2)
		d1 = th.goes(name+": d1's entry", entries[abD1].Code, abSP0, false)
		th.set(b.FrameAt(1)+FrameChildren, ch1)
		th.set(b.FrameAt(1)+FrameKids, kids1)
		th.set(b.FrameAt(1)+FrameBeneath, beneath1)
		th.set(b.Offset+BookHeld, 4)
		d2 = th.goes(name+": d2's entry", entries[abD2].Code, abSP0-0x40, false)
		d22 = th.goes(name+": d2's entry again", entries[abD2].Code, abSP0-0x60, false)
		th.set(b.Offset+BookHeld, 5)
		d3 = th.goes(name+": d3's entry", entries[abD3].Code, abSP0-0x80, false)
		th.set(b.Offset+BookHeld, 12)
		return d1, d2, d22, d3
	}
	// closed checks the figures of d1's, d2's and d3's nodes and
	// functions after their calls closed at time e.
	closed := func(th *abCloserThread, name string, ns [5]int, d1, d2, d22, d3, e uint64) {
		t.Helper()
		t1, t2, t22, t3 := e-d1-10, e-d2-8, e-d22-8, e-d3-7
		for _, w := range []struct {
			i    int
			want words
		}{
			{0, plus(ns[0], NodeKeyOf(RootNode, abD1), words{1, t1 - ch1 - t2, t1, 0, kids1 + 1, 0, beneath1 + 3})},
			{1, plus(ns[1], NodeKeyOf(ns[0], abD2), words{1, t2 - t22, t2, 0, 1, 0, 2})},
			{2, plus(ns[2], NodeKeyOf(ns[1], abD2), words{1, t22 - t3, t22, 0, 1, 0, 1})},
			{3, plus(ns[3], NodeKeyOf(ns[2], abD3), words{1, t3, t3, 0, 0, 0, 0})},
		} {
			if got := abNode(th.mem, b, ns[w.i]); got != w.want {
				t.Errorf("%s: node %d's figures %v, want %v", name, ns[w.i], got, w.want)
			}
		}
		for _, w := range []struct {
			f    int
			want [7]uint64
		}{
			{abD1, [7]uint64{1, t1 - ch1 - t2, t1, 0, kids1 + 1, 1, beneath1 + 3}},
			{abD2, [7]uint64{2, t2 - t22 + t22 - t3, t2, 0, 2, 1, 2}},
			{abD3, [7]uint64{1, t3, t3, 0, 0, 1, 0}},
		} {
			if got := th.words(b.FigureAt(w.f)); got != w.want {
				t.Errorf("%s: function %d's figures %v, want %v", name, w.f, got, w.want)
			}
		}
	}

	// e's entry above d1's: the closer closes d3, d2 twice and d1, and
	// e's call opens with its node, from the root.
	th := newCloserThread(t, b, abStackLo, abStackHi)
	ns := nodes(th, true)
	d1, d2, d22, d3 := nested(th, "e")
	e := th.goes("e's entry", entries[abE].Code, abSP0+16, true)
	closed(th, "e's entry", ns, d1, d2, d22, d3, e)
	if got, want := th.words(b.FrameAt(1)), [7]uint64{e, 0, abSP0 + 16, 12, 0, abE, 0}; got != want || th.word(b.FrameAt(1)+FrameNode) != uint64(ns[4]) {
		t.Errorf("e's frame %v, node %d; want %v, %d", got, th.word(b.FrameAt(1)+FrameNode), want, ns[4])
	}
	if got := abNode(th.mem, b, ns[4]); got != [8]uint64{7: NodeKeyOf(RootNode, abE)} {
		t.Errorf("e's node's figures %v, want none, e's call open", got)
	}
	if top := th.word(b.Offset + BookTop); top != b.FrameAt(2) {
		t.Errorf("top %#x, want %#x, e's call open", top, b.FrameAt(2))
	}

	// e's node missing: the closer closes the calls as before, and e's
	// entry adds its node after it, from the root, as PROFILE would have:
	// the next, 6, the count 7, its key in it and in the slot PROFILE
	// would key; and opens its call with it.
	th = newCloserThread(t, b, abStackLo, abStackHi)
	ns = nodes(th, false)
	d1, d2, d22, d3 = nested(th, "e's node missing")
	profile := th.mem.clone()
	ne, _ := abAddNode(profile, b, RootNode, abE)
	e = th.goes("e's entry, its node missing", entries[abE].Code, abSP0+16, true)
	closed(th, "e's node missing", ns, d1, d2, d22, d3, e)
	if got, want := th.words(b.FrameAt(1)), [7]uint64{e, 0, abSP0 + 16, 12, 0, abE, 0}; ne != ns[3]+1 || got != want ||
		th.word(b.FrameAt(1)+FrameNode) != uint64(ne) || th.word(b.Offset+BookTop) != b.FrameAt(2) || th.word(b.Offset+BookNodeCount) != uint64(ne+1) {
		t.Errorf("e's node missing: e's frame %v, node %d, top %#x, count %d; want %v, %d, %#x, %d", got, th.word(b.FrameAt(1)+FrameNode),
			th.word(b.Offset+BookTop), th.word(b.Offset+BookNodeCount), want, ne, b.FrameAt(2), ne+1)
	}
	if got := abNode(th.mem, b, ne); got != [8]uint64{7: NodeKeyOf(RootNode, abE)} {
		t.Errorf("e's node missing: e's node added has figures %v, want its key alone", got)
	}
	for a := abArea + b.NodeTableAt(); a < abArea+b.NodeAt(0); a++ {
		if th.mem.b[a] != profile.b[a] {
			t.Errorf("e's node missing: the table at offset %#x not as PROFILE keys it", a-abArea)
			break
		}
	}

	// The table full besides: the closer closes the calls as before,
	// and e's entry stops after it, x0 its time, e's frame written and
	// not opened, the count and the table as they were.
	th = newCloserThread(t, b, abStackLo, abStackHi)
	ns = nodes(th, false)
	th.set(b.Offset+BookNodeCount, uint64(b.Nodes))
	d1, d2, d22, d3 = nested(th, "the table full")
	old := th.mem.clone()
	e = th.stops("e's entry, its node missing, the table full", entries[abE], abSP0+16, true)
	closed(th, "the table full", ns, d1, d2, d22, d3, e)
	if got, want := th.words(b.FrameAt(1)), [7]uint64{e, 0, abSP0 + 16, 12, 0, abE, 0}; got != want || th.word(b.Offset+BookTop) != b.FrameAt(1) {
		t.Errorf("the table full: e's frame %v, want %v, top %#x, want %#x", got, want, th.word(b.Offset+BookTop), b.FrameAt(1))
	}
	if count := th.word(b.Offset + BookNodeCount); count != uint64(b.Nodes) {
		t.Errorf("the table full: count %d, want %d", count, b.Nodes)
	}
	for a := abArea + b.NodeTableAt(); a < abArea+b.NodeAt(0); a++ {
		if th.mem.b[a] != old.b[a] {
			t.Errorf("the table full: the table written at offset %#x", a-abArea)
			break
		}
	}

	// d3's node not one the book has (0, a call of no node; the root's;
	// Nodes on): the closer closes nothing, and e's entry stops; the
	// book is as it was but for its save slots and the key.
	for _, bad := range []uint64{0, RootNode, uint64(b.Nodes), 1 << 32, ^uint64(0)} {
		name := fmt.Sprintf("d3's node %#x", bad)
		th = newCloserThread(t, b, abStackLo, abStackHi)
		nodes(th, true)
		nested(th, name)
		th.set(b.FrameAt(4)+FrameNode, bad)
		old := th.mem.clone()
		th.stops(name, entries[abE], abSP0+16, true)
		want := old.clone()
		for _, s := range entries[abE].Saved {
			want.poke64(abArea+s.Offset, abRegs(0, nil).r[s.Reg])
		}
		want.poke64(abArea+b.Offset+BookKey, abSP0+16)
		for a := abArea + b.Offset; a < abArea+b.Offset+b.Size(); a++ {
			if th.mem.b[a] != want.b[a] {
				t.Errorf("%s: the book written at offset %#x", name, a-abArea)
				break
			}
		}
	}
	// d2's inner call's node not one the book has (0, or Nodes): the
	// closer closes d3, and stops at it.
	for _, bad := range []uint64{0, uint64(b.Nodes)} {
		name := fmt.Sprintf("d2's node %d", bad)
		th = newCloserThread(t, b, abStackLo, abStackHi)
		ns = nodes(th, true)
		_, _, _, d3 = nested(th, name)
		th.set(b.FrameAt(3)+FrameNode, bad)
		e = th.stops(name, entries[abE], abSP0+16, true)
		t3 := e - d3 - 7
		if got, want := abNode(th.mem, b, ns[3]), plus(ns[3], NodeKeyOf(ns[2], abD3), words{1, t3, t3, 0, 0, 0, 0}); got != want {
			t.Errorf("%s: d3's node's figures %v, want %v", name, got, want)
		}
		for i := range 3 {
			if got, want := abNode(th.mem, b, ns[i]), plus(ns[i], th.word(b.NodeAt(ns[i])+NodeKey), words{}); got != want {
				t.Errorf("%s: node %d's figures %v, want %v, as they were", name, ns[i], got, want)
			}
		}
		if top := th.word(b.Offset + BookTop); top != b.FrameAt(4) {
			t.Errorf("%s: top %#x, want %#x, d2's inner call open", name, top, b.FrameAt(4))
		}
	}

	// f's exit, at its entry's stack pointer and 16 above it, has the
	// closer close g, which left unseen, and then closes f: both nodes
	// get their calls.
	for _, off := range []uint64{0, 16} {
		name := fmt.Sprintf("f's exit %d above its entry", off)
		exit, ok := ARM64.BookExitCode(b, abF, int(off))
		if !ok {
			t.Fatalf("%s: no code", name)
		}
		th := newCloserThread(t, b, abStackLo, abStackHi)
		nf, _ := abAddNode(th.mem, b, RootNode, abF)
		ng, _ := abAddNode(th.mem, b, nf, abG)
		f := th.goes(name+": f's entry", entries[abF].Code, abSP0, false)
		g := th.goes(name+": g's entry", entries[abG].Code, abSP0-0x40, false)
		th.set(b.Offset+BookHeld, 3)
		x := th.goes(name, exit.Code, abSP0+off, true)
		tf, tg := x-f-3, x-g-3
		for _, w := range []struct {
			n    int
			want words
		}{
			{nf, words{1, tf - tg, tf, 0, 1, 0, 1, NodeKeyOf(RootNode, abF)}},
			{ng, words{1, tg, tg, 0, 0, 0, 0, NodeKeyOf(nf, abG)}},
		} {
			if got := abNode(th.mem, b, w.n); got != w.want {
				t.Errorf("%s: node %d's figures %v, want %v", name, w.n, got, w.want)
			}
		}
		if top := th.word(b.Offset + BookTop); top != b.FrameAt(1) {
			t.Errorf("%s: top %#x, want %#x", name, top, b.FrameAt(1))
		}
	}
}

// checkBookShape checks book code c, named name: it stops just after its
// brk #0, at stop; it saves saved; a thread in it is rolled back from
// its start to saves with nothing to restore, from there to commit with
// the saved registers put back, and stepped to its end from there on;
// and its unchecked form is a branch past its end.
func checkBookShape(t *testing.T, name string, c BookCode, stop, saves, commit int, saved []SavedReg) {
	t.Helper()
	if c.Stop != stop || binary.LittleEndian.Uint32(c.Code[c.Stop-4:]) != abBrk {
		t.Errorf("%s stops at %#x, want %#x, just after its brk #0", name, c.Stop, stop)
	}
	if !slices.Equal(c.Saved, saved) {
		t.Errorf("%s saves %v, want %v", name, c.Saved, saved)
	}
	want := []Rollback{
		{From: 0, To: saves},
		{From: saves, To: commit, Restore: saved},
		{From: commit, To: len(c.Code), Finish: true},
	}
	if diff := cmp.Diff(want, c.Rollback); diff != "" {
		t.Errorf("%s rollback (-want +got):\n%s", name, diff)
	}
	if !bytes.Equal(c.Unchecked, a64Words(0x14000000|uint32(len(c.Code)/4))) {
		t.Errorf("%s unchecked % x, want b past its %d bytes", name, c.Unchecked, len(c.Code))
	}
}

// bookSlots are the book code's save slots, x0 to x3.
var bookSlots = []SavedReg{{0, BookSave}, {1, BookSave + 8}, {2, BookSave + 16}, {3, BookSave + 24}}

// abRunCalls runs, in the A64 interpreter, a() and then c(3) of code
// (abCalls's, a at offA and c at offC), each called from the caller at
// abSP, on memory mem, the counter ticks counting the instructions run;
// name starts its errors. It returns the instructions a and c ran. Each
// must return to the caller, its stack pointer back, every register but
// x0 (c's argument, which it counts down), x16 and x17, and the flags
// as it was.
func abRunCalls(t *testing.T, name string, code []byte, offA, offC int, mem *fakeMem, ticks *uint64) (ranA, ranC uint64) {
	t.Helper()
	call := func(what string, off int, x0 uint64) uint64 {
		t.Helper()
		r := abRegs(abSP, ticks)
		r.pc, r.r[0] = pTramp+uint64(off), x0
		want := r.clone()
		before := *ticks
		if err := a64Exec(code, pTramp, r, mem); err != nil {
			t.Fatalf("%s%s: %v", name, what, err)
		}
		if r.pc != abCaller || r.r[31] != abSP {
			t.Fatalf("%s%s returned to %#x, its stack pointer %#x; want %#x, %#x", name, what, r.pc, r.r[31], uint64(abCaller), uint64(abSP))
		}
		for i := 1; i < len(r.r); i++ {
			if i != 16 && i != 17 && r.r[i] != want.r[i] {
				t.Errorf("%s%s: x%d %#x after, %#x before", name, what, i, r.r[i], want.r[i])
			}
		}
		return *ticks - before
	}
	return call("a()", offA, 0), call("c(3)", offC, 3)
}

// abFigures is the figures of the three functions of book b in mem.
func abFigures(mem *fakeMem, b Book) (fig [3][BookFigureSize / 8]uint64) {
	for f := range fig {
		for i := range fig[f] {
			fig[f][i] = mem.peek64(abArea + b.FigureAt(f) + 8*uint64(i))
		}
	}
	return fig
}

// abCalls returns the code of the run tests' three functions, with the
// book code entries[f] and exits[f] of each function f (0 a, 1 b, 2 c),
// and where a and c start: a calls b twice, b does nothing, c calls
// itself until x0, one less at each call, is 0. Each function is its
// entry's code, a prologue that saves the link register below the
// caller's stack pointer, its body, the epilogue, its exit's code and a
// return.
func abCalls(entries, exits []BookCode) (code []byte, offA, offC int) {
	fn := func(f int, body func(at int) []uint32) int {
		start := len(code)
		code = append(code, entries[f].Code...)
		code = append(code, a64Words(abSubSP, abStrLR)...)
		code = append(code, a64Words(body(len(code))...)...)
		code = append(code, a64Words(abLdrLR, abAddSP)...)
		code = append(code, exits[f].Code...)
		code = append(code, a64Words(abRet)...)
		return start
	}
	offB := fn(1, func(int) []uint32 { return []uint32{abNop, abNop} })
	offA = fn(0, func(at int) []uint32 { return []uint32{abBL(at, offB), abBL(at+4, offB)} })
	offC = len(code)
	fn(2, func(at int) []uint32 { return []uint32{abSubs1, abBeq2, abBL(at+8, offC)} }) // (over the call where x0 is 0)
	return code, offA, offC
}

// TestA64ExecBookStartInstructions checks the interpreter's instruction
// that only the start function's check of an entry uses (Book.Start),
// its words written out from the Arm ARM (C6.2) and checked with the GNU
// disassembler: ADDS (immediate), 1 0 1 100010 sh imm12 Rn Rd, whose Rd
// 31 is xzr (CMN) and Rn 31 sp. Its flags are those of the sum (NZCV,
// AddWithCarry): x1 + 1 is 0 with a carry out where x1 is -1 (Z and C),
// -1 where it is -2 (N), 2^63 where it is 2^63-1 (N and V, two
// positives summing to a negative), and 6 where it is 5 (none).
func TestA64ExecBookStartInstructions(t *testing.T) {
	const sp = abSP - 0x100
	if w := a64CmnOne(bookX1); w != 0xb100043f {
		t.Errorf("a64CmnOne(x1) is %#08x, want 0xb100043f", w)
	}
	for _, c := range []struct {
		word  uint32
		text  string
		in    func(r *fakeRegs)
		flags uint64
		want  func(r *fakeRegs) bool
	}{
		{0xb100043f, "cmn x1, #0x1", func(r *fakeRegs) { r.r[1] = ^uint64(0) }, pstateZ | pstateC, nil},
		{0xb100043f, "cmn x1, #0x1", func(r *fakeRegs) { r.r[1] = ^uint64(0) - 1 }, pstateN, nil},
		{0xb100043f, "cmn x1, #0x1", func(r *fakeRegs) { r.r[1] = 1<<63 - 1 }, pstateN | pstateV, nil},
		{0xb100043f, "cmn x1, #0x1", func(r *fakeRegs) { r.r[1] = 5 }, 0, nil},
		// Rd a register: the sum is written; Rn 31: sp is added to.
		{0xb1000462, "adds x2, x3, #0x1", func(r *fakeRegs) { r.r[3] = 41 }, 0, func(r *fakeRegs) bool { return r.r[2] == 42 }},
		{0xb10007ff, "cmn sp, #0x1", nil, 0, func(r *fakeRegs) bool { return r.r[31] == sp }},
	} {
		if _, err := exec.LookPath("aarch64-linux-gnu-objdump"); err == nil {
			if got := gnuDisasm(t, a64Words(c.word), 0); got[0] != c.text {
				t.Errorf("%#08x is %q, want %q", c.word, got[0], c.text)
			}
		}
		r := abRegs(sp, nil)
		r.flags = pstateN | pstateZ | pstateC | pstateV // (each to be written)
		if c.in != nil {
			c.in(r)
		}
		want := r.clone()
		err := a64Exec(a64Words(c.word), pTramp, r, newMem())
		if err != nil || r.flags != c.flags || r.pc != pTramp+4 || c.want != nil && !c.want(r) {
			t.Errorf("%s, x1 %#x: %v, flags %#x, want %#x; registers %+v", c.text, want.r[1], err, r.flags, c.flags, *r)
		}
		// Nothing but the flags and, for ADDS x2, x2 changes.
		r.flags, r.pc, r.r[2] = want.flags, want.pc, want.r[2]
		if *r != *want {
			t.Errorf("%s: registers after\n got %+v\nwant %+v", c.text, *r, *want)
		}
	}
}

// TestBookStartRunsARM64 runs, in the A64 interpreter where the counter
// counts the instructions run, the functions of TestBookCodeRunsARM64
// (abCalls: a calls b twice, c calls itself to a depth of three) with a
// start function (Book.Start), a() first and then c(3), each called with
// no call open; and checks the start function's check in the entry of
// another function with the GNU disassembler.
//
// The figures are known from a run of the same book with no start
// function, whose code is the same but for the check: six instructions
// after the stop, at ok (sub x1, x17, x16; cmp x1, #FIRST; b.ne in;
// ldr x1, [x16, #ROOT.SP]; cmn x1, #1; b.eq out), which the entry of a
// function not the start function runs within its call's time. Within
// a call, the top past the root's next, it runs three (to the b.ne,
// taken); with no call open and the root's stack pointer not ^0, six.
//
//   - c the start function: a's and b's entries find no call open and the
//     root's stack pointer its own (^0), and open no frame and count
//     nothing, their exits close nothing: their figures all 0. c's calls
//     count as with no start function, to the instruction but for two
//     stores of a new deepest top (its first two calls reach depths a's
//     and b's reached first there), its three frames the deepest; the
//     root frame's children are c's call alone.
//   - a the start function: a's and b's calls count, each of b's 3
//     instructions longer (and a's with its children 6); c, called after
//     a's call ended, counts nothing and opens no frame: the deepest top
//     is a's and b's, and the frame past it untouched.
//   - c the start function, the root's stack pointer abSP+15 (PROFILE
//     spilled a call at abSP+16 from the shadow stack, and wrote its stack
//     pointer less one there, as ProgramBook.spillHalf does): the thread
//     is within c though the shadow stack is empty, and a's call counts
//     (6 instructions longer), and b's two (3 each), and c's as ever.
func TestBookStartRunsARM64(t *testing.T) {
	const fa, fb, fc = 0, 1, 2
	base := Book{Offset: 0x40, Frames: 16, Funcs: 3, Table: abTable, Areas: abAreas}
	type words = [BookFigureSize / 8]uint64
	// run runs a() and c(3) made of book b's code on a new thread whose
	// root frame's stack pointer is rootSP, and returns its memory.
	run := func(name string, b Book, rootSP uint64) *fakeMem {
		t.Helper()
		entries, exits := abCloserCode(t, b)
		code, offA, offC := abCalls(entries, exits)
		mem := abMem(b)
		mem.poke64(abArea+b.FrameAt(0)+FrameSP, rootSP)
		var ticks uint64
		abRunCalls(t, name+": ", code, offA, offC, mem, &ticks)
		return mem
	}
	baseFig := abFigures(run("no start function", base, ^uint64(0)), base)

	// The check: b's entry with a start function (c) is b's entry with
	// none but for six instructions after the stop, the check; the start
	// function's own entry has none.
	plain, _ := ARM64.BookEntryCode(base, fb)
	started := base
	started.Start = fc + 1
	entry, _ := ARM64.BookEntryCode(started, fb)
	const check = 6
	stop := plain.Stop
	if entry.Stop != stop || len(entry.Code) != len(plain.Code)+4*check ||
		!bytes.Equal(entry.Code[:stop], plain.Code[:stop]) || !bytes.Equal(entry.Code[stop+4*check:], plain.Code[stop:]) {
		t.Fatalf("the entry of a function not the start function is not the entry with no start function and %d instructions after its stop", check)
	}
	startEntry, _ := ARM64.BookEntryCode(started, fc)
	if plainC, _ := ARM64.BookEntryCode(base, fc); !bytes.Equal(startEntry.Code, plainC.Code) {
		t.Error("the start function's entry is not its entry with no start function")
	}
	if _, err := exec.LookPath("aarch64-linux-gnu-objdump"); err == nil {
		got := gnuDisasm(t, entry.Code, 0)[stop/4 : stop/4+check]
		want := []string{
			"sub x1, x17, x16",
			fmt.Sprintf("cmp x1, #%#x", base.FrameAt(1)),
			fmt.Sprintf("b.ne %#x", stop+4*check),                      // in: the frame opened
			fmt.Sprintf("ldr x1, [x16, #%d]", base.FrameAt(0)+FrameSP), // the root's stack pointer
			"cmn x1, #0x1",
			fmt.Sprintf("b.eq %#x", len(entry.Code)-4), // out: the registers back
		}
		if !slices.Equal(got, want) {
			t.Errorf("the check\n got %q\nwant %q", got, want)
		}
	}

	// newDepths is c's figures with n more of its calls each one deeper
	// than any before, each storing the new deepest top (one instruction
	// in its time): with a and b counting nothing, c's first two calls,
	// at the depths a's and b's calls reached first with no start
	// function, are new depths too.
	newDepths := func(w words, n uint64) words {
		w[FigureSelf/8] += n
		w[FigureInclusive/8] += n
		return w
	}
	at := func(off uint64) uint64 { return abArea + off }
	// Each case's figures: calls, own time, time with children, open
	// calls, kids, outermost calls and calls beneath (as baseFig's).
	for _, c := range []struct {
		name    string
		start   int
		rootSP  uint64
		fig     [3]words
		root    [3]uint64 // the root frame's children, kids and calls beneath
		deepest int
	}{
		{
			name: "c the start function", start: fc + 1, rootSP: ^uint64(0),
			fig:     [3]words{{}, {}, newDepths(baseFig[fc], 2)},
			root:    [3]uint64{baseFig[fc][FigureInclusive/8] + 2, 1, 3},
			deepest: 4,
		},
		{
			name: "a the start function", start: fa + 1, rootSP: ^uint64(0),
			fig: [3]words{
				{1, baseFig[fa][1], baseFig[fa][2] + 2*3, 0, 2, 1, 2},
				{2, baseFig[fb][1] + 2*3, baseFig[fb][2] + 2*3, 0, 0, 2, 0},
				{},
			},
			root:    [3]uint64{baseFig[fa][2] + 2*3, 1, 3},
			deepest: 3,
		},
		{
			name: "c the start function, frames spilled", start: fc + 1, rootSP: abSP + 15,
			fig: [3]words{
				{1, baseFig[fa][1] + check, baseFig[fa][2] + check + 2*3, 0, 2, 1, 2},
				{2, baseFig[fb][1] + 2*3, baseFig[fb][2] + 2*3, 0, 0, 2, 0},
				baseFig[fc],
			},
			root:    [3]uint64{baseFig[fa][2] + check + 2*3 + baseFig[fc][2], 2, 6},
			deepest: 4,
		},
	} {
		b := base
		b.Start = c.start
		mem := run(c.name, b, c.rootSP)
		if fig := abFigures(mem, b); fig != c.fig {
			t.Errorf("%s: figures\n got %v\nwant %v", c.name, fig, c.fig)
		}
		if top := mem.peek64(at(b.Offset + BookTop)); top != b.FrameAt(1) {
			t.Errorf("%s: shadow stack's top at %#x, want %#x, the root's next", c.name, top, b.FrameAt(1))
		}
		if deepest := mem.peek64(at(b.Offset + BookDeepest)); deepest != b.FrameAt(c.deepest) {
			t.Errorf("%s: deepest top %#x, want %#x", c.name, deepest, b.FrameAt(c.deepest))
		}
		root := [3]uint64{mem.peek64(at(b.FrameAt(0) + FrameChildren)), mem.peek64(at(b.FrameAt(0) + FrameKids)), mem.peek64(at(b.FrameAt(0) + FrameBeneath))}
		if root != c.root {
			t.Errorf("%s: root frame's children, kids and calls beneath %v, want %v", c.name, root, c.root)
		}
		if sp := mem.peek64(at(b.FrameAt(0) + FrameSP)); sp != c.rootSP {
			t.Errorf("%s: root's stack pointer %#x, want %#x as it was", c.name, sp, c.rootSP)
		}
		// The frame past the deepest was never opened: all 0.
		for i := uint64(0); i < BookFrameSize; i += 8 {
			if w := mem.peek64(at(b.FrameAt(c.deepest) + i)); w != 0 {
				t.Errorf("%s: frame %d, past the deepest, has %#x at %d", c.name, c.deepest, w, i)
			}
		}
	}
}
