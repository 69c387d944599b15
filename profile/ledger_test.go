package profile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/layout"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// ledgerRig is a run's books in the program without a program: thread
// 100 with block 1, and the book code of f's entry (function 1) as a
// trampoline at tramAt.
type ledgerRig struct {
	l     *ledgers
	th    *thread
	code  instr.BookCode
	regs  ptrace.Regs
	block []byte
}

const tramAt = 0x7e0000

func newLedgerRig(t *testing.T) *ledgerRig {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skip("x86-64's book code, on the host's registers")
	}
	plan := &datafile.Plan{Method: datafile.FuncTiming, Funcs: []datafile.Func{{Name: "main"}, {Name: "f"}}}
	lay, size := layout.New(layout.Spec{Kind: instr.CountPerThread, Items: 2, Books: true, BookFuncs: 2 + calFuncs,
		MaxBlocks: 4, DepthSlots: 8})
	shared, err := ptrace.NewShared(int(size))
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { shared.Close() })
	lay.Place(0x7f0000000000)
	r := &ledgerRig{th: &thread{tid: 100, tgid: 100}}
	tr := &tracer{plan: plan, arch: instr.AMD64, threads: map[int]*thread{100: r.th}}
	tr.clocks.epoch = time.Now()
	c := &counters{shared: shared, layout: lay, next: 2, blockOf: map[int]int{100: 1}}
	r.l = newLedgers(tr)
	r.l.regs = &r.regs
	r.l.counters, r.l.scale = c, 1<<instr.BookScaleShift
	r.l.given(100, 1, true)
	tc := r.l.eventCode(1, entryEvent)
	r.code, _ = instr.AMD64.BookEntryCode(r.l.layout(), 1)
	c.tramps = []*tramp{{addr: tramAt, code: instr.Trampoline{Code: tc.code}, regions: []region{tc.at(0)}}}
	r.block = lay.Block(shared.Bytes(), 1)
	return r
}

// TestLedgerBooksAStop: a thread stops at the breakpoint of f's entry
// code, its entry above main's open call (main's exit was not seen): the
// stop is the ledgers', main's call closes at the time the code read, f's
// opens, and the thread goes on at the code's end with the registers the
// code saved. A breakpoint elsewhere is not theirs.
func TestLedgerBooksAStop(t *testing.T) {
	r := newLedgerRig(t)
	p := r.l.open[1]
	p.Enter(0, 0x1000, 1000) // main, open
	at := r.l.counters.layout.BookAt
	binary.LittleEndian.PutUint64(r.block[at+instr.BookSave:], 111)
	binary.LittleEndian.PutUint64(r.block[at+instr.BookSave+8:], 222)
	r.regs.SetPC(tramAt + uint64(r.code.Stop))
	r.regs.SetReg(r.code.Saved[0].Reg, 1500) // the time the code read
	r.l.arch.SetSP(&r.regs, 0x1000)
	if (inCode{r.l}).pass(r.th, tramAt+uint64(r.code.Stop)+8) {
		t.Fatal("a breakpoint past the code's taken for its own")
	}
	if !(inCode{r.l}).pass(r.th, tramAt+uint64(r.code.Stop-1)) {
		t.Fatal("the book code's breakpoint not taken")
	}
	if pc := r.regs.PC(); pc != tramAt+uint64(len(r.code.Code)) {
		t.Errorf("the thread goes on at %#x, want the code's end %#x", pc, tramAt+uint64(len(r.code.Code)))
	}
	for _, s := range r.code.Saved {
		if got, want := r.regs.Reg(s.Reg), binary.LittleEndian.Uint64(r.block[s.Offset:]); got != want || want < 111 {
			t.Errorf("register %d is %d, want %d as the code saved it", s.Reg, got, want)
		}
	}
	if m := p.Figure(0); m != (books.Figure{Calls: 1, Self: 500, All: 500, Outer: 1}) {
		t.Errorf("main %+v: want its call closed at 1500, 500 ns", m)
	}
	if p.Open() != 1 || p.LastTime() != 1500 || r.l.stops != 1 {
		t.Errorf("%d calls open, last event at %d, %d stops: want f's open at 1500, one stop", p.Open(), p.LastTime(), r.l.stops)
	}
}

