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
	if r.l.pass(r.th, tramAt+uint64(r.code.Stop)+8) {
		t.Fatal("a breakpoint past the code's taken for its own")
	}
	if !r.l.pass(r.th, tramAt+uint64(r.code.Stop-1)) {
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
		if !r.l.inCloser(c.want+20) || r.l.inCloser(c.want+page) {
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

// TestLedgerHeldWhileStepped: a thread PROFILE single-steps out of its
// code has the time held so far in its book at each step, so that the
// book code it steps through reads a held time that keeps up with the
// counter; the release after the steps adds only what came after the
// last step, with no stop's cost before it (that was the first stop's),
// and the total is the whole hold, seen to let go.
func TestLedgerHeldWhileStepped(t *testing.T) {
	r := newLedgerRig(t)
	p := r.l.open[1]
	r.l.clocks.startCounter()
	r.l.start(r.l.counters)
	r.l.clocks.waited = r.l.clocks.clock()
	r.l.stopSeen(r.th)
	time.Sleep(time.Millisecond)
	mid := r.l.clocks.clock()
	stepHeld(r.l, r.th)
	after := r.l.clocks.clock()
	step := int64(p.Held())
	if lo, hi := mid-r.l.clocks.waited, after-r.l.clocks.waited; step < lo-1 || step > hi+1 {
		t.Errorf("held %d ns at the step, want between %d and %d: the stop so far", step, lo, hi)
	}
	r.l.clocks.overhead, r.l.clocks.forced = 1e6, true // (a stop's cost, not added again)
	time.Sleep(time.Millisecond)
	before := r.l.clocks.clock()
	r.l.releasing(r.th)
	end := r.l.clocks.clock()
	if held := int64(p.Held()); held < before-r.l.clocks.waited-1 || held > end-r.l.clocks.waited+1 {
		t.Errorf("held %d ns in all, want between %d and %d: the stop, seen to let go, once", held, before-r.l.clocks.waited, end-r.l.clocks.waited)
	}
	stepHeld(r.l, r.th) // (no stop seen: nothing)
	r.l.releasing(r.th)
	if held := int64(p.Held()); held > end-r.l.clocks.waited+1 {
		t.Errorf("held %d ns after a step and a release with no stop seen", held)
	}
}
