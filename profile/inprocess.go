package profile

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/layout"
	"github.com/sourceprofiler/sprof/profile/procmaps"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// In-process counting (docs/architecture.md, "Trampolines"): a function's
// entry is replaced by a jump to a trampoline that PROFILE writes into the
// program; the trampoline adds one to the function's counter and carries
// on with the replaced instructions. The counters live in memory shared
// with PROFILE, so a count costs no stop and survives a crash.
//
// On amd64 every thread has its own block of counters, its GS base, given
// by PROFILE at the thread's first stop: a count is one incq %gs:offset,
// with no lock. On arm64 with LSE the counters are shared and added to
// atomically (STADD); without LSE (ARMv8.0) every thread counts in its
// area of the stack table (below), with a plain load and store. Block 0
// takes the counts of the processes that share the program's memory but
// are not the program (a vfork child before its exec): they are not the
// program's calls. (In the areas, a vfork child counts in the area of its
// stack, its waiting parent's or area 0, and what it adds is discounted
// when it leaves: vforked.)
//
// The call depth is kept in-process too, by a shadow stack per thread
// (instr.Depth): on amd64 in the thread's block, after its counters; on
// arm64, which has no thread register to spare, in an area of its own
// found through a table indexed by the stack pointer's page, which PROFILE
// fills for each thread's stack at its first stop. The two forms of the
// memory are the counters' layout (package profile/layout).

// trampCell is the most room one site may take in the area PROFILE maps
// next to a module: a trampoline (at most about 210 bytes: the count, the
// call depth's code in its Go form, the relocated instructions and the
// jump back; about 120 for C; some 280 for the entry of a timed function
// of a few bytes, with the records of its entry and its exit, 350 for
// Go's, whose records name the goroutine; some 660 with the book code of
// its entry and its exit, 260 and 330 bytes with the check of the
// thread's clock: ledger.go, ledger_waits.go), or a breakpoint's
// out-of-line slot. The area is mapped for that much; what is written is
// packed.
const trampCell = 704

// maxBlocks bounds the counter blocks, one per live thread; a thread
// beyond them shares the main thread's block, with a warning.
var maxBlocks = 4096 // a variable for the tests of the overflow

// depthSlots is the size of a thread's shadow stack: nesting deeper than
// that counts as that deep.
const depthSlots = 1024

// hwcapEntry is AT_HWCAP in the auxiliary vector (include/uapi/linux/auxvec.h).
const hwcapEntry = 16

// counters is the memory PROFILE shares with the program when it counts
// or times in-process: a block of counters for each thread (with its
// depth area, or the stack table's, and its ring), and the trampolines
// written that count or record into them, which signals, forks and the
// end of the run need to know.
type counters struct {
	env    counterEnv
	shared *ptrace.Shared
	// layout says where each thread's part of the memory is, and how
	// its trampolines find it.
	layout  layout.Layout
	next    int   // the next block never used
	free    []int // blocks of threads that ended
	blockOf map[int]int
	// tramps are the trampolines written, sorted by address, for finding
	// the original PC of a thread stopped inside one.
	tramps []*tramp
	// overflow is set once a thread had to share a block.
	overflow bool
	// Where counters are shared, or in the areas, a vfork child's calls
	// land in them too: vforkSnap holds the counters it counts in as they
	// were when it was vforked, and discount what such children added.
	vforkSnap map[int]vforkSnap
	discount  []uint64
	// stacks has the pages of the table each area's thread owns, to be
	// given back to the discard area when it ends.
	stacks map[int][2]uint64
	// calibration has the addresses of the blocks of code that measure a
	// record's cost, where threads have rings (clock.go).
	calibration [2]uint64
	// saves is set when line trampolines save a register in the block
	// (instr.Instrumenter.LineCode), which a signal rolls them out of.
	saves bool
	// depth is the deepest call depth the blocks kept, read at the end.
	depth int
}

