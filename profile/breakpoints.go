// Breakpoints: the mechanism of the entries that take no trampoline, of
// the exits of timed functions left to it, of lines, and of the dynamic
// linker's rendezvous. A thread stopped at one of PROFILE's breakpoints
// has its hit booked, and the instruction under it carried out
// (emulated, or run from the site's slot) or, for coverage, the
// breakpoint taken out.

package profile

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"syscall"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// site is one of PROFILE's breakpoints (breakpoints.go): where it is
// and the bytes it replaced, what a hit there means, and how the
// instruction under it is carried out while it stays. The two are apart:
// what a hit means is the profile's (the books, the counts); how the
// instruction runs is the processor's (the architecture's displacement,
// the slot).
type site struct {
	addr uint64 // run-time address
	orig []byte // the bytes the breakpoint replaced
	meaning
	carrying
}

// meaning is what a hit of a site means: item is the function entered
// (Plan.Funcs) or the line run (Plan.Lines), -1 for none; more are the
// other lines of a line site several lines share; exit is the function
// left (timing), -1 for none (an entry that is also an exit has both);
// rendezvous marks the dynamic linker's breakpoint (modules.go). hits
// counts the stops at an exit site (timing in-process: exitStops), or
// at a branch's (branchStops). once
// marks an entry's site taken out at its first hit, as coverage by
// breakpoints takes them out, in a run whose other entries are covered
// in-process (a Go function's on arm64 without LSE: entryTrampolines).
type meaning struct {
	item       int
	more       []int
	exit       int
	rendezvous bool
	hits       int
	once       bool
	// branch is 1 + the index of the plan's branch at a line coverage
	// site (branches.go), 0 for none: branchOf.
	branch int
}

// branchOf returns the plan's branch at the site, or -1.
func (m *meaning) branchOf() int { return m.branch - 1 }

// carrying is how the instruction under a site is carried out: disp
// says how, valid when displaced is set (always, but for coverage sites
// whose instruction could not be displaced), from slot, its out-of-line
// slot (0: none). A line site's is prepared at its first hit (most lines
// of a program never run): pending until then, code holding the
// instruction's bytes. stale marks a retired site whose breakpoint the
// processor still runs (retrapped): its instruction is carried out of
// line.
type carrying struct {
	disp      instr.Displaced
	displaced bool
	slot      uint64
	pending   bool
	code      []byte
	stale     bool
}

// breakpoints holds PROFILE's breakpoints in the program, each a site,
// and handles the stops at them.
type breakpoints struct {
	env bpEnv
	// sites are the breakpoints in place, by run-time address; retired
	// those coverage removed after their hit, which threads that trapped
	// meanwhile still stop at.
	sites   map[uint64]*site
	retired map[uint64]*site
	// slots finds a site by its out-of-line slot, where its instruction
	// runs (and may fault).
	slots map[uint64]*site
	// unwritten are the sites of the module being planted, whose
	// breakpoints are written last (write).
	unwritten []*site
	// lineSites are the sites of each line not covered yet (line
	// coverage; lines.go).
	lineSites [][]*site
	// removeAtHit is set for coverage by breakpoints: each is taken out
	// at its first hit.
	removeAtHit bool
	hits        uint64 // the stops at a site
	// ownTraps is set when the program raised a SIGTRAP of its own.
	ownTraps bool
}

// bpLoop is what a breakpoint's stop asks of the loop: to write the
// stopped thread's registers (the environment's regs) and let it go,
// with a signal or none.
type bpLoop interface {
	setAndResume(th *thread, sig syscall.Signal) error
}

// bpEnv is what the breakpoints read and call of the run: the loop, the
// plan and the architecture; the program's memory (the injector's
// borrowedMem while it has a thread, so held through the tracer's), the
// program, and the registers of the thread whose stop is handled; the
// hits of each item (counting, coverage); the planting engine, which
// reads the code under a breakpoint; timing's clocks, which book a timed
// hit; the watch (a warning given once) and the narration. The parts a
// run may drop or make later (the books, the rings, the libraries, with
// the dynamic linker's rendezvous) are set by choose (hooks.go), nil
// where the run has none.
type bpEnv struct {
	loop     bpLoop
	plan     *datafile.Plan
	arch     instr.Arch
	mem      *instr.Memory
	proc     *process
	regs     *ptrace.Regs
	hits     []uint64
	ways     []uint64
	unprobed []uint64
	warn     func(*prf.Diagnostic)
	plant    *planter
	clocks   *clocks
	watch    *watch
	told     observers
	books    *books.Books
	rings    *rings
	timer    timer
	ledgers  *ledgers
	modules  *modules
}

