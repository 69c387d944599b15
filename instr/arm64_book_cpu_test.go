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
)

// The tests of the check of the thread's CPU in arm64's book code
// (offCPU, Book.Clock).

// The clock of the tests of the check of the CPU: its page abClock past
// the thread's area, where the interpreter maps the page's two 32-bit
// words from PerfPageLock on (lock, then abPageNext, which is no part of
// lock) and nothing else, so that code that checks nothing faults if it
// reads there. abLock is BookLock as PROFILE left it, abLockNext the 32
// bits after it in the book, which the code neither compares nor writes.
const (
	abClock    = 0x10000
	abPageNext = 0x12345678
	abLock     = 0x2a
	abLockNext = 0xfeedf00d
)

// abCPULen is the length, in instructions, of the check of the CPU of a
// book whose clock is abClock: the two moves of its lock word's distance,
// 0x10008, the load of that word, BookLock's, the CMP, the B.EQ, the
// store of BookLock and the B to the stop; abCPURan is how many of them a
// thread that stayed on its CPU runs: all but the last two.
const abCPULen, abCPURan = 8, 6

// abSetClock gives the thread of book b in mem BookLock abLock (and
// abLockNext after it) and, where b has a clock, the page's lock word
// lock (and abPageNext after it), the only words of the page mapped.
func abSetClock(mem *fakeMem, b Book, lock uint32) {
	mem.poke64(abArea+b.Offset+BookLock, abLockNext<<32|abLock)
	if b.Clock != 0 {
		mem.poke64(abArea+b.Clock+PerfPageLock, abPageNext<<32|uint64(lock))
	}
}

// abUnmapped reports whether a 32-bit read at addr faults in mem.
func abUnmapped(mem *fakeMem, addr uint64) bool { return mem.ReadMem(addr, make([]byte, 4)) != nil }