// counterEnv is what the counters need of the run: the traced process
// (to point a new thread at its block), its threads (a vfork child's
// parent alone, vforked), the plan's counters and where their counts go,
// the memory map (a thread's stack), the rings of in-process timing
// (set where the run has them: tracer.choose), and whether Go's record
// code finds its ring through the thread pointer.
type counterEnv struct {
	proc          process
	arch          instr.Arch
	pid           int
	threads       map[int]*thread
	items         int
	funcs         bool // a function profile: the blocks' counts are the hits
	sampling      bool // function sampling, which keeps no call depth
	hits          []uint64
	warn          func(*prf.Diagnostic)
	readMaps      func() ([]procmaps.Mapping, error)
	rings         *rings
	ledgers       *ledgers
	threadPointer bool
	goDepth       bool // the plan has Go frames for the depth code (caps.goDepth)
}

// counterEnv is the counters' environment in this run.
func (t *tracer) counterEnv() counterEnv {
	return counterEnv{
		proc: t.proc, arch: t.arch, pid: t.pid, threads: t.threads,
		items: t.plan.NumItems(), funcs: t.plan.Method.IsFunction(), sampling: t.plan.Method.IsSampling(), hits: t.counted.hits,
		warn: t.cfg.Warn, readMaps: t.readMaps, rings: t.parts.rings, ledgers: t.parts.ledgers, threadPointer: t.caps.threadPointer,
		goDepth: t.caps.goDepth,
	}
}

// fallBack is a site that keeps a breakpoint: item's entry, or its exit
// at pc.
type fallBack struct {
	item int
	err  error
	pc   uint64
}

// newCounters creates the shared counters for items counters per block in
// the stopped program, and maps them in PROFILE too (shareMemory); the
// main thread gets block 1. nameAt is where in the program the memory's
// name may be written (a freshly mapped page).
func newCounters(env counterEnv, calls *injector, pageSize uint64, kind instr.CountKind, items int, nameAt uint64) (*counters, error) {
	_, inBlock := env.arch.DepthCode(instr.Depth{Slots: depthSlots})
	_, byTable := env.arch.DepthCode(instr.Depth{Slots: depthSlots, Table: 1})
	rings := env.rings != nil
	if env.sampling && !rings && env.ledgers == nil {
		// (Sampling keeps no call depth: its report has none, as the
		// original's had none, and it counts at counting's cost alone.
		// With a start function or caller stacks it keeps books, which
		// on arm64 are the stack table's areas.)
		inBlock, byTable = false, false
	}
	spec := layout.Spec{Kind: kind, Items: items, InBlock: inBlock, ByTable: byTable, Rings: rings,
		Records: ringRecords, MaxBlocks: maxBlocks, DepthSlots: depthSlots}
	if env.ledgers != nil {
		spec.Books, spec.BookFuncs, spec.BookNodes = true, env.ledgers.bookFuncs(), env.ledgers.bookNodes()
		spec.GoBooks = env.ledgers.gos.count()
		if env.ledgers.cpu.on {
			spec.ClockPage = pageSize
		}
	}
	l, size := layout.New(spec)
	size = (size + guardSize + pageSize - 1) &^ (pageSize - 1) // (the guard last: damage.go)
	shared, addr, err := calls.shareMemory(nameAt, size)
	if err != nil {
		return nil, fmt.Errorf("map counters into the program: %w", err)
	}
	l.Place(addr)
	if env.ledgers != nil {
		env.ledgers.cpu.reserve(&l, addr, addr+size, spec.ClockPage, func(call instr.Syscall, args ...uint64) (uint64, error) {
			return calls.syscall(calls.setupThread(), call, args...)
		})
	}
	c := &counters{env: env, shared: shared, layout: l, next: 1, blockOf: map[int]int{}}
	c.writeGuard()
	if rings {
		// The discard ring, whose records are dropped, starts empty too
		// (an arm64 cursor of zeros is a full ring).
		env.rings.start(c)
	}
	if env.ledgers != nil {
		env.ledgers.start(c)
	}
	return c, nil
}