// TestLedgerTakesBackAWrittenBook: a book the program wrote over is taken
// back at the next look, as it was at the thread's last signal, and
// counted for the warning; the figures taken at the signal stay the
// run's.
func TestLedgerTakesBackAWrittenBook(t *testing.T) {
	r := newLedgerRig(t)
	p := r.l.open[1]
	p.Enter(0, 0x1000, 1000)
	p.Enter(1, 0x0f00, 1100)
	p.Exit(1, 0x0f00, 1300)
	r.l.signalled(r.th) // f's call taken, main's frame kept
	top := r.l.counters.layout.BookAt + instr.BookTop
	for i := range uint64(64) {
		r.block[top+i] = byte(i) // a wild write
	}
	_, q := r.l.bookOf(100)
	if q != p || r.l.damaged != 1 || p.Damaged() || p.Open() != 1 {
		t.Fatalf("damaged %d, still damaged %v, %d open: want it taken back, main's call open", r.l.damaged, p.Damaged(), p.Open())
	}
	p.Exit(0, 0x1000, 2000)
	r.l.keep(1, p)
	if f, m := r.l.figs[1], r.l.figs[0]; f.Calls != 1 || f.Self != 200 || m.Calls != 1 || m.Kids != 1 {
		t.Errorf("f %d calls, %d ns; main %d calls, %d made: want f's call kept from the signal, main's closed", f.Calls, f.Self, m.Calls, m.Kids)
	}
}

// TestLedgerMapsTheCloser: the closer's page goes at the first of the
// hints the kernel gives exactly; its first word holds the closer's
// address, 16 bytes in, where its code is. With no hint given, or one
// given elsewhere, the book code has no closer (it stops instead), and a
// write that fails is an error.
func TestLedgerMapsTheCloser(t *testing.T) {
	r := newLedgerRig(t)
	const page = 4096
	var written map[uint64][]byte
	write := func(at uint64, b []byte) error { written[at] = b; return nil }
	for _, c := range []struct {
		name  string
		given map[uint64]uint64 // hint -> where the kernel maps it
		want  uint64
	}{
		{"the second hint", map[uint64]uint64{closerHints[1]: closerHints[1]}, closerHints[1]},
		{"none", map[uint64]uint64{}, 0},
		{"elsewhere", map[uint64]uint64{closerHints[0]: 0x7f0000000000}, 0},
	} {
		written, r.l.closer = map[uint64][]byte{}, 0
		mmap := func(hint, size uint64) (uint64, error) {
			if at, ok := c.given[hint]; ok && size == page {
				return at, nil
			}
			return 0, syscall.EEXIST
		}
		if err := r.l.mapCloser(mmap, page, write); err != nil || r.l.closer != c.want {
			t.Errorf("%s: closer at %#x (%v), want %#x", c.name, r.l.closer, err, c.want)
			continue
		}
		if c.want == 0 {
			if len(written) != 0 {
				t.Errorf("%s: %d writes, want none", c.name, len(written))
			}
			continue
		}
		code, _ := instr.AMD64.BookCloserCode(r.l.layout())
		w := written[c.want]
		if len(w) != 16+len(code) || binary.LittleEndian.Uint64(w) != c.want+16 || !bytes.Equal(w[16:], code) {
			t.Errorf("%s: the page holds %x, want the closer's address %#x, then its code", c.name, w[:min(len(w), 16)], c.want+16)
		}
		if in := (inCode{r.l}); !in.inCloser(c.want+20) || in.inCloser(c.want+page) {
			t.Errorf("%s: the closer's page not where it is", c.name)
		}
	}
	failing := func(uint64, []byte) error { return syscall.EIO }
	mmap := func(hint, size uint64) (uint64, error) { return hint, nil }
	if err := r.l.mapCloser(mmap, page, failing); err == nil || !strings.Contains(err.Error(), "write the books' closer") {
		t.Errorf("a failed write: %v, want it said", err)
	}
}