// TestA64ExecBookCPUInstructions checks the interpreter's instructions
// that only the check of the CPU (offCPU) uses, each word written out
// from the Arm ARM (C6.2), checked with the GNU disassembler and against
// the package's encoders: LDR (register), 32-bit, 10 111 0 00 01 1 Rm
// option 011 S 10 Rn Rt, S 0 (LSL #0: [Xn, Xm], the sum modulo 2^64),
// which zero-extends the word into Xt, and its S 1 form (LSL #2, the
// stack table's), the same case of the interpreter; LDR (immediate),
// 32-bit, 10 111 0 01 01 imm12 Rn Rt (imm12 the offset / 4); STR
// (immediate), 32-bit, 10 111 0 01 00 imm12 Rn Rt, which writes Wt's 4
// bytes alone; and CMP (SUBS, shifted register), 32-bit, 0 1 1 01011
// shift 00 0 Rm imm6 0 Rn Rd 31, whose flags are those of the 32-bit
// difference (AddWithCarry on 32 bits): the high halves count for
// nothing. An extended form of LDR (register) (UXTW, option 010) is not
// emulated: the interpreter refuses it.
func TestA64ExecBookCPUInstructions(t *testing.T) {
	const sp = abSP - 0x100
	for _, c := range []struct{ got, want uint32 }{
		{a64LdrReg32(a64X17, a64X16, a64X17), 0xb8716a11},
		{a64Ldr32(bookX1, a64X16, 136), 0xb9408a01},
		{a64Str32(a64X17, a64X16, 136), 0xb9008a11},
		{a64Cmp32(a64X17, bookX1), 0x6b01023f},
	} {
		if c.got != c.want {
			t.Errorf("encoded %#08x, want %#08x", c.got, c.want)
		}
	}
	const word = 0x8877665544332211 // at sp
	for _, c := range []struct {
		word  uint32
		text  string
		in    func(r *fakeRegs)
		flags uint64 // of CMP; the others leave them
		want  func(r *fakeRegs, m *fakeMem) bool
	}{
		{0xb8716a11, "ldr w17, [x16, x17]", func(r *fakeRegs) { r.r[16], r.r[17] = sp-0x10008, 0x10008 }, 0, func(r *fakeRegs, _ *fakeMem) bool { return r.r[17] == 0x44332211 }},
		{0xb8716a11, "ldr w17, [x16, x17]", func(r *fakeRegs) { r.r[16], r.r[17] = sp+8, ^uint64(7) }, 0, func(r *fakeRegs, _ *fakeMem) bool { return r.r[17] == 0x44332211 }},
		{0xb8707a30, "ldr w16, [x17, x16, lsl #2]", func(r *fakeRegs) { r.r[16], r.r[17] = 2, sp-8 }, 0, func(r *fakeRegs, _ *fakeMem) bool { return r.r[16] == 0x44332211 }},
		{0xb9408a01, "ldr w1, [x16, #136]", func(r *fakeRegs) { r.r[16] = sp - 136 }, 0, func(r *fakeRegs, _ *fakeMem) bool { return r.r[1] == 0x44332211 }},
		{0xb9008a11, "str w17, [x16, #136]", func(r *fakeRegs) { r.r[16], r.r[17] = sp-136, 0xffffffff00c0ffee }, 0, func(_ *fakeRegs, m *fakeMem) bool {
			return m.peek64(sp) == 0x8877665500c0ffee && m.peek64(sp+8) == 0
		}},
		{0x6b01023f, "cmp w17, w1", func(r *fakeRegs) { r.r[17], r.r[1] = 0xffffffff00000005, 5 }, pstateZ | pstateC, nil},
		{0x6b01023f, "cmp w17, w1", func(r *fakeRegs) { r.r[17], r.r[1] = 0, 0xffffffff00000001 }, pstateN, nil},
		{0x6b01023f, "cmp w17, w1", func(r *fakeRegs) { r.r[17], r.r[1] = 0x80000000, 1 }, pstateC | pstateV, nil},
		{0x6b01023f, "cmp w17, w1", func(r *fakeRegs) { r.r[17], r.r[1] = 1<<32|2, 1 }, pstateC, nil},
	} {
		if _, err := exec.LookPath("aarch64-linux-gnu-objdump"); err == nil {
			if got := gnuDisasm(t, a64Words(c.word), 0); got[0] != c.text {
				t.Errorf("%#08x is %q, want %q", c.word, got[0], c.text)
			}
		}
		m := newMem().poke(sp-0x40, make([]byte, 0x80)).poke64(sp, word)
		r := abRegs(sp, nil)
		if c.in != nil {
			c.in(r)
		}
		want := r.clone()
		err := a64Exec(a64Words(c.word), pTramp, r, m)
		if err != nil || r.pc != pTramp+4 || r.flags != c.flags || c.want != nil && !c.want(r, m) {
			t.Errorf("%s: %v, flags %#x, want %#x; registers %+v, word at sp %#x", c.text, err, r.flags, c.flags, *r, m.peek64(sp))
		}
		// Nothing else changes: the loads write their Rt alone, CMP
		// wzr (31, not sp), STR no register.
		r.flags, r.pc = want.flags, want.pc
		if rt := c.word & 31; strings.HasPrefix(c.text, "ldr ") {
			r.r[rt] = want.r[rt]
		}
		if *r != *want {
			t.Errorf("%s: registers after\n got %+v\nwant %+v", c.text, *r, *want)
		}
	}
	if _, err := exec.LookPath("aarch64-linux-gnu-objdump"); err == nil {
		if got := gnuDisasm(t, a64Words(0xb8705a30), 0); got[0] != "ldr w16, [x17, w16, uxtw #2]" {
			t.Errorf("0xb8705a30 is %q", got[0])
		}
	}
	m := newMem().poke(sp-0x40, make([]byte, 0x80))
	r := abRegs(sp, nil)
	r.r[16], r.r[17] = 2, sp-8
	if err := a64Exec(a64Words(0xb8705a30), pTramp, r, m); err == nil {
		t.Error("ldr w16, [x17, w16, uxtw #2] emulated")
	}
}

