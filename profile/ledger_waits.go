package profile

import (
	"encoding/binary"
	"errors"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/layout"
)

// Time on a CPU per call (issue 33, part 8; docs/architecture.md, "Time
// on a CPU per call"). A function's time is elapsed; to show each call's
// time on a CPU as well, PROFILE measures the times the threads spent
// off a CPU (asleep, blocked, preempted) and charges each to the calls
// open when it happened (books.Waits).
//
// The kernel tells a thread's code cheaply when the thread came back
// onto a CPU: each thread gets a task clock event (perf_event_open,
// opened by the thread itself, in a few system calls PROFILE makes it
// run as its book opens), whose page PROFILE maps in the program at a
// fixed distance from the thread's block, or area (instr.Book.Clock), in
// a region it keeps for them after the memory it shares, readable
// throughout (pages of zeros where no clock is). The kernel updates the
// page each time the thread is scheduled in, and counts the updates in
// its word lock. The timed book code compares that word with the one
// its book noted: the same, and the thread stayed on its CPU since its
// last event; else the code notes the new word and leaves the event to
// PROFILE. PROFILE then reads the thread's CPU time (the kernel's, the
// thread stopped), and the wait is the time since the last such
// reading, less PROFILE's holds of the thread meanwhile, less the CPU
// time. A stop of PROFILE's own takes the thread off its CPU too: as
// PROFILE lets the thread go it adds two to the word the book noted (one
// update, as the thread comes back), so that its own stops are not taken
// for waits, and where that guess is wrong the next event stops once
// more and finds no wait. One stop a reschedule, not two system calls a
// call. The page is found at a distance, not through a pointer in the
// memory the program shares and could write over.

// clockPages is the ledgers' side of the threads' clocks' pages.
type clockPages struct{ *ledgers }

// offCPU is the ledgers' measure of the threads' waits.
type offCPU struct {
	// on is set where the run measures them: a timing run whose
	// functions are all keyed by the stack pointer (a goroutine's waits
	// are not its thread's), and where the region of the pages could be
	// had (reserve).
	on    bool
	waits *books.Waits
	// marks holds the last settling of each thread's waits.
	marks map[int]*cpuMark
	// region is where the threads' pages are in the program.
	region layout.Clocks
	// stops counts the events the code left to PROFILE for a wait.
	stops uint64
}

// cpuMark is where a thread's waits were last settled: the lock word
// PROFILE left in its book, and, at that moment, the books' time, the
// thread's held time and its time on a CPU.
type cpuMark struct {
	lock    uint32
	t, held uint64
	cpu     int64
}

// perf_event_open(2)'s attributes, in their first version (64 bytes):
// the task clock, a software event, counting the thread's user time
// alone (which any perf_event_paranoid below 3 allows, and which counts
// as the thread's time on a CPU all the same).
const (
	perfTypeSoftware   = 1
	perfCountTaskClock = 1
	perfAttrSize       = 64
	perfExcludeKernel  = 1 << 5
	perfExcludeHV      = 1 << 6
	perfFlagCloexec    = 8
)

// newOffCPU returns the measure of the waits of a run of funcs functions
// (stacks: with caller stacks), on where it measures them.
func newOffCPU(on bool, funcs int, stacks bool) offCPU {
	return offCPU{on: on, waits: books.NewWaits(funcs, stacks), marks: map[int]*cpuMark{}}
}

// reserve keeps the region of the threads' pages in the program, next
// to the memory it shares with PROFILE, [start, end) there
// (layout.Layout.ClockCandidates), mapped readable and all zeros,
// through sys; where it cannot, the run measures no waits.
func (o *offCPU) reserve(lay *layout.Layout, start, end, pageSize uint64, sys func(call instr.Syscall, args ...uint64) (uint64, error)) {
	if !o.on {
		return
	}
	for _, at := range lay.ClockCandidates(start, end, pageSize) {
		o.region = lay.PlaceClocks(at, pageSize)
		at, size := o.region.Region(lay)
		got, err := sys(instr.SysMmap, at, size, protRead, mapPrivate|mapAnon|mapFixedNoReplace, noFD, 0)
		if err == nil && got == at && size > 0 {
			return
		}
		if err == nil {
			sys(instr.SysMunmap, got, size) // (a kernel before 4.17: the hint not taken)
		}
	}
	o.on, o.region = false, layout.Clocks{}
}

