package profile

import (
	"encoding/binary"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/layout"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// clockRig is the ledgers' side of the threads' clocks over a fake
// process and a fake system call: each call it is asked for noted, the
// attributes of perf_event_open copied as they were at the call.
type clockRig struct {
	l     *ledgers
	fp    *fakeProcess
	calls []string
	attr  []byte
	fail  instr.Syscall // a call that fails (EACCES); 0: none
}

const (
	clockAddr = 0x7f0000000000
	clockTID  = 100
	clockFD   = 5
)

func newClockRig(t *testing.T) *clockRig {
	t.Helper()
	lay, size := layout.New(layout.Spec{Kind: instr.CountPerThread, Items: 2, Books: true, BookFuncs: 3, MaxBlocks: 4,
		DepthSlots: 8, ClockPage: 4096})
	shared, err := ptrace.NewShared(int(size))
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { shared.Close() })
	lay.Place(clockAddr)
	r := &clockRig{fp: newFakeProcess(instr.AMD64, &fakeMem{}), fail: instr.SysMmap + 100}
	r.fp.cpu = map[int]int64{clockTID: 1_000}
	c := &counters{shared: shared, layout: lay}
	r.l = &ledgers{ledgerEnv: ledgerEnv{proc: r.fp, sys: r.sys}, counters: c, cpu: newOffCPU(true, 3, false)}
	r.l.cpu.reserve(&c.layout, clockAddr, clockAddr+size, 4096, func(call instr.Syscall, args ...uint64) (uint64, error) {
		return r.sys(1, call, args...)
	})
	return r
}

// book returns block 1's book, of 3 functions and 8 frames.
func (r *clockRig) book() *books.ProgramBook {
	lay := &r.l.counters.layout
	return books.NewProgramBook(lay.BookMem(r.l.counters.shared.Bytes(), 1), instr.Book{Offset: lay.BookAt, Frames: 8, Funcs: 3})
}

func (r *clockRig) sys(tid int, call instr.Syscall, args ...uint64) (uint64, error) {
	r.calls = append(r.calls, callText(call, args))
	switch {
	case call == r.fail:
		return 0, syscall.EACCES
	case call == instr.SysPerfEventOpen:
		lay := &r.l.counters.layout
		off := args[0] - lay.BookAddr(1)
		r.attr = slices.Clone(lay.BookMem(r.l.counters.shared.Bytes(), 1)[off : off+perfAttrSize])
		return clockFD, nil
	case call == instr.SysMmap:
		return args[0], nil // (where asked: MAP_FIXED, or the hint free)
	}
	return 0, nil
}

func callText(call instr.Syscall, args []uint64) string {
	name := map[instr.Syscall]string{instr.SysMmap: "mmap", instr.SysMunmap: "munmap", instr.SysClose: "close",
		instr.SysPerfEventOpen: "perf_event_open"}[call]
	return fmt.Sprintf("%s %#x", name, args)
}

// TestClockPages opens a thread's clock over a fake process: the
// region of pages reserved below the shared memory, readable and all
// zeros; the thread's task clock opened in the thread (the task clock of
// its user time, this thread, any CPU), its page mapped shared over its
// block's place and the descriptor closed, the attributes written in
// the book and cleared after; and, where a call fails, the run's waits
// left unmeasured. A region that cannot be had measures nothing.
func TestClockPages(t *testing.T) {
	r := newClockRig(t)
	lay, region := &r.l.counters.layout, r.l.cpu.region
	at, size := region.Region(lay)
	if !r.l.cpu.on || at >= clockAddr || at+size > clockAddr {
		t.Fatalf("region [%#x, %#x) on %v: want it below the memory at %#x", at, at+size, r.l.cpu.on, uint64(clockAddr))
	}
	b := instr.Book{Offset: lay.BookAt, Frames: 8, Funcs: 3}
	p := books.NewProgramBook(lay.BookMem(r.l.counters.shared.Bytes(), 1), b)
	th := &thread{tid: clockTID, tgid: clockTID}
	r.calls = nil
	clockPages{r.l}.mapPage(th, 1, p, 500)
	attrAt := lay.BookAddr(1) + b.FrameAt(1)
	want := []string{
		callText(instr.SysPerfEventOpen, []uint64{attrAt, 0, ^uint64(0), noFD, perfFlagCloexec}),
		callText(instr.SysMmap, []uint64{region.Page(lay, 1), 4096, protRead, mapShared | mapFixed, clockFD, 0}),
		callText(instr.SysClose, []uint64{clockFD}),
	}
	if !slices.Equal(r.calls, want) {
		t.Errorf("calls %q, want %q", r.calls, want)
	}
	if len(r.attr) != perfAttrSize || binary.LittleEndian.Uint32(r.attr) != perfTypeSoftware || binary.LittleEndian.Uint32(r.attr[4:]) != perfAttrSize ||
		binary.LittleEndian.Uint64(r.attr[8:]) != perfCountTaskClock || binary.LittleEndian.Uint64(r.attr[40:]) != perfExcludeKernel|perfExcludeHV {
		t.Errorf("attributes % x", r.attr)
	}
	if m := r.l.cpu.marks[clockTID]; m == nil || m.t != 500 || m.cpu != 1_000 || !r.l.cpu.waits.Measured() {
		t.Errorf("mark %+v, measured %v: want from 500, CPU 1000", m, r.l.cpu.waits.Measured())
	}
	if mem := lay.BookMem(r.l.counters.shared.Bytes(), 1); slices.ContainsFunc(mem[b.FrameAt(1):b.FrameAt(2)], func(x byte) bool { return x != 0 }) {
		t.Error("the attributes left in the book's first frame")
	}
	if got := region.Distance(lay); lay.BlockAddr(1)+got != region.Page(lay, 1) {
		t.Errorf("distance %#x: block 1 at %#x, its page at %#x", got, lay.BlockAddr(1), region.Page(lay, 1))
	}
	for _, fail := range []instr.Syscall{instr.SysPerfEventOpen, instr.SysMmap} {
		r := newClockRig(t)
		r.fail = fail
		clockPages{r.l}.mapPage(th, 1, p, 500)
		if r.l.cpu.waits.Measured() || r.l.cpu.marks[clockTID] != nil {
			t.Errorf("%s refused: the waits measured", callText(fail, nil))
		}
	}
	none := newClockRig(t)
	none.l.cpu, none.fail = newOffCPU(true, 3, false), instr.SysMmap
	none.l.cpu.reserve(&none.l.counters.layout, clockAddr, clockAddr+size, 4096, func(call instr.Syscall, args ...uint64) (uint64, error) {
		return none.sys(1, call, args...)
	})
	if none.l.cpu.on || (none.l.cpu.region != layout.Clocks{}) {
		t.Errorf("no region to be had: on %v, region %+v", none.l.cpu.on, none.l.cpu.region)
	}
}