// abCPUBooks are the books of the runs of the check of the CPU, each with
// the clock abClock: without a closer or nodes, with a closer (x2 saved
// at the entry too), and with nodes (x2 and x3).
var abCPUBooks = []struct {
	name string
	b    Book
}{
	{"plain", Book{Offset: 0x40, Frames: 16, Funcs: 3, Table: abTable, Areas: abAreas, Clock: abClock}},
	{"closer", Book{Offset: 0x40, Frames: 16, Funcs: 3, Table: abTable, Areas: abAreas, Closer: abCloserWord, Clock: abClock}},
	{"nodes", Book{Offset: 0x40, Frames: 16, Funcs: 3, Nodes: 8, Table: abTable, Areas: abAreas, Clock: abClock}},
}

// TestBookCPUGoesARM64 runs, in the A64 interpreter where the counter
// counts the instructions run, the entry and the exit of a call of a
// function of each of abCPUBooks, where the thread was on its CPU since
// its last event: with no clock (Clock 0: the code, abCPULen
// instructions shorter, has no check, and nothing is mapped at abClock
// past the area: a read there would fault), and with the page's lock word
// the one BookLock holds (its 32 bits: the next word of the page and the
// 32 bits after BookLock differ). Each goes on at its end with every
// register back but x16, x17 and the flags, BookLock and the page as
// they were, and the call is booked: the top back, one call, none open,
// its time its own. With the clock, the entry runs abCPURan instructions
// of its check after its reading of the counter: the call's time, from
// the entry's reading to the exit's, is that much longer.
func TestBookCPUGoesARM64(t *testing.T) {
	const f, sp = 1, abSP - 0x100
	for _, book := range abCPUBooks {
		var took, lens [2]uint64
		for i, clock := range []uint64{0, abClock} {
			b := book.b
			b.Clock = clock
			entries, exits := abCloserCode(t, b)
			lens[i] = uint64(len(entries[f].Code)+len(exits[f].Code)) / 4
			name := fmt.Sprintf("%s, clock %#x", book.name, clock)
			mem, ticks := abMem(b), uint64(1000)
			if b.Nodes > 0 {
				abAddNode(mem, b, RootNode, f)
			}
			abSetClock(mem, b, abLock)
			if clock == 0 && !abUnmapped(mem, abArea+abClock+PerfPageLock) {
				t.Fatalf("%s: the page mapped", name)
			}
			want := mem.clone()
			for _, c := range []struct {
				what string
				code BookCode
			}{{"entry", entries[f]}, {"exit", exits[f]}} {
				r := abRegs(sp, &ticks)
				before := r.clone()
				if err := a64Exec(c.code.Code, pTramp, r, mem); err != nil {
					t.Fatalf("%s: %s: %v", name, c.what, err)
				}
				r.r[16], r.r[17], r.flags, before.pc = before.r[16], before.r[17], before.flags, pTramp+uint64(len(c.code.Code))
				if *r != *before {
					t.Errorf("%s: %s: registers after\n got %+v\nwant %+v", name, c.what, *r, *before)
				}
			}
			for _, at := range []uint64{abArea + b.Offset + BookLock, abArea + abClock + PerfPageLock} {
				if got := mem.peek64(at); got != want.peek64(at) {
					t.Errorf("%s: %#x written: %#x, was %#x", name, at, got, want.peek64(at))
				}
			}
			fig := abFigures(mem, b)
			took[i] = mem.peek64(abArea+b.Offset+BookLast) - mem.peek64(abArea+b.FrameAt(1)+FrameTime)
			if top := mem.peek64(abArea + b.Offset + BookTop); top != b.FrameAt(1) {
				t.Errorf("%s: top %#x, want %#x", name, top, b.FrameAt(1))
			}
			if got, want := [4]uint64{fig[f][FigureCalls/8], fig[f][FigureOpen/8], fig[f][FigureSelf/8], fig[f][FigureInclusive/8]}, [4]uint64{1, 0, took[i], took[i]}; got != want {
				t.Errorf("%s: calls, open calls, own time and with children %v, want %v", name, got, want)
			}
		}
		if lens[1] != lens[0]+2*abCPULen {
			t.Errorf("%s: entry and exit %d instructions with the clock, %d without; want %d more", book.name, lens[1], lens[0], 2*abCPULen)
		}
		if took[1] != took[0]+abCPURan {
			t.Errorf("%s: the call took %d with the clock, %d without; want %d more", book.name, took[1], took[0], abCPURan)
		}
	}
}