// mapPage opens the task clock of thread th, whose book p, of block b,
// is new, and maps its page at the block's place in the region; the
// thread's waits are counted from now, at. A thread whose clock cannot
// be had leaves the run's waits unmeasured.
func (l clockPages) mapPage(th *thread, b int, p *books.ProgramBook, at uint64) {
	if !l.cpu.on || th == nil || th.foreign || b == 0 {
		return
	}
	if err := l.openClock(th.tid, b); err != nil {
		l.cpu.waits.Unmeasured()
		return
	}
	cpu, err := l.proc.cpuTime(th.tgid, th.tid)
	if err != nil {
		l.cpu.waits.Unmeasured()
		return
	}
	// (The page's word is read by the code, not by PROFILE, which cannot
	// read such a mapping: 0 noted, the thread's first event stops once.)
	books.ClockOf(p).SetLock(0)
	l.cpu.marks[th.tid] = &cpuMark{t: at, held: p.Held(), cpu: cpu}
}

// opened counts thread th's waits from its birth on the books' clock,
// when its clock opens (onCPU.open), its time on a CPU then cpu, as the
// run's times count: a book made before (the main thread's, at the exec
// stop) would otherwise count PROFILE's start-up, its planting and its
// calibration, the thread stopped and not held in its book, as a wait.
func (l clockPages) opened(th *thread, cpu int64) {
	m := l.cpu.marks[th.tid]
	p := l.open[l.blockOf[th.tid]]
	if m == nil || p == nil {
		return
	}
	m.t, m.held, m.cpu = l.now(th.born), p.Held(), cpu
}

// openClock makes thread tid open its task clock and map its page at
// block b's place, over what was there (the page of the block's thread
// before, whose clock that closes, or zeros). The attributes are written
// in the book's first frame, free in a new book.
func (l clockPages) openClock(tid, b int) error {
	lay := &l.counters.layout
	at := lay.Book().FrameAt(1)
	mem := lay.BookMem(l.counters.shared.Bytes(), b)[at : at+perfAttrSize]
	defer clear(mem)
	binary.LittleEndian.PutUint32(mem[0:], perfTypeSoftware)
	binary.LittleEndian.PutUint32(mem[4:], perfAttrSize)
	binary.LittleEndian.PutUint64(mem[8:], perfCountTaskClock)
	binary.LittleEndian.PutUint64(mem[40:], perfExcludeKernel|perfExcludeHV)
	fd, err := l.sys(tid, instr.SysPerfEventOpen, lay.BookAddr(b)+at, 0, ^uint64(0), noFD, perfFlagCloexec) // (this thread, any CPU, no group)
	if err != nil {
		return err
	}
	slot := l.cpu.region.Page(lay, b)
	page, err := l.sys(tid, instr.SysMmap, slot, l.cpu.region.PageSize, protRead, mapShared|mapFixed, fd, 0)
	if _, cerr := l.sys(tid, instr.SysClose, fd); err == nil && cerr != nil {
		return cerr
	}
	if err == nil && page != slot {
		err = errors.New("the clock's page not mapped at its place")
	}
	return err
}

// settle charges the wait thread th's book code found (the page's word
// it noted not the one PROFILE left), at time now on the books' clock,
// to the calls open in its book p, before its event is booked; at the
// thread's end, whatever the word, the wait since the last settling.
func (l clockPages) settle(th *thread, p *books.ProgramBook, now uint64, end bool) bool {
	m := l.cpu.marks[th.tid]
	if m == nil || (books.ClockOf(p).Lock() == m.lock && !end) {
		return false
	}
	m.lock = books.ClockOf(p).Lock()
	cpu, err := l.proc.cpuTime(th.tgid, th.tid)
	if err != nil {
		return true
	}
	held := p.Held()
	wait := int64(now-m.t) - int64(max(held, m.held)-m.held) - (cpu - m.cpu)
	l.cpu.waits.Charge(books.OpenFuncs(p), wait)
	m.t, m.held, m.cpu = now, held, cpu
	return true
}

// released notes, as PROFILE lets thread th go (its book p), that its
// stop took it off its CPU: the page's next update is its own.
func (l clockPages) released(th *thread, p *books.ProgramBook) {
	if m := l.cpu.marks[th.tid]; m != nil {
		c := books.ClockOf(p)
		m.lock = c.Lock() + 2
		c.SetLock(m.lock)
	}
}

// settleAt settles thread th's waits in its own book, at now, before
// an event of its book code is booked, and reports whether the code
// found the thread had left its CPU.
func (l clockPages) settleAt(th *thread, now uint64) bool {
	p, _, ok := l.heldBooks(th)
	return ok && l.settle(th, p, now, false)
}

// unmapAll unmaps the region of the threads' pages in a process PROFILE
// lets go, in its stopped thread tid, the book code no longer run
// (counters.unchecked): each page was the last hold on its task clock,
// which the kernel then closes, so that no clock of PROFILE's stays on
// the process's threads.
func (l clockPages) unmapAll(tid int) {
	if !l.cpu.on {
		return
	}
	at, size := l.cpu.region.Region(&l.counters.layout)
	l.sys(tid, instr.SysMunmap, at, size) // (a region left is pages, and clocks that count)
	l.cpu.on = false
}