// TestLedgerHeldTime: a stop's hold goes into the thread's book as it is
// let go: from when PROFILE saw it stop to now, and no more than the
// time since the thread's last event before it; a release with no stop
// seen adds nothing.
func TestLedgerHeldTime(t *testing.T) {
	r := newLedgerRig(t)
	p := r.l.open[1]
	r.l.clocks.startCounter()
	r.l.start(r.l.counters) // (the scale measured, for the time of the thread's last event)
	r.l.clocks.waited = r.l.clocks.clock()
	r.l.stopSeen(r.th)
	before := r.l.clocks.clock()
	time.Sleep(2 * time.Millisecond)
	r.l.releasing(r.th)
	after := r.l.clocks.clock()
	held := int64(p.Held())
	if lo, hi := before-r.l.clocks.waited+2e6, after-r.l.clocks.waited; held < lo-1 || held > hi+1 {
		t.Errorf("held %d ns, want between %d and %d: the stop, seen to let go", held, lo, hi)
	}
	r.l.releasing(r.th)
	if int64(p.Held()) != held {
		t.Errorf("held %d ns after a release with no stop seen, want %d", p.Held(), held)
	}
	// A stop's cost of 1 ms, before PROFILE saw it, but the thread's
	// last event (an entry) 1 µs before then: 1 µs of it was held. (The
	// books' time of a moment of PROFILE's clock is read twice, each
	// time from the counter and the clock one after the other: a thread
	// of the test preempted between the two misreads it, so the best of
	// a few tries counts.)
	r.l.clocks.overhead, r.l.clocks.forced = 1e6, true
	var tries []string
	for range 5 {
		held = int64(p.Held())
		r.l.clocks.waited = r.l.clocks.clock()
		p.Enter(0, 0x1000, r.l.now(r.l.clocks.waited)-1000)
		r.l.stopSeen(r.th)
		before = r.l.clocks.clock()
		r.l.releasing(r.th)
		after = r.l.clocks.clock()
		added := int64(p.Held()) - held
		lo, hi := before-r.l.clocks.waited+1000, after-r.l.clocks.waited+1000
		if added >= lo-50 && added <= hi+50 {
			return
		}
		tries = append(tries, fmt.Sprintf("%d ns (want %d to %d)", added, lo, hi))
	}
	t.Errorf("held more by %s: want the stop, and 1 µs before it was seen, not 1 ms", strings.Join(tries, ", "))
}

// TestLedgerHeldFromTheEvent: a thread stopped at the book code's
// breakpoint, its event read 3 ms before PROFILE saw the stop (a busy
// machine's long stop), is held from the event's time: all 3 ms, not the
// stop's cost measured at start-up (1 ms here), which holds a stop
// elsewhere (TestLedgerHeldTime); and the thread's clock, which its life
// is measured on, takes out the same hold.
func TestLedgerHeldFromTheEvent(t *testing.T) {
	r := newLedgerRig(t)
	p := r.l.open[1]
	r.l.clocks.epoch = r.l.clocks.epoch.Add(-time.Second) // (PROFILE's start, before the event's)
	r.l.clocks.startCounter()
	r.l.start(r.l.counters)
	r.l.clocks.overhead, r.l.clocks.forced = 1e6, true
	r.l.clocks.stolen = map[books.Key]int64{}
	r.l.arch.SetSP(&r.regs, 0x1000)
	var tries []string
	for range 5 { // (the best of a few tries: TestLedgerHeldTime)
		held := int64(p.Held())
		r.l.clocks.waited = r.l.clocks.clock()
		r.l.stopSeen(r.th)
		r.regs.SetPC(tramAt + uint64(r.code.Stop))
		r.regs.SetReg(r.code.Saved[0].Reg, r.l.now(r.l.clocks.waited)-3e6) // the time the code read
		if !(inCode{r.l}).pass(r.th, tramAt+uint64(r.code.Stop-1)) {
			t.Fatal("the book code's breakpoint not taken")
		}
		before := r.l.clocks.clock()
		r.l.releasing(r.th)
		after := r.l.clocks.clock()
		added := int64(p.Held()) - held
		lo, hi := before-r.l.clocks.waited+3e6, after-r.l.clocks.waited+3e6
		// (The thread's own clock, its life, takes out the same hold:
		// from the event to its release.)
		k := threadLedger(r.th.tid)
		stolen := r.l.clocks.stolen[k]
		r.l.clocks.noteRelease()
		r.l.clocks.charge(r.th, nil)
		took := r.l.clocks.stolen[k] - stolen
		if added >= lo-50 && added <= hi+50 {
			if took < added || took > added+r.l.clocks.resumed-before+50 {
				t.Errorf("the thread's clock took out %d ns, want the %d ns held from the event to its release", took, added)
			}
			return
		}
		tries = append(tries, fmt.Sprintf("%d ns (want %d to %d)", added, lo, hi))
		p.Exit(1, 0x1000, p.LastTime()) // (f's call closed for the next try)
	}
	t.Errorf("held %s: want the stop, and the 3 ms from the event before it was seen", strings.Join(tries, ", "))
}