// TestBookCPUStopsARM64 runs, in the A64 interpreter, the entry and the
// exit of a function of each of abCPUBooks where the page's lock word is
// not the one BookLock holds (the thread was off its CPU): the entry with
// no call open, the exit with its call open. Each stops at its BRK (the
// PC at the code's Stop less 4, within the rollback range that restores
// the saved registers), x0 the time it read, BookLock the page's word now
// (its 32 bits, not the 32 after it); it writes nothing else but its save
// slots: no frame opened or closed (the top, the frames and the figures
// as they were; the exit not even the last exit's time), the page as it
// was. PROFILE, putting the saved registers back from the save slots and
// the PC at the code's end, gives the thread every register back but
// x16, x17 and the flags.
func TestBookCPUStopsARM64(t *testing.T) {
	const f, sp = 1, abSP - 0x100
	for _, book := range abCPUBooks {
		b := book.b
		entries, exits := abCloserCode(t, b)
		for _, exit := range []bool{false, true} {
			name, c := book.name+": entry", entries[f]
			mem, ticks := abMem(b), uint64(1000)
			if b.Nodes > 0 {
				abAddNode(mem, b, RootNode, f)
			}
			abSetClock(mem, b, abLock)
			if exit {
				name, c = book.name+": exit", exits[f]
				if err := a64Exec(entries[f].Code, pTramp, abRegs(sp, &ticks), mem); err != nil {
					t.Fatalf("%s: the entry: %v", name, err)
				}
			}
			const lock = abLock + 3
			mem.poke(abArea+b.Clock+PerfPageLock, binary.LittleEndian.AppendUint32(nil, lock))
			r := abRegs(sp, &ticks)
			before, want, read := r.clone(), mem.clone(), ticks+uint64(abIndex(c.Code, 0xffffffe0, abMrsCnt))
			err := a64Exec(c.Code, pTramp, r, mem)
			var brk a64Break
			if !errors.As(err, &brk) || r.pc != brk.pc || brk.pc+4 != pTramp+uint64(c.Stop) {
				t.Fatalf("%s: %v, at %#x; want a stop at %#x", name, err, r.pc, pTramp+uint64(c.Stop)-4)
			}
			if at, rb := int(brk.pc-pTramp), c.Rollback[1]; at < rb.From || at >= rb.To || len(rb.Restore) != len(c.Saved) {
				t.Errorf("%s: the stop at %#x outside the rollback range %+v", name, at, rb)
			}
			if r.r[0] != read {
				t.Errorf("%s: x0 %d at the stop, want %d, the time read", name, r.r[0], read)
			}
			for _, s := range c.Saved {
				want.poke64(abArea+s.Offset, before.r[s.Reg])
			}
			want.poke(abArea+b.Offset+BookLock, binary.LittleEndian.AppendUint32(nil, lock))
			if !equalMem(mem, want) {
				t.Errorf("%s: the book written: BookLock %#x, top %#x, function %d's figures %v", name,
					mem.peek64(abArea+b.Offset+BookLock), mem.peek64(abArea+b.Offset+BookTop), f, abFigures(mem, b)[f])
			}
			// PROFILE lets the thread go at the code's end.
			for _, s := range c.Saved {
				r.r[s.Reg] = mem.peek64(abArea + s.Offset)
			}
			r.pc, r.r[16], r.r[17], r.flags = pTramp+uint64(len(c.Code)), before.r[16], before.r[17], before.flags
			before.pc = r.pc
			if *r != *before {
				t.Errorf("%s: registers put back\n got %+v\nwant %+v", name, *r, *before)
			}
		}
	}
}

