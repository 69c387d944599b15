package profile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"syscall"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// The books kept in the program, their code (ledger.go): what the
// trampolines of a timed function run (eventCode), the closer they call
// (mapCloser), how a thread is moved out of the code for a signal
// (leaveAtStop) or when PROFILE lets go (restart), and what the code
// costs (calibrate).

// timed times every function keyed by the stack pointer (timer).
func (l *ledgers) timed(f *datafile.Func) error {
	if f.Frame != datafile.FrameSP && !(l.gos.on && goFrames(f)) {
		return errGoFrames
	}
	return nil
}

// bookSite is what a region of book code tells PROFILE: the function,
// the event, the stack pointer's distance above its entry's, the
// registers the code saved, which go back as the thread goes on at the
// code's end, and whether the function is Go's, its calls in its
// goroutine's book (ledger_go.go).
type bookSite struct {
	item      int
	exit      bool
	sp        uint64
	end       int
	saved     []instr.SavedReg
	goroutine bool
}

// eventCode returns the book code of event ev of item (timer).
func (l *ledgers) eventCode(item int, ev timedEvent) timedCode {
	b := l.layout()
	var bc instr.BookCode
	site := &bookSite{item: item, exit: ev != entryEvent}
	if item < len(l.plan.Funcs) && l.gos.on {
		b.Go, b.Closer, site.goroutine = true, l.gos.closer, true
	}
	switch ev {
	case entryEvent:
		bc, _ = l.arch.BookEntryCode(b, item)
	case exitEvent:
		bc, _ = l.arch.BookExitCode(b, item, 0)
	case returnEvent:
		site.sp = instr.ReturnPop(l.arch)
		bc, _ = l.arch.BookExitCode(b, item, int(site.sp))
	}
	site.end, site.saved = len(bc.Code), bc.Saved
	return timedCode{code: bc.Code, region: region{rollback: bc.Rollback, bookStop: bc.Stop, book: site, unchecked: bc.Unchecked}, scratch: bc.Scratch}
}

// errCalibration is why the calibration of the book code failed.
var errCalibration = errors.New("the calibration code did not end at its breakpoint")

// calibrate measures what the book code costs the program, in nanoseconds
// (instr.BookCalibration): the main thread, at the exec stop, runs the
// two calibration blocks at code (with, without) a few times over; the
// least time of each block over the rounds is taken (what the machine
// adds, an interrupt, a migration, only adds). Its registers come back,
// its book is emptied; the costs are taken out of the figures at the
// end (ledgers.costs), where the run did not measure them itself.
func (l *ledgers) calibrate(cal *calibration) error {
	proc, pid := cal.proc, cal.pid
	var saved ptrace.Regs
	if err := proc.getRegs(pid, &saved); err != nil {
		return err
	}
	defer proc.setRegs(pid, &saved)
	b := l.blockOf[pid]
	outer, inner := len(l.plan.Funcs)+calOuter, len(l.plan.Funcs)+calInner
	run := func(addr uint64) (books.Figure, books.Figure, error) {
		p := l.openBook(b)
		p.AddPath(outer, inner) // (its code finds their nodes: it does not stop)
		regs := cal.borrowed(saved)
		regs.SetPC(addr)
		if err := proc.setRegs(pid, &regs); err != nil {
			return books.Figure{}, books.Figure{}, err
		}
		if err := proc.cont(pid, 0); err != nil {
			return books.Figure{}, books.Figure{}, err
		}
		ws, err := proc.waitFor(pid, 0)
		if err != nil {
			return books.Figure{}, books.Figure{}, err
		}
		if !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP || p.Open() != 0 {
			return books.Figure{}, books.Figure{}, fmt.Errorf("%w (%v)", errCalibration, ws.StopSignal())
		}
		return p.Figure(outer), p.Figure(inner), nil
	}
	var in, with, without []int64
	const rounds = 31
	for round := range rounds {
		o, i, err := run(l.counters.calibration[0])
		if err != nil {
			return err
		}
		o2, _, err := run(l.counters.calibration[1])
		if err != nil {
			return err
		}
		if round > 0 && i.Calls == calibrationRecords && o.Calls == 1 && o2.Calls == 1 {
			in, with, without = append(in, i.Self), append(with, o.All), append(without, o2.All)
		}
	}
	if len(in) == 0 {
		return errCalibration
	}
	// (To the nanosecond, as books.Costs.Scaled makes the run's own.)
	costIn := math.Round(float64(max(slices.Min(in), 0)) / calibrationRecords)
	costAll := math.Round(float64(max(slices.Min(with)-slices.Min(without), 0)) / calibrationRecords)
	l.calibrated = books.Costs{In: min(costIn, costAll), Out: max(costAll-costIn, 0)}
	l.openBook(b)
	return nil
}