// TestLedgerCostsOnce: what a call's code cost is measured over the
// samples and the calls up to its first reading (an exec's: the sampler
// samples no image after it), and stands after it; with too few samples,
// the calibrated cost stands until there are enough.
func TestLedgerCostsOnce(t *testing.T) {
	r := newLedgerRig(t)
	r.l.calibrated = books.Costs{In: 20, Out: 10}
	own := uint64(50)
	r.l.ownCode = func() (uint64, uint64, time.Duration, bool) { return own, 1000, time.Microsecond, true }
	r.l.figs[1].Calls = 1000
	if got := r.l.costs(); got != r.l.calibrated {
		t.Errorf("costs %+v from 50 samples, want the calibrated %+v", got, r.l.calibrated)
	}
	if r.l.uncertainty != 30 {
		t.Errorf("uncertainty %d ns, want the calibrated cost itself, 30", r.l.uncertainty)
	}
	own = 600 // 600 µs over 1,000 calls: 600 ns a call, split 2 to 1
	want := books.Costs{In: 400, Out: 200}
	if got := r.l.costs(); got != want {
		t.Errorf("costs %+v, want %+v", got, want)
	}
	// 570 ns from the calibration's 30, and 2·600/√600 = 49 for chance.
	if r.l.uncertainty != 570+49 {
		t.Errorf("uncertainty %d ns, want 619", r.l.uncertainty)
	}
	r.l.figs[1].Calls = 10 // (after an exec: new calls, no new samples)
	if got := r.l.costs(); got != want || r.l.uncertainty != 619 {
		t.Errorf("costs after the exec %+v, uncertain by %d; want those measured before it, %+v, 619", got, r.l.uncertainty, want)
	}
	var st datafile.Stats
	r.l.stats(&st)
	if st.CostUncertainty != 619 {
		t.Errorf("stated uncertainty %d, want 619", st.CostUncertainty)
	}
}