// newBreakpoints returns the breakpoints of t's run, over what they read
// and call of it (but for what choose sets), with none planted.
func newBreakpoints(t *tracer) *breakpoints {
	return newBreakpointsOver(bpEnv{loop: t, plan: t.plan, arch: t.arch, mem: &t.mem, proc: &t.proc, regs: &t.regs, hits: t.counted.hits, ways: t.counted.ways, unprobed: t.counted.unprobed, warn: t.cfg.Warn,
		plant: t.parts.plant, clocks: &t.clocks, watch: &t.parts.watch, told: t.told})
}

// newBreakpointsOver returns breakpoints over env, with none planted.
func newBreakpointsOver(env bpEnv) *breakpoints {
	return &breakpoints{env: env, sites: map[uint64]*site{}, retired: map[uint64]*site{}, slots: map[uint64]*site{}}
}

// add adds site s, displaced into its slot where it has one, to be
// written with the module being planted (write).
func (bp *breakpoints) add(s *site) {
	bp.sites[s.addr] = s
	if s.displaced && s.disp.Slot != nil {
		bp.slots[s.slot] = s
	}
	bp.unwritten = append(bp.unwritten, s)
}

// write writes the breakpoints of the sites added since the last write.
func (bp *breakpoints) write() error {
	code := bp.env.arch.Breakpoint()
	for _, s := range bp.unwritten {
		if err := (*bp.env.mem).WriteMem(s.addr, code); err != nil {
			return fmt.Errorf("plant breakpoint at %#x: %w", s.addr, err)
		}
	}
	bp.unwritten = bp.unwritten[:0]
	return nil
}

// inSlot returns the site whose instruction runs from the slot at pc.
func (bp *breakpoints) inSlot(pc uint64) *site { return bp.slots[pc] }

// forget drops the sites in [lo, hi), gone with their module's code.
func (bp *breakpoints) forget(lo, hi uint64) {
	in := func(a uint64) bool { return a >= lo && a < hi }
	for _, m := range []map[uint64]*site{bp.sites, bp.retired} {
		for a := range m {
			if in(a) {
				delete(m, a)
			}
		}
	}
	for slot, s := range bp.slots {
		if in(s.addr) {
			delete(bp.slots, slot)
		}
	}
}

// ended warns, at the end of the run, when the program raised SIGTRAPs
// of its own while it had breakpoints hit: a debugger's habit, which
// PROFILE passed on (endHook).
func (bp *breakpoints) ended() {
	if bp.ownTraps && bp.hits > 0 {
		bp.env.warn(prf.OwnTraps())
	}
}

// execed drops every site: the program's image is gone (exec).
func (bp *breakpoints) execed() {
	clear(bp.sites)
	clear(bp.slots)
	clear(bp.retired)
}

// takeOut writes the original bytes of the breakpoints in place into
// mem; with retired, of those removed since too (a forked child's copy
// of the memory still has them).
func (bp *breakpoints) takeOut(mem interface{ WriteMem(uint64, []byte) error }, retired bool) {
	for _, s := range bp.sites {
		mem.WriteMem(s.addr, s.orig)
	}
	if retired {
		for _, s := range bp.retired {
			mem.WriteMem(s.addr, s.orig)
		}
	}
}

// collect gives the run's result the number of stops at sites.
func (bp *breakpoints) collect(res *Result) { res.Hits = bp.hits }

// stop handles a thread stopped by a breakpoint at addr, and reports
// whether it was one of PROFILE's.
func (bp *breakpoints) stop(th *thread, addr uint64) (bool, error) {
	if s := bp.sites[addr]; s != nil {
		return true, bp.hit(th, s)
	}
	if s := bp.retired[addr]; s != nil {
		return true, bp.retrapped(th, s)
	}
	return false, nil
}