// layout is the book of every block, its closer's word and its clock's
// page included: the book its code keeps.
func (l *ledgers) layout() instr.Book {
	b := l.bookOfBlocks()
	b.Closer = l.closer
	b.Untimed = !l.plan.Method.IsTiming()
	if l.cpu.on {
		b.Clock = l.cpu.region.Distance(&l.counters.layout)
	}
	return b
}

// bookOfBlocks is the book of every block as PROFILE keeps it where the
// code leaves an event to it: with the start function, whose rule it
// applies as the code does (instr.Book.Start).
func (l *ledgers) bookOfBlocks() instr.Book {
	b := l.counters.layout.Book()
	b.Start = startOf(l.plan)
	return b
}

// startOf is the plan's start function for the book code
// (instr.Book.Start): its number plus one, 0 for none, and one past
// every function's where the plan names one it does not have (nothing
// counts).
func startOf(p *datafile.Plan) int {
	switch {
	case p.StartFunc == "":
		return 0
	case p.StartIndex < 0 || p.StartIndex >= len(p.Funcs):
		return len(p.Funcs) + calFuncs + 1
	}
	return p.StartIndex + 1
}

// closerHints are where the books' closer may go, from the top of the
// lowest 2 GiB down: where a program's own mappings seldom are.

var closerHints = []uint64{0x7ff00000, 0x6ff00000, 0x5ff00000, 0x4ff00000, 0x3ff00000, 0x2ff00000, 0x1ff00000}

// mapCloser maps a page for the books' closer in the lowest 2 GiB
// (instr.Book.Closer), read-only to the program, through mmap, and
// writes its address and code there with write: the word of the
// threads' closer, then, where Go functions are timed, the word of the
// goroutines' (ledger_go.go), then their code. Where no page is found
// there, the book code has no closer: it leaves what it does not close
// itself to PROFILE, a stop each.
func (l *ledgers) mapCloser(mmap func(hint, size uint64) (uint64, error), pageSize uint64, write func(uint64, []byte) error) error {
	if _, ok := l.arch.BookCloserCode(l.counters.layout.Book()); !ok {
		return nil // (none on this architecture)
	}
	for _, hint := range closerHints {
		at, err := mmap(hint, pageSize)
		if err != nil || at != hint {
			continue
		}
		b := l.counters.layout.Book()
		b.Closer = at
		code, ok := l.arch.BookCloserCode(b)
		var goCode []byte
		if l.gos.on {
			// (None on arm64: Go's code there leaves what a closer
			// would close to PROFILE.)
			b.Go, b.Closer = true, at+8
			goCode, _ = l.arch.BookCloserCode(b)
		}
		if !ok || uint64(len(code)+len(goCode))+16 > pageSize {
			return nil
		}
		page := binary.LittleEndian.AppendUint64(make([]byte, 0, 16+len(code)+len(goCode)), at+16)
		if goCode != nil {
			page = binary.LittleEndian.AppendUint64(page, at+16+uint64(len(code)))
			l.gos.closer = at + 8
		} else {
			page = append(page, make([]byte, 8)...)
		}
		page = append(append(page, code...), goCode...)
		if err := write(at, page); err != nil {
			return fmt.Errorf("write the books' closer: %w", err)
		}
		l.closer, l.closerSize = at, pageSize
		return nil
	}
	return nil
}

// calibrationBlocks returns the code of the calibration (calibrate).
func (l *ledgers) calibrationBlocks() (with, without []byte) {
	n := len(l.plan.Funcs)
	b := l.layout()
	b.Start = 0 // (the calibration's calls count, whatever the start function)
	b.Clock = 0 // (and the main thread's clock stops none of them)
	with, without, _ = instr.BookCalibration(l.arch, b, n+calOuter, n+calInner, calibrationRecords)
	return with, without
}