// TestLedgerLeavesAtAStop: a thread stopped for a signal in book code
// before the code commits goes on at the code's end, its event booked at
// the time it stopped, not at the counter's time the code read (read
// before the stop, with the held time read after it, the call would be
// charged the stop); its registers come back from the save slots where
// the code had saved them, and stay as they are where it had not. In the
// code's committed part, it is left to be stepped out. The stop's hold is
// added as it goes on, all of it after the event.
func TestLedgerLeavesAtAStop(t *testing.T) {
	r := newLedgerRig(t)
	p := r.l.open[1]
	r.l.clocks.startCounter()
	r.l.start(r.l.counters)
	r.l.clocks.overhead, r.l.clocks.forced = 0, true // (no time lost before the stop was seen)
	exit := r.l.eventCode(1, exitEvent)
	exitAt := uint64(tramAt + 0x1000)
	r.l.counters.tramps = append(r.l.counters.tramps, &tramp{addr: exitAt, code: instr.Trampoline{Code: exit.code}, regions: []region{exit.at(0)}})
	exitCode, _ := instr.AMD64.BookExitCode(r.l.layout(), 1, 0)
	at := r.l.counters.layout.BookAt
	for i := range 4 {
		binary.LittleEndian.PutUint64(r.block[at+instr.BookSave+uint64(8*i):], uint64(111*(i+1)))
	}
	stop := func(code instr.BookCode, addr uint64, off int) (bool, uint64) {
		r.l.clocks.waited = r.l.clocks.clock()
		r.l.stopSeen(r.th)
		for _, s := range code.Saved {
			r.regs.SetReg(s.Reg, 7) // (what the code left in them)
		}
		r.regs.SetReg(code.Saved[0].Reg, 1500) // the counter's time the code read
		r.regs.SetPC(addr + uint64(off))
		r.regs.SetThreadBase(r.l.counters.layout.BlockAddr(1))
		r.l.arch.SetSP(&r.regs, 0x800)
		moved := inCode{r.l}.leaveAtStop(r.th, &r.regs)
		return moved, r.l.now(r.l.clocks.waited)
	}
	p.Enter(0, 0x1000, 1000) // main, open
	entry := r.code.Rollback[1]
	moved, when := stop(r.code, tramAt, entry.From+1)
	if !moved || r.regs.PC() != tramAt+uint64(len(r.code.Code)) {
		t.Fatalf("moved %v to %#x: want the entry code's end, %#x", moved, r.regs.PC(), tramAt+uint64(len(r.code.Code)))
	}
	for _, s := range entry.Restore {
		if got, want := r.regs.Reg(s.Reg), binary.LittleEndian.Uint64(r.block[s.Offset:]); got != want {
			t.Errorf("register %d is %d, want %d from its save slot", s.Reg, got, want)
		}
	}
	if last := p.LastTime(); p.Open() != 2 || last+100e3 < when || last > when+100e3 {
		t.Errorf("%d calls open, the last event at %d ns: want f's entry too, at the stop's time, %d (not 1500)", p.Open(), last, when)
	}
	r.l.releasing(r.th)
	// f's exit, stopped before its commit: f's call closes at the stop's
	// time, its hold not taken out of it.
	time.Sleep(time.Millisecond)
	before := p.Held()
	moved, when = stop(exitCode, exitAt, exitCode.Rollback[1].From+1)
	if !moved || r.regs.PC() != exitAt+uint64(len(exitCode.Code)) {
		t.Fatalf("moved %v to %#x: want the exit code's end", moved, r.regs.PC())
	}
	r.l.releasing(r.th)
	f := p.Figure(1)
	if f.Calls != 1 || p.Open() != 1 || p.Held() == before || f.All < 900e3 || uint64(f.All) > when-p.LastTime()+10e6 {
		t.Errorf("f %+v, %d open, held %d then %d: want one call of 1 ms or more, closed at the stop", f, p.Open(), before, p.Held())
	}
	// Before the code saved anything, the registers are the program's.
	_, _ = stop(r.code, tramAt, 0)
	if r.regs.Reg(r.code.Saved[0].Reg) != 1500 || r.regs.PC() != tramAt+uint64(len(r.code.Code)) {
		t.Errorf("register %d is %d at %#x: want it as it was, at the code's end", r.code.Saved[0].Reg, r.regs.Reg(r.code.Saved[0].Reg), r.regs.PC())
	}
	r.l.releasing(r.th)
	// Past the commit, left where it is, to be stepped out.
	done := r.code.Rollback[2]
	if moved, _ := stop(r.code, tramAt, done.From); moved || r.regs.PC() != tramAt+uint64(done.From) {
		t.Errorf("moved %v to %#x from the committed part: want it left at %#x", moved, r.regs.PC(), tramAt+uint64(done.From))
	}
}