// threadPointers reports whether PROFILE points each thread's thread
// pointer at its area of the stack table (arm64, in a Go program that has
// no other use for it: probeCaps), where Go's record and book code, and a
// Go function's count in the areas, find the thread's area.
func (c *counters) threadPointers() bool {
	return c != nil && c.layout.Table && (c.layout.Rings || c.layout.Books || c.layout.Kind == instr.CountInArea) && c.env.threadPointer
}

// keepsDepth reports whether trampolines keep the call depth.
func (c *counters) keepsDepth() bool { return c != nil && c.layout.KeepsDepth() }

// depthCode is what the depth code of a function with frames of the given
// kind (goroutine: Go's) needs; the C form's first test of the last
// entry's stack pointer (instr.Depth.Top) where no Go form shares the
// areas.
func (c *counters) depthCode(goroutine bool) instr.Depth {
	d := c.layout.Depth(goroutine)
	d.Top = !goroutine && !c.env.goDepth
	return d
}

// area returns thread block b's depth area.
func (c *counters) area(b int) []byte { return c.layout.DepthArea(c.shared.Bytes(), b) }

// giveBlock gives thread tid a counter block of its own (foreign: the
// discard block 0) and points its thread base at it; where counters are
// shared, a depth area, found through its stack (a foreign process, a
// vfork child, runs on its parent's stack, in its parent's area).
func (c *counters) giveBlock(tid int, foreign bool) error {
	env := &c.env
	if !c.layout.OwnParts() || (c.layout.Table && foreign) {
		return nil
	}
	b, owned := c.take(tid, foreign)
	if c.layout.Rings && owned && env.rings != nil {
		env.rings.reset(b)
	}
	if env.ledgers != nil {
		env.ledgers.given(tid, b, owned)
	}
	if c.keepsDepth() && owned {
		// A new thread's shadow stack starts empty (a reused block holds
		// the frames of the thread that ended).
		area := c.area(b)
		clear(area[instr.DepthCurrent : instr.DepthCurrent+8])
		clear(area[instr.DepthG : instr.DepthG+8])
		clear(area[instr.DepthTop : instr.DepthTop+8])
	}
	var regs ptrace.Regs
	if err := env.proc.getRegs(tid, &regs); err != nil {
		return err
	}
	if c.layout.Table {
		if c.threadPointers() {
			// Go's record code finds the thread's ring area here, Go's
			// book code the thread's book, a Go function's count the
			// thread's counters (the discard area for a thread beyond
			// them, area 0 where threads count in their areas).
			area := b
			if !owned {
				area = 0
			}
			if err := env.proc.setThreadPointer(tid, c.layout.AreaAddr(area)); err != nil {
				return fmt.Errorf("set the thread pointer of thread %d: %w", tid, err)
			}
		}
		return c.ownStack(env.arch.SP(&regs), b)
	}
	regs.SetThreadBase(c.layout.BlockAddr(b))
	return env.proc.setRegs(tid, &regs)
}

// take takes for thread tid (foreign: a process that is not the
// program) a block, or an area of the table, and reports whether it is
// the thread's own: a block another thread left, or one never used; when
// every one is in use, the thread shares one.
func (c *counters) take(tid int, foreign bool) (b int, owned bool) {
	b, owned = 0, true
	switch {
	case foreign:
		owned = false
	case len(c.free) > 0:
		b = c.free[len(c.free)-1]
		c.free = c.free[:len(c.free)-1]
	case c.next < c.layout.NBlocks:
		b = c.next
		c.next++
	case c.layout.Rings || c.layout.Books:
		// Every block or area is in use, timing in-process: this
		// thread's records go to the discarded block 0, or area 0 (its
		// calls are missing), not into another thread's ring.
		owned = false
		c.overflow = true
	case c.layout.Table:
		// Every area is in use: this thread's frames go to the discard
		// area (only its depth is lost where the counters are shared;
		// where they are in the areas, it counts in area 0 with the
		// threads on stacks no thread owns, and a count may be lost when
		// two add to one counter at once).
		owned = false
		c.overflow = c.layout.Kind == instr.CountInArea
	default:
		// Every block is in use: this thread shares the main thread's,
		// and a count may be lost when both add to one counter at once.
		b, owned = 1, false
		c.overflow = true
	}
	if owned {
		c.blockOf[tid] = b
	}
	return b, owned
}