// TestClockSettle settles a thread's waits on times known by
// construction. Its mark from time 1000, its CPU time 1000 ns then; two
// calls open (functions 0, then 2). The code notes a new lock word: at
// time 2000, with 50 ns held by PROFILE since the mark and 300 ns more
// on a CPU, the wait is 1000 - 50 - 300 = 650 ns, charged to function 2
// as its own and to 0 and 2 with children. PROFILE letting the thread
// go adds two to the word; the word unchanged, nothing is settled; at
// the thread's end, whatever the word, the wait since: 500 - 0 - 100.
func TestClockSettle(t *testing.T) {
	r := newClockRig(t)
	p := r.book()
	th := &thread{tid: clockTID, tgid: clockTID}
	clockPages{r.l}.mapPage(th, 1, p, 1000)
	p.Enter(0, 1<<20, 1100)
	p.Enter(2, 1<<20-64, 1200)
	cp := clockPages{r.l}
	clock := books.ClockOf(p)
	if cp.settle(th, p, 1500, false) {
		t.Error("settled with the word as PROFILE left it")
	}
	clock.SetLock(7) // (the code's note of the page's word)
	p.SetHeld(50)
	r.fp.cpu[clockTID] = 1_300
	if !cp.settle(th, p, 2000, false) {
		t.Fatal("a new word not settled")
	}
	cp.released(th, p)
	if clock.Lock() != 9 || r.l.cpu.marks[clockTID].lock != 9 {
		t.Errorf("word %d after the release, mark %d: want 9", clock.Lock(), r.l.cpu.marks[clockTID].lock)
	}
	if cp.settle(th, p, 2300, false) {
		t.Error("settled with the word the release left")
	}
	r.fp.cpu[clockTID] = 1_400
	if !cp.settle(th, p, 2500, true) {
		t.Fatal("the thread's end not settled")
	}
	plan := &datafile.Plan{Method: datafile.FuncTiming, Funcs: make([]datafile.Func, 3)}
	bk := books.New(plan)
	r.l.cpu.waits.Give(bk, []int64{1e6, 1e6, 1e6}, []int64{1e6, 1e6, 1e6})
	got := bk.Figures().Waits
	if got == nil || !slices.Equal(got.FuncWait, []int64{0, 0, 1050}) || !slices.Equal(got.ChildWait, []int64{1050, 0, 1050}) || got.InsideWait != 1050 {
		t.Errorf("waits %+v, want 1050 of function 2's own, with children of 0 and 2, inside", got)
	}
	// A thread with no clock: nothing settled, nothing charged.
	other := &thread{tid: clockTID + 1, tgid: clockTID}
	if cp.settle(other, p, 3000, true) {
		t.Error("a thread with no clock settled")
	}
}

