package profile

import (
	"encoding/binary"
	"syscall"

	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// inCode is the books' side of a thread PROFILE finds inside book code
// (ledger.go): stopped at the code's breakpoint, its event booked and
// the thread moved to the code's end (pass); stopped there for a
// signal, moved out the same way (leaveAtStop); let go, moved back to
// the code's start (restart); and where the code saved its registers.
type inCode struct{ *ledgers }

// pass books the event of thread th stopped at the breakpoint at addr of
// book code (its registers in l.regs) and moves it to the code's end,
// its registers back, and reports whether it was book code's.
func (l inCode) pass(th *thread, addr uint64) bool {
	after := addr + uint64(len(l.arch.Breakpoint()))
	r, start, ok := l.region(after)
	if !ok {
		return false
	}
	site := r.book
	now := l.regs.Reg(site.saved[0].Reg) // (the counter's time, read by the code)
	if clockPages(l).settleAt(th, now) {
		l.cpu.stops++ // (the thread left its CPU: no stop the books' rules made)
	} else {
		l.stops++
	}
	b := l.bookEvent(th, site, l.regs, now)
	if stop, ok := l.seen[th.tid]; ok {
		stop.atEvent = true
		l.seen[th.tid] = stop
	}
	block := l.counters.layout.BookMem(l.counters.shared.Bytes(), b)
	for _, s := range site.saved {
		l.regs.SetReg(s.Reg, binary.LittleEndian.Uint64(block[s.Offset:]))
	}
	l.regs.SetPC(start + uint64(site.end))
	return true
}

// bookEvent books the event of book code site, which thread th (its
// registers regs) is in, at time now, in the book its code finds, and
// returns the block whose book the code saved the registers in
// (saveArea).
func (l inCode) bookEvent(th *thread, site *bookSite, regs *ptrace.Regs, now uint64) int {
	sp := l.arch.SP(regs) - site.sp
	var b int
	var p *books.ProgramBook
	if site.goroutine {
		b = l.saveArea(th.tid, site, l.arch.SP(regs))
		p, sp = l.gos.frame(th, site.item, sp)
	} else {
		b, p = l.bookFor(th.tid, l.arch.SP(regs))
	}
	if site.exit {
		p.Exit(site.item, sp, now)
	} else {
		p.Enter(site.item, sp, now)
	}
	return b
}

// region returns the region of book code whose breakpoint ends at
// after, and where the code starts.
func (l inCode) region(after uint64) (region, uint64, bool) {
	c := l.counters
	if c == nil {
		return region{}, 0, false
	}
	tr := trampAt(c.tramps, after-1)
	if tr == nil {
		return region{}, 0, false
	}
	for _, r := range tr.regions {
		if r.book != nil && tr.addr+uint64(r.at+r.bookStop) == after {
			return r, tr.addr + uint64(r.at), true
		}
	}
	return region{}, 0, false
}

// restart moves thread tid, stopped inside book code before the code
// commits, back to the code's start, its registers as they were there
// (detach.go: the start then jumps over the code).
func (l inCode) restart(tid int) {
	c, proc := l.counters, l.proc
	if c == nil {
		return
	}
	var regs ptrace.Regs
	if proc.getRegs(tid, &regs) != nil {
		return
	}
	// (A thread inside the closer is stepped out of it first: it
	// returns into the book code, before its commit.)
	for steps := 0; l.inCloser(regs.PC()) && steps < stepOutLimit; steps++ {
		ws, gone, err := stepThrough(proc, tid)
		if gone || err != nil || !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP || proc.getRegs(tid, &regs) != nil {
			return
		}
	}
	pc := regs.PC()
	for rg, start := range regionsAt(c.tramps, pc) {
		if rg.book != nil && c.rollOut(&regs, l.saveBase(tid, rg.book, &regs), start, int(pc-start), rg.rollback) {
			proc.setRegs(tid, &regs)
			return
		}
	}
}

// leaveAtStop moves thread th, stopped for a signal in book code before
// the code commits (its registers in regs, written back by the caller),
// out of the code: its event is booked here at the time the thread
// stopped, its registers come back as the code saved them, and it goes
// on at the code's end, so that a handler finds the program's own code
// and the book's save slots free. It reports whether it moved the thread;
// not where the code has committed, or the thread is in the closer (the
// code has read the counter there: it is stepped out, and its hold added
// after the steps, as the code would have read it had the stop come
// after its end).
//
// The thread is not rolled back to the code's start and stepped through
// it, as a ring's record code is: the code reads the counter and the
// time PROFILE held the thread at instructions some way apart, and
// PROFILE's steps between them, added to the hold, would not be in the
// counter's interval, or the other way round (a call charged or spared
// the steps: TestTimingAlternateStack's outer below spin, under load).
func (l inCode) leaveAtStop(th *thread, regs *ptrace.Regs) bool {
	c := l.counters
	if c == nil || th.foreign {
		return false
	}
	pc := regs.PC()
	for rg, start := range regionsAt(c.tramps, pc) {
		if rg.book == nil || pc >= start+uint64(rg.book.end) {
			continue
		}
		if !c.rollOut(regs, l.saveBase(th.tid, rg.book, regs), start, int(pc-start), rg.rollback) {
			return false
		}
		now := l.stopTime(th)
		clockPages(l).settleAt(th, now)
		l.bookEvent(th, rg.book, regs, now)
		regs.SetPC(start + uint64(rg.book.end))
		return true
	}
	return false
}

// stopTime returns when stopped thread th stopped, on the books' clock:
// when PROFILE saw it, less what it lost before then (lost), the start
// of the hold its release adds.
func (l inCode) stopTime(th *thread) uint64 {
	stop, ok := l.seen[th.tid]
	if !ok {
		stop.at = l.clocks.waited
	}
	p, g, ok := l.heldBooks(th)
	if !ok {
		return l.now(stop.at)
	}
	return l.now(stop.at) - uint64(l.lost(th, p, g, stop))
}

// saveArea returns the block, or the area of the table, whose book the
// code of site saved thread tid's registers in, its stack pointer sp: the
// one its code finds (bookFor); for a Go function's code on arm64, the
// area the thread's pointer names (instr's arm64_gobook.go), the discard
// area where it names none.
func (l inCode) saveArea(tid int, site *bookSite, sp uint64) int {
	lay := &l.counters.layout
	if !site.goroutine || !lay.Table {
		b, _ := l.bookFor(tid, sp)
		return b
	}
	tp, err := l.proc.threadPointer(tid)
	if err != nil {
		return 0
	}
	b, _ := lay.AreaAt(tp) // (0, the discard area, for none)
	return b
}

// saveBase is the base of the save slots of site's code, run by thread
// tid with registers regs, for counters.rollOut: its thread base (amd64),
// the area its thread pointer names for a Go function's code on arm64,
// else 0 (the area of its stack pointer).
func (l inCode) saveBase(tid int, site *bookSite, regs *ptrace.Regs) uint64 {
	if lay := &l.counters.layout; lay.Table && site.goroutine {
		return lay.AreaAddr(l.saveArea(tid, site, l.arch.SP(regs)))
	}
	return regs.ThreadBase()
}

// inCloser reports whether pc is in the closer's page.
func (l inCode) inCloser(pc uint64) bool {
	return l.closer != 0 && pc >= l.closer && pc < l.closer+l.closerSize
}