// plant plants the breakpoints of planting p: a line profile's lines
// (plantLines), or the entries and exits no other mechanism took.
func (bp *breakpoints) plant(p *planting) error {
	if p.lines {
		return bp.plantLines(p)
	}
	for _, item := range p.entries {
		if err := bp.plantEntry(p, item, false); err != nil {
			return err
		}
	}
	p.entries = nil
	if p.exits != nil {
		bp.plantExits(p.area, p.exits)
	}
	return nil
}

// plantEntry prepares the breakpoint of item's entry, planted by p,
// with its out-of-line slot taken from p's area (when there is one),
// taken out at its first hit where once (meaning.once); a function that
// cannot be profiled is warned about.
func (bp *breakpoints) plantEntry(p *planting, item int, once bool) error {
	e := &bp.env
	f := &e.plan.Funcs[item]
	addr := f.Entry + p.bias
	code := make([]byte, e.arch.MaxInstLen())
	if err := e.plant.readCode(addr, code); err != nil {
		return fmt.Errorf("read code of %s at %#x: %w", f.Name, addr, err)
	}
	brk := e.arch.Breakpoint()
	cell := p.area.slot(e.arch.SlotSize())
	s := &site{addr: addr, orig: append([]byte(nil), code[:len(brk)]...), meaning: meaning{item: item, exit: -1, once: once}, carrying: carrying{slot: cell}}
	// Coverage removes a breakpoint at its first hit and needs no
	// displacement, except for a vfork child, which shares the program's
	// memory: it must step over the breakpoint, not remove it.
	d, err := e.arch.Displace(code, addr, s.slot)
	if err == nil && d.Emulate == nil && cell == 0 {
		err = instr.ErrOutOfReach
	}
	switch {
	case err == nil:
		s.disp, s.displaced = d, true
		if d.Slot != nil {
			p.area.put(cell, d.Slot)
		}
	case !bp.removeAtHit && !once:
		e.warn(prf.CannotProfileFunction(f.Name, e.plan.Modules[p.mi].Name, err))
		return nil
	}
	bp.add(s)
	return nil
}

// plantExits plants a breakpoint at every exit of exits' functions, as
// instr.FindExits finds them, with slots taken from area when there is
// one. Indirect jumps are
// left: a frame left through one is closed from the stack pointer at the
// next event. An exit at an address that already has a site, or whose
// instruction cannot be carried out from a breakpoint, is left the same
// way.
func (bp *breakpoints) plantExits(area *codeArea, exits map[int][]instr.Exit) {
	e := &bp.env
	for _, item := range slices.Sorted(maps.Keys(exits)) {
		for _, x := range exits[item] {
			if x.Indirect {
				continue
			}
			if s := bp.sites[x.PC]; s != nil {
				if s.item == item && s.exit < 0 {
					s.exit = item
				}
				continue
			}
			code := make([]byte, e.arch.MaxInstLen())
			if err := e.plant.readCode(x.PC, code); err != nil {
				continue
			}
			cell := area.slot(e.arch.SlotSize())
			d, err := e.arch.Displace(code, x.PC, cell)
			if err != nil || (d.Emulate == nil && cell == 0) {
				continue
			}
			s := &site{addr: x.PC, orig: append([]byte(nil), code[:len(e.arch.Breakpoint())]...),
				meaning: meaning{item: -1, exit: item}, carrying: carrying{slot: cell, disp: d, displaced: true}}
			if d.Slot != nil {
				area.put(cell, d.Slot)
			}
			bp.add(s)
		}
	}
}