// vforkSnap is what a vfork child will count in, and its counts when the
// child was made: block 1 (shared counters), or an area.
type vforkSnap struct {
	b      int
	counts []uint64
}

// vforked notes the counters at the start of vfork child tid, where it
// counts into the program's: shared counters, of a program whose only
// thread is its suspended parent; or the area of the child's stack, where
// threads count in their areas: its suspended parent's, on whose stack
// a vfork child runs, or area 0 (a stack of its own, as posix_spawn's
// child has: exact where no thread of the program counts in area 0
// meanwhile); in a Go program whose thread pointers PROFILE sets, the
// area the child's, its parent's, holds.
func (c *counters) vforked(tid int) {
	b := 1
	switch {
	case c.layout.Kind == instr.CountInArea:
		var regs ptrace.Regs
		if err := c.env.proc.getRegs(tid, &regs); err != nil {
			return
		}
		b = c.tableArea(c.env.arch.SP(&regs))
		if tp, err := c.env.proc.threadPointer(tid); err == nil && c.threadPointers() {
			if a, ok := c.layout.AreaAt(tp); ok {
				b = a
			}
		}
	case c.layout.PerThread() || c.programThreads() != 1:
		return
	}
	if c.vforkSnap == nil {
		c.vforkSnap = map[int]vforkSnap{}
	}
	c.vforkSnap[tid] = vforkSnap{b, c.block(b, c.env.items)}
}

// foreignDone discounts what vfork child tid counted, now that it has
// called exec or exited.
func (c *counters) foreignDone(tid int) {
	snap, ok := c.vforkSnap[tid]
	if !ok {
		return
	}
	delete(c.vforkSnap, tid)
	if c.discount == nil {
		c.discount = make([]uint64, len(snap.counts))
	}
	for i, now := range c.block(snap.b, len(snap.counts)) {
		c.discount[i] += now - snap.counts[i]
	}
}

// programThreads is the number of live threads of the program's own
// process.
func (c *counters) programThreads() int {
	n := 0
	for _, th := range c.env.threads {
		if th.tgid == c.env.pid && !th.foreign {
			n++
		}
	}
	return n
}

// block returns a copy of the first n counters of block b, or area b.
func (c *counters) block(b, n int) []uint64 {
	mem := c.shared.Bytes()
	out := make([]uint64, n)
	for i := range out {
		out[i] = c.layout.Count(mem, b, i)
	}
	return out
}

// threadBorn gives thread tid its block (giveBlock); a vfork child's
// start is noted first (vforked).
func (c *counters) threadBorn(tid int, foreign bool) error {
	if foreign {
		c.vforked(tid)
	}
	return c.giveBlock(tid, foreign)
}

// threadEnded returns an ended thread's block, or area, for reuse: its
// counts stay in it, the next thread's added to them, and are summed at
// the end with the others. What a vfork child
// counted, now that it has called exec or exited, is discounted
// (foreignDone).
func (c *counters) threadEnded(tid int) {
	defer c.foreignDone(tid)
	if b, ok := c.blockOf[tid]; ok {
		delete(c.blockOf, tid)
		c.free = append(c.free, b)
		if s, ok := c.stacks[b]; ok {
			// Its stack's pages go back to the discard area: the memory
			// may become another thread's alternate stack, or a
			// coroutine's, which must not write into the next owner's
			// area. (A new thread on the same stack may have been given
			// its pages already: those stay.)
			c.pointStack(s[0], s[1], 0, b)
			delete(c.stacks, b)
		}
	}
}

// addCounts adds the in-process counts to hits (totals).
func (c *counters) addCounts(hits []uint64) {
	for i, n := range c.totals(len(hits)) {
		hits[i] += n
	}
}

// totals returns the first n counters summed over every block, or area,
// used but the discard block, less what vfork children added.
func (c *counters) totals(n int) []uint64 { return sumCounters(c, n, nil) }