// TestClockOpened: a thread's waits count from the moment its clock
// opens, not from its book's making. The main thread's book is made at
// the exec stop (its mark from time 500, its CPU time 1000 ns), and
// PROFILE plants and calibrates before it lets it go; its clock opens
// with 5000 ns on a CPU and 70 ns held. A settling 1000 ns later, 300 ns
// more on a CPU, finds a wait of 700 ns, none of PROFILE's start-up.
func TestClockOpened(t *testing.T) {
	r := newClockRig(t)
	p := r.book()
	r.l.open, r.l.blockOf = map[int]*books.ProgramBook{1: p}, map[int]int{clockTID: 1}
	r.l.clocks, r.l.scale = &clocks{epoch: time.Now()}, 1<<instr.BookScaleShift // (a counter of nanoseconds)
	th := &thread{tid: clockTID, tgid: clockTID}
	cp := clockPages{r.l}
	cp.mapPage(th, 1, p, 500)
	p.Enter(0, 1<<20, 600)
	p.SetHeld(70)
	th.born = r.l.clocks.clock()
	before := r.l.now(th.born)
	cp.opened(th, 5_000)
	after := r.l.now(th.born)
	// (The books' time of the birth, read before and after: the test's
	// scale is not the counter's, and the two may drift either way.)
	m := r.l.cpu.marks[clockTID]
	if m.t < min(before, after) || m.t > max(before, after) || m.held != 70 || m.cpu != 5_000 {
		t.Fatalf("mark %+v, want from the birth, 70 held, 5000 on a CPU", *m)
	}
	books.ClockOf(p).SetLock(3)
	r.fp.cpu[clockTID] = 5_300
	if !cp.settle(th, p, m.t+1000, false) {
		t.Fatal("a new word not settled")
	}
	plan := &datafile.Plan{Method: datafile.FuncTiming, Funcs: make([]datafile.Func, 3)}
	bk := books.New(plan)
	r.l.cpu.waits.Give(bk, []int64{1e6, 1e6, 1e6}, []int64{1e6, 1e6, 1e6})
	if got := bk.Figures().Waits; got == nil || got.FuncWait[0] != 700 {
		t.Errorf("waits %+v, want 700 of function 0's own", got)
	}
	other := &thread{tid: clockTID + 1, tgid: clockTID}
	cp.opened(other, 1) // (a thread with no clock: nothing to count from)
	if r.l.cpu.marks[other.tid] != nil {
		t.Error("a mark for a thread with no clock")
	}
}

// TestClockSettledAtTheExitStop: a thread's life ends at its exit stop,
// where the kernel still shows its time on a CPU. Its waits are settled
// there: 10 ms after its clock opened, 3 ms of them on a CPU, it waited
// 7 ms. Reaped 50 ms later, its time on a CPU no longer readable, it is
// charged no more, and the call it had open closes at the exit stop.
func TestClockSettledAtTheExitStop(t *testing.T) {
	r := newClockRig(t)
	p := r.book()
	th := &thread{tid: clockTID, tgid: clockTID}
	r.l.open, r.l.blockOf, r.l.threads = map[int]*books.ProgramBook{1: p}, map[int]int{clockTID: 1}, map[int]*thread{clockTID: th}
	r.l.made, r.l.figs, r.l.gos = map[int]uint64{}, make([]books.Figure, 3), goLedgers{l: r.l}
	r.l.clocks = &clocks{epoch: time.Now().Add(-time.Second)}
	r.l.clocks.startCounter()
	r.l.scale = r.l.clocks.bookScale() // (l.now reads the counter as it is called: at a scale not its own, two calls 0.1 ms apart in the arm64 emulation drift apart)
	plan := &datafile.Plan{Method: datafile.FuncTiming, Funcs: make([]datafile.Func, 3)}
	r.l.plan = plan
	const ms = int64(time.Millisecond)
	cp := clockPages{r.l}
	th.born = r.l.clocks.clock() - 60*ms // (the books read times past: now is the thread's reaping)
	cp.mapPage(th, 1, p, r.l.now(th.born))
	cp.opened(th, 1_000)
	entered := r.l.now(th.born)
	p.Enter(0, 1<<20, entered)
	r.l.clocks.waited = th.born + 10*ms
	th.exiting, th.ended = true, r.l.clocks.waited // (timedRun.threadExiting, the stop's cost 0)
	r.fp.cpu[clockTID] = 1_000 + 3*ms
	r.l.threadExiting(th)
	delete(r.fp.cpu, clockTID)
	r.l.clocks.waited += 50 * ms
	r.l.threadEnded(clockTID)

	bk := books.New(plan)
	r.l.cpu.waits.Give(bk, []int64{1e9, 1e9, 1e9}, []int64{1e9, 1e9, 1e9})
	// (The books' times are read off the counter, at its scale measured
	// over 2 ms: within some microseconds.)
	near := func(got, want int64) bool { return got > want-ms/10 && got < want+ms/10 }
	if got := bk.Figures().Waits; got == nil || !near(got.FuncWait[0], 7*ms) {
		t.Errorf("waits %+v, want 7 ms of function 0's own, settled at the exit stop", got)
	}
	if got := r.l.figs[0].All; r.l.figs[0].Calls != 1 || !near(got, 10*ms) {
		t.Errorf("function 0: %d calls, %v, want its call closed at the exit stop, 10 ms", r.l.figs[0].Calls, time.Duration(got))
	}
}