// hit handles a thread stopped at the breakpoint of site s: the hit is
// booked (timing and attribution), covered (line coverage) or counted,
// and the thread goes on past the site.
func (bp *breakpoints) hit(th *thread, s *site) error {
	e := &bp.env
	if s.rendezvous {
		return e.modules.rendezvousHit(th, s)
	}
	th.retrap = 0
	bp.hits++
	switch {
	case th.foreign:
	case e.books != nil:
		e.clocks.book(th, s, booking{e.books, e.plan.Funcs, e.rings, e.ledgers, e.arch, e.regs, *e.mem})
	case bp.lineSites != nil:
		if err := bp.cover(s); err != nil {
			return err
		}
		if s.branchOf() >= 0 {
			return bp.branchHit(th, s)
		}
	default:
		e.hits[s.item]++
		for _, i := range s.more {
			e.hits[i]++
		}
	}
	if e.told.on() {
		e.told.note(hitEvent{th, s})
	}
	if s.item < 0 && e.timer != nil && e.timer.timed(&e.plan.Funcs[s.exit]) == nil {
		if s.hits++; s.hits == exitStops {
			// A hot exit: its frames close from the stack pointer from
			// now on (timing.go).
			e.warn(prf.ExitTakenOut(e.plan.Funcs[s.exit].Name, exitStops))
			return bp.retire(th, s)
		}
	}
	remove := bp.removeAtHit || s.once
	if s.pending && !(remove && !th.foreign) {
		if !bp.displaceLater(s) {
			return bp.retire(th, s)
		}
	}
	if remove && (!th.foreign || !s.displaced) {
		// (A vfork child on a breakpoint that cannot be stepped over
		// removes it: the program's own first hit there is then lost, which
		// is better than a child killed.)
		return bp.retire(th, s)
	}
	return bp.displace(th, s)
}

// displace carries out the instruction under a breakpoint for a stopped
// thread, the breakpoint staying in place.
func (bp *breakpoints) displace(th *thread, s *site) error {
	e, d := &bp.env, &s.disp
	switch {
	case d.Emulate != nil:
		if err := d.Emulate(e.regs, *e.mem); err != nil {
			return fmt.Errorf("emulate %s at %#x: %w", d.Inst.Text, s.addr, err)
		}
		return e.loop.setAndResume(th, 0)
	case d.SingleStep:
		e.regs.SetPC(s.slot)
		if err := (*e.proc).setRegs(th.tid, e.regs); err != nil {
			return fmt.Errorf("write registers of thread %d: %w", th.tid, err)
		}
		th.stepping = s
		e.clocks.noteRelease()
		if err := (*e.proc).step(th.tid); err != nil && !ptrace.IsNoProcess(err) {
			return fmt.Errorf("step thread %d: %w", th.tid, err)
		}
		return nil
	default:
		e.regs.SetPC(s.slot)
		return e.loop.setAndResume(th, 0)
	}
}

// stepped finishes the single step of thread th through the slot of the
// site it stopped at (displace), whose end is the thread's SIGTRAP stop:
// the instruction's effects the slot could not have are made, and the
// thread goes on with the signal that came meanwhile, if any.
func (bp *breakpoints) stepped(th *thread) error {
	s := th.stepping
	th.stepping = nil
	if err := s.disp.AfterStep(bp.env.regs, *bp.env.mem); err != nil {
		return fmt.Errorf("finish step at %#x: %w", s.addr, err)
	}
	return bp.env.loop.setAndResume(th, th.takePending())
}

// retire removes a coverage breakpoint after its first hit and lets the
// thread run the restored instruction in place. Other threads that trapped
// on it meanwhile find it in bp.retired.
func (bp *breakpoints) retire(th *thread, s *site) error {
	if err := bp.unplant(s); err != nil {
		return err
	}
	delete(bp.sites, s.addr)
	bp.retired[s.addr] = s
	bp.env.regs.SetPC(s.addr)
	return bp.env.loop.setAndResume(th, 0)
}

// unplant takes the breakpoint of site s out of the program's memory.
func (bp *breakpoints) unplant(s *site) error {
	if staleCode {
		return nil
	}
	if err := (*bp.env.mem).WriteMem(s.addr, s.orig); err != nil {
		return fmt.Errorf("remove breakpoint: %w", err)
	}
	return nil
}

// staleCode, set by tests only, makes the processor run a stale copy of
// the code as retrapped describes: the breakpoints PROFILE removes stay
// in memory, and PROFILE, looking, believes them gone.
var staleCode bool