// sumCounters is c.totals(n), into dst (grown to n): a sweep's looks
// keep one buffer.
func sumCounters(c *counters, n int, dst []uint64) []uint64 {
	sums := slices.Grow(dst[:0], n)[:n]
	clear(sums)
	mem := c.shared.Bytes()
	for b := c.layout.FirstCounted(); b < c.layout.Counted(c.next); b++ {
		for i := range sums {
			sums[i] += c.layout.Count(mem, b, i)
		}
	}
	for i, d := range c.discount[:min(n, len(c.discount))] {
		sums[i] -= d
	}
	return sums
}

// callDepth is the deepest nesting any thread reached.
func (c *counters) callDepth() int {
	deepest := 0
	for b := 1; b < c.next && c.keepsDepth(); b++ {
		if c.layout.Table {
			deepest = max(deepest, instr.TableDepth(c.area(b), depthSlots))
		} else {
			deepest = max(deepest, int(min(binary.LittleEndian.Uint64(c.area(b)[instr.DepthMax:]), depthSlots)))
		}
	}
	return deepest
}

// restorePatches writes the original bytes of every patch into mem (a
// forked child's own copy of the program).
func (c *counters) restorePatches(mem interface{ WriteMem(uint64, []byte) error }) {
	if c == nil {
		return
	}
	for _, tr := range c.tramps {
		mem.WriteMem(tr.patch.Site, tr.patch.Orig[:tr.patch.Written()])
	}
}

// unchecked turns the ring-full checks of every record code off in mem
// (the memory of tasks left running when the program has ended, of a
// process let go): nobody reads the rings any more, and a full one would
// stop its thread at a breakpoint no tracer serves. The book code is
// jumped over whole (ledger.go).
func (c *counters) unchecked(mem interface{ WriteMem(uint64, []byte) error }) {
	if c == nil || (!c.layout.Rings && !c.layout.Books) {
		return
	}
	for _, tr := range c.tramps {
		for _, r := range tr.regions {
			if r.full != 0 || r.book != nil {
				mem.WriteMem(tr.addr+uint64(r.at+r.skip), r.unchecked)
			}
		}
	}
}

// add records a trampoline written.
func (c *counters) add(tr *tramp) { c.tramps = append(c.tramps, tr) }

// sortTramps orders the trampolines by address after planting.
func (c *counters) sortTramps() {
	slices.SortFunc(c.tramps, func(a, b *tramp) int {
		switch {
		case a.addr < b.addr:
			return -1
		case a.addr > b.addr:
			return 1
		}
		return 0
	})
}

// holds reports whether addr is in the memory of the counters, in the
// program.
func (c *counters) holds(addr uint64) bool {
	return addr >= c.layout.ProgAddr && addr < c.layout.ProgAddr+uint64(len(c.shared.Bytes()))
}

// close releases PROFILE's mapping of the counters.
func (c *counters) close() {
	if c != nil {
		c.shared.Close()
	}
}

// forget drops the trampolines in [lo, hi), gone with their module's
// code; their counts stay.
func (c *counters) forget(lo, hi uint64) {
	c.tramps = slices.DeleteFunc(c.tramps, func(tr *tramp) bool { return tr.patch.Site >= lo && tr.patch.Site < hi })
}

// execed forgets the trampolines, gone with the image; the counts are
// kept.
func (c *counters) execed() { c.tramps = nil }

// ended adds the counters of every thread's block to the run's hits,
// with the deepest call depth the blocks kept, and warns when threads had
// to share a block (SharedBlocks).
func (c *counters) ended() {
	if c.env.funcs {
		c.addCounts(c.env.hits) // (lines: lineTrampolines.collect)
	}
	c.depth = c.callDepth()
	if c.overflow {
		c.env.warn(prf.SharedBlocks(c.layout.NBlocks))
	}
	c.warnDamage()
}

// stats gives the run's figures the deepest call depth the blocks kept
// (statsHook).
func (c *counters) stats(s *datafile.Stats) { s.CallDepth = c.depth }