// TestBookCPUUncheckedARM64 runs the code of a Go function's book and of
// an untimed book, each with the clock abClock, whose code checks
// nothing: it is the code of the same book without a clock, word for
// word, and loads neither a word from the area by a register's distance
// nor BookLock. Nothing is mapped at abClock past the thread's area, nor
// past the goroutines' books' bases (a read there would fault):
// TestGoBookCodeRunsARM64's run (on its two goroutines, with and without
// caller stacks) and TestUntimedBookCodeRunsARM64's calls go on and book
// their calls as ever, and BookLock is as it was. A closer has no check
// either: it is the same with a clock.
func TestBookCPUUncheckedARM64(t *testing.T) {
	unchecked := func(name string, b Book, entries, exits []BookCode) {
		t.Helper()
		plain := b
		plain.Clock = 0
		plainEntries, plainExits := abCloserCode(t, plain)
		codes, wants := slices.Concat(entries, exits), slices.Concat(plainEntries, plainExits)
		for i, c := range codes {
			if !bytes.Equal(c.Code, wants[i].Code) {
				t.Errorf("%s: code %d differs from its code without a clock", name, i)
			}
			if i := abIndex(c.Code, 0xffe0ffe0, a64LdrReg32(0, a64X16, 0)); i >= 0 {
				t.Errorf("%s: a word loaded from x16 and a register at %#x", name, 4*i)
			}
			if i := abIndex(c.Code, 0xffffffe0, a64Ldr32(0, a64X16, uint32(b.Offset+BookLock))); i >= 0 {
				t.Errorf("%s: BookLock loaded at %#x", name, 4*i)
			}
		}
	}
	lock := func(name string, mem *fakeMem, base uint64, b Book) {
		t.Helper()
		if got := mem.peek64(base + b.Offset + BookLock); got != abLockNext<<32|abLock {
			t.Errorf("%s: BookLock %#x written", name, got)
		}
	}
	for _, nodes := range []int{0, 16} {
		g := agBook(nodes)
		g.Clock = abClock
		name := fmt.Sprintf("Go, %d nodes", nodes)
		entries, exits := abCloserCode(t, g)
		unchecked(name, g, entries, exits)
		th := newAgThread(t, g)
		for _, base := range []uint64{abArea, agA.base, agB.base} {
			th.mem.poke64(base+g.Offset+BookLock, abLockNext<<32|abLock)
			if !abUnmapped(th.mem, base+abClock+PerfPageLock) {
				t.Fatalf("%s: a page mapped at %#x", name, base+abClock)
			}
		}
		agCheckRun(th, agRun(th, entries, exits))
		for _, base := range []uint64{abArea, agA.base, agB.base} {
			lock(name, th.mem, base, g)
		}
	}

	u := Book{Offset: 0x40, Frames: 16, Funcs: 3, Table: abTable, Areas: abAreas, Untimed: true, Clock: abClock}
	entries, exits := abCloserCode(t, u)
	unchecked("untimed", u, entries, exits)
	code, offA, offC := abCalls(entries, exits)
	mem := abMem(u)
	mem.poke64(abArea+u.Offset+BookLock, abLockNext<<32|abLock)
	if !abUnmapped(mem, abArea+abClock+PerfPageLock) {
		t.Fatal("untimed: the page mapped")
	}
	var ticks uint64
	abRunCalls(t, "untimed: ", code, offA, offC, mem, &ticks)
	for f, calls := range []uint64{1, 2, 3} {
		if got := abFigures(mem, u)[f][FigureCalls/8]; got != calls {
			t.Errorf("untimed: function %d: %d calls, want %d", f, got, calls)
		}
	}
	lock("untimed", mem, abArea, u)

	b := abCPUBooks[1].b
	closer, ok1 := ARM64.BookCloserCode(b)
	b.Clock = 0
	plain, ok2 := ARM64.BookCloserCode(b)
	if !ok1 || !ok2 || !bytes.Equal(closer, plain) {
		t.Errorf("closer with a clock %v, without %v: not the same", ok1, ok2)
	}
}