// retrapped handles a thread stopped at the breakpoint of retired site
// s. It trapped there before the breakpoint was removed, and runs the
// restored instruction in place. A thread that traps there again at once
// finds either the breakpoint back in memory (written out again, with a
// warning), or memory holding the original instruction while the
// processor still runs the breakpoint: a stale copy of the code, which
// qemu's emulation of arm64 was seen to keep for minutes, every thread
// trapping there at every pass. Sent back again and again, the threads
// would never get past it; the instruction is carried out of line
// instead, at this pass and every later one (StaleCode, PRF4672).
func (bp *breakpoints) retrapped(th *thread, s *site) error {
	if s.stale {
		return bp.displace(th, s)
	}
	if th.retrap == s.addr {
		back, err := bp.restore(s)
		if err != nil {
			return err
		}
		if !back {
			if err := bp.displaceStale(s); err != nil {
				return err
			}
			bp.env.watch.warnOnce(bp.env.warn, prf.StaleCode(s.addr))
			s.stale = true
			return bp.displace(th, s)
		}
	}
	th.retrap = s.addr
	bp.env.regs.SetPC(s.addr)
	return bp.env.loop.setAndResume(th, 0)
}

// displaceStale prepares the displacement of retired site s, whose
// breakpoint the processor runs though memory no longer holds it: a
// coverage site was never displaced. A site whose instruction cannot be
// carried out of line ends the run: the program could not get past it.
func (bp *breakpoints) displaceStale(s *site) error {
	if s.displaced {
		return nil
	}
	err := errors.New("its instruction cannot be carried out of line")
	if s.pending {
		err = bp.prepareDisplace(s)
	}
	if err != nil {
		return fmt.Errorf("the processor still runs the breakpoint removed at %#x, though memory holds the original instruction: %w", s.addr, err)
	}
	return nil
}

// restore writes the original bytes of a removed breakpoint again, when
// the memory holds the breakpoint still, and warns of it: a thread sent
// back to run the restored instruction trapped there again. It reports
// whether it found the breakpoint back.
func (bp *breakpoints) restore(s *site) (bool, error) {
	e := &bp.env
	b := make([]byte, len(s.orig))
	if err := (*e.mem).ReadMem(s.addr, b); err != nil || !bytes.Equal(b, e.arch.Breakpoint()) || staleCode {
		return false, nil
	}
	e.warn(prf.BreakpointBack(s.addr))
	if err := (*e.mem).WriteMem(s.addr, s.orig); err != nil {
		return true, fmt.Errorf("remove breakpoint again: %w", err)
	}
	return true, nil
}

// trap is the loop's: it handles a SIGTRAP stop without an event: a
// breakpoint, the end of a single step through a site's slot, or the
// program's own SIGTRAP. A breakpoint is offered to each mechanism in turn
// (stop); one that none claims is the program's.
func (t *tracer) trap(th *thread) error {
	if err := t.proc.getRegs(th.tid, &t.regs); err != nil {
		if ptrace.IsNoProcess(err) {
			return nil
		}
		return fmt.Errorf("read registers of thread %d: %w", th.tid, err)
	}
	if th.stepping != nil {
		return t.parts.bp.stepped(th)
	}
	addr := t.arch.BreakpointAddr(t.regs.PC())
	for _, m := range t.parts.mechs {
		if ours, err := m.stop(th, addr); ours {
			return err
		}
	}
	// Not ours: the program's own trap, delivered unchanged (or a copy
	// of a breakpoint, which PROFILE says).
	t.parts.watch.copyOfBreakpoint(addr, t.watchEnv())
	t.parts.bp.ownTraps = true
	return t.resume(th.tid, syscall.SIGTRAP)
}

// setAndResume is the loop's: it writes the registers of thread th, read
// at its stop into t.regs and changed since, and lets it go with sig (or
// none).
func (t *tracer) setAndResume(th *thread, sig syscall.Signal) error {
	if err := t.proc.setRegs(th.tid, &t.regs); err != nil {
		if ptrace.IsNoProcess(err) {
			return nil
		}
		return fmt.Errorf("write registers of thread %d: %w", th.tid, err)
	}
	return t.resume(th.tid, sig)
}
