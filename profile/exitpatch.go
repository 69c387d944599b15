// Exits in-process: patching a timed function's exits with trampolines
// that record the leave (full jumps, short jumps to hops, or, for a
// function whose exits cannot all be patched, the return sites of its
// calls), sharing the module's codeArea and padding with its entries.

package profile

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// exitPatches is the mechanism of timed functions' exits in-process:
// each exit a jump to a trampoline that records the leave into the
// thread's ring, or, for a function whose exits cannot all be patched,
// the places where its calls return. The exits it cannot patch are left
// to the breakpoints.
type exitPatches struct {
	arch instr.Arch
	plan *datafile.Plan
	// timer is the run's timing in-process: which functions it times,
	// and the code of their exits (the rings' records, or the books kept
	// in the program); counters is the memory shared with the program,
	// where the trampolines are registered, once mapped.
	timer    timer
	counters func() *counters
	// scan is what the scans of the modules' code found, bp the
	// breakpoints planted before (whose sites no patch may cover).
	scan *codeScan
	bp   *breakpoints
	warn func(*prf.Diagnostic)
	// padding is where a module's short jumps put their hops (the
	// planting's: planter.padding).
	padding func(p *planting) *hopSpace
	// patched counts the exits patched in-process; left lists the
	// others, which keep a breakpoint, with the reason (reportFallBacks).
	patched int
	left    []fallBack
	// returnSites counts the places where calls return patched to
	// record the exits of functions whose own exits could not all be.
	returnSites int
}

// newExitPatches returns the exits' patches of t's run, timed by tm.
func newExitPatches(t *tracer, tm timer) *exitPatches {
	return &exitPatches{arch: t.arch, plan: t.plan, timer: tm, counters: func() *counters { return t.parts.counters }, scan: &t.parts.plant.scan, bp: t.parts.bp, warn: t.cfg.Warn, padding: t.parts.plant.padding}
}

// plant patches the exits of planting p that it can, after the entries
// (whose patches the exits' must not overlap), and leaves the others in
// p.exits for the breakpoints.
func (x *exitPatches) plant(p *planting) error {
	if p.exits == nil || !p.area.mapped() {
		return nil
	}
	jumps, left := x.exitTrampolines(p, p.exits)
	p.jumps, p.exits = append(p.jumps, jumps...), left
	return nil
}

// stop claims no stop: an exit left to a breakpoint is the breakpoints'.
func (x *exitPatches) stop(*thread, uint64) (bool, error) { return false, nil }

// forget has nothing to drop: the trampolines are the counters'
// and what the scan found is the tracer's (codeScan).
func (x *exitPatches) forget(lo, hi uint64) {}

// collect gives the run's result the number of return sites patched.
func (x *exitPatches) collect(res *Result) { res.ReturnSites = x.returnSites }

// exitTrampolines patches in-process the exits of the functions in exits
// (planted by p) that instr.PlanExits can patch and that no patch or
// breakpoint planted before overlaps (p's entries, with their jumps):
// with full jumps, then with short ones to hops in the padding, and the
// functions whose exits could not all be patched at the return sites of
// their calls. Each trampoline is built where it goes, at the area's
// next. It returns the jumps to write, and the exits left for
// breakpoints, by item.
func (x *exitPatches) exitTrampolines(p *planting, exits map[int][]instr.Exit) ([]patchWrite, map[int][]instr.Exit) {
	e := &exitPatching{p: p, taken: takenSpans(p.jumps, x.bp.sites), left: map[int][]instr.Exit{}}
	inEntry := entryExits(p.jumps)
	for _, item := range slices.Sorted(maps.Keys(exits)) {
		x.patchExits(e, item, exits[item], inEntry)
	}
	e.claimed = slices.Clone(e.windows)
	x.shortExits(e)
	x.returnSitesOf(e)
	return e.out, e.left
}

// exitPatching is the work of patching one module's exits in-process
// (exitTrampolines).
type exitPatching struct {
	p *planting
	// taken is what the entries' patches and breakpoints cover.
	taken spans
	// left are the exits left for breakpoints, by item.
	left map[int][]instr.Exit
	// out are the jumps to write.
	out []patchWrite
	// short are the exits to try again with a short jump.
	short []shortExit
	// windows are the exits' patches; claimed those and the short
	// jumps' hops and the return sites' patches, in no order.
	windows, claimed spans
}

// entryExits returns the exits that the entries' trampolines of jumps
// carry out, with their records (a function whose first instructions,
// moved, hold its return).
func entryExits(jumps []patchWrite) map[uint64]bool {
	inEntry := map[uint64]bool{}
	for _, j := range jumps {
		if p := &j.tramp.patch; j.tramp.code.Exit {
			pc := p.Site
			for _, in := range p.Insts {
				if in.Kind == instr.Ret || in.Kind == instr.Jump {
					inEntry[pc] = true
					break
				}
				pc += uint64(in.Len)
			}
		}
	}
	return inEntry
}

// addExit takes exit trampoline w into the area and the run.
func (x *exitPatches) addExit(e *exitPatching, w patchWrite) {
	e.p.area.alloc(len(w.code)) // where it was built: next
	e.p.area.put(w.tramp.addr, w.code)
	e.out = append(e.out, w)
	x.counters().add(w.tramp)
	x.patched++
	e.windows = append(e.windows, [2]uint64{w.tramp.patch.Site, w.tramp.patch.End()})
}

// patchExits patches the exits of item's function with full jumps where
// they fit; those a short jump may fit are kept in e.short, the others
// left for breakpoints.
func (x *exitPatches) patchExits(e *exitPatching, item int, exits []instr.Exit, inEntry map[uint64]bool) {
	text := e.p.text
	f := &x.plan.Funcs[item]
	lo, hi := f.Low+e.p.bias, f.High+e.p.bias
	if x.timer.timed(f) != nil || text.b == nil || lo < text.start || hi > text.start+uint64(len(text.b)) {
		e.left[item] = exits
		return
	}
	pad := instr.PaddingAfter(x.arch, text.b[hi-text.start:], hi)
	plans, err := x.arch.PlanExits(text.b[lo-text.start:hi-text.start+uint64(pad)], lo, hi, false)
	if err != nil {
		e.left[item] = exits
		return
	}
	var mine [][2]uint64 // this function's exit patches: windows of others are elsewhere
	for _, p := range plans {
		if p.Exit.Indirect {
			continue
		}
		if inEntry[p.Exit.PC] {
			x.patched++
			continue
		}
		w, err := x.exitTrampoline(item, &p, e.taken, mine, e.p.area.next)
		if err != nil {
			// (A short jump's window is smaller: it may fit where a
			// branch lands in a full jump's.)
			if back, _ := x.arch.ShortReach(); back > 0 && (errors.Is(err, instr.ErrTooShort) || errors.Is(err, instr.ErrBranchInto)) {
				e.short = append(e.short, shortExit{item: item, fn: text.b[lo-text.start : hi-text.start+uint64(pad)], lo: lo, hi: hi, exit: p.Exit})
				continue
			}
			x.exitLeft(e.left, item, p.Exit, err, e.taken)
			continue
		}
		x.addExit(e, w)
		mine = append(mine, [2]uint64{p.Patch.Site, p.Patch.End()})
	}
}

// shortExits patches the exits of e.short with short jumps to hops in the
// padding, which the exits' full patches take first.
func (x *exitPatches) shortExits(e *exitPatching) {
	if len(e.short) == 0 {
		return
	}
	hops := x.padding(e.p)
	for _, w := range e.windows {
		hops.remove(w[0], w[1])
	}
	// (Each function's exits planned for short jumps once, for all of
	// its exits that need them.)
	type planned struct {
		plans []instr.ExitPlan
		err   error
	}
	plansOf := map[[2]uint64]planned{}
	for _, s := range e.short {
		fp, ok := plansOf[[2]uint64{s.lo, s.hi}]
		if !ok {
			fp.plans, fp.err = x.arch.PlanExits(s.fn, s.lo, s.hi, true)
			plansOf[[2]uint64{s.lo, s.hi}] = fp
		}
		var w patchWrite
		err := fp.err
		if err == nil {
			w, err = x.shortExit(s, fp.plans, e.taken, e.claimed, hops, e.p.area.next)
		}
		if err != nil {
			x.exitLeft(e.left, s.item, s.exit, err, e.taken)
			continue
		}
		x.addExit(e, w)
		e.claimed = append(e.claimed, [2]uint64{w.addr, w.addr + uint64(len(w.jump))}, [2]uint64{w.hop, w.hop + uint64(len(w.hopCode))})
	}
}

// returnSitesOf leaves the functions whose exits could not all be patched
// where their calls return, when every call of theirs in the module can be
// patched there: their exits then keep no breakpoint.
func (x *exitPatches) returnSitesOf(e *exitPatching) {
	c, bias := x.counters(), e.p.bias
	callers := x.callers(bias)
	budget := returnSites
	for _, item := range slices.Sorted(maps.Keys(e.left)) {
		f := &x.plan.Funcs[item]
		rets := x.scan.returns[f.Entry+bias]
		if f.Frame != datafile.FrameSP || len(rets) == 0 || len(rets) > budget {
			continue
		}
		// Planned first, all of them, where they would go; built again
		// one after the other at their places.
		mark := len(e.claimed)
		ok := true
		for n, r := range rets {
			w, err := x.returnSite(item, r, callers, e.p.text, e.taken, e.claimed, e.p.area.next+uint64(n)*trampCell)
			if err != nil {
				ok = false
				break
			}
			e.claimed = append(e.claimed, [2]uint64{w.tramp.patch.Site, w.tramp.patch.End()})
		}
		if !ok {
			e.claimed = e.claimed[:mark]
			continue
		}
		for _, r := range rets {
			w, err := x.returnSite(item, r, callers, e.p.text, e.taken, nil, e.p.area.next)
			if err != nil {
				continue // never: planned above
			}
			at := e.p.area.alloc(len(w.code))
			e.p.area.put(at, w.code)
			e.out = append(e.out, w)
			c.add(w.tramp)
			x.returnSites++
		}
		budget -= len(rets)
		x.patched += len(e.left[item])
		delete(e.left, item)
		x.left = slices.DeleteFunc(x.left, func(fb fallBack) bool { return fb.item == item })
	}
}

// returnSites bounds the return sites a module's exits may take (the area
// is mapped for them before it is known which functions need them).
const returnSites = 4096

// callers returns the extents of the profiled functions of the module
// loaded with bias, sorted: where a return site may be patched. (Not Go's:
// the exits of Go functions are not timed where their calls return.)
func (x *exitPatches) callers(bias uint64) spans {
	var s spans
	for _, f := range x.plan.Funcs {
		if f.Low < f.High && f.Frame == datafile.FrameSP {
			s = append(s, [2]uint64{f.Low + bias, f.High + bias})
		}
	}
	slices.SortFunc(s, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	return s
}

// returnSite patches r, where a call of item returns, with a trampoline at
// cell that records item's exit (instr.ReturnTag) and carries out the
// instructions there: r must be in a profiled function, no jump may land
// there or inside the patch, and the patch must overlap neither taken nor
// claimed.
func (x *exitPatches) returnSite(item int, r uint64, callers spans, text moduleText, taken, claimed spans, cell uint64) (patchWrite, error) {
	i := sort.Search(len(callers), func(i int) bool { return callers[i][1] > r })
	if i >= len(callers) || callers[i][0] > r {
		return patchWrite{}, errNoExtent
	}
	lo, hi := callers[i][0], callers[i][1]
	if text.b == nil || lo < text.start || hi > text.start+uint64(len(text.b)) {
		return patchWrite{}, errNoCode
	}
	if x.scan.landings.has(r) {
		return patchWrite{}, fmt.Errorf("a jump lands where a call of it returns, at %#x: %w", r, instr.ErrBranchInto)
	}
	if err := x.scan.code.boundary(r); err != nil {
		f := &x.plan.Funcs[item]
		x.warn(prf.SiteRefused("return site", r, f.Name, x.plan.Modules[f.Module].Name, err))
		return patchWrite{}, err
	}
	p, err := x.arch.PlanPatch(text.b[lo-text.start:hi-text.start], lo, r)
	if err != nil {
		return patchWrite{}, err
	}
	if p.Site != r || taken.covers(p.Site, p.End()) || overlaps(claimed, p.Site, p.End()) || x.scan.landings.inside(p.Site, p.End()) {
		return patchWrite{}, errOverlap
	}
	rc := x.timer.eventCode(item, returnEvent)
	tr, err := x.arch.Trampoline(&p, cell, rc.code)
	if err != nil {
		return patchWrite{}, err
	}
	if len(tr.Code) > trampCell {
		return patchWrite{}, fmt.Errorf("trampoline of %d bytes: %w", len(tr.Code), instr.ErrNotRelocatable)
	}
	jump, err := x.arch.PatchJump(&p, cell)
	if err != nil {
		return patchWrite{}, err
	}
	return patchWrite{addr: r, jump: jump, code: tr.Code,
		tramp: &tramp{addr: cell, patch: p, code: tr, regions: []region{rc.at(0)}}}, nil
}

// shortExit is an exit too short for a full jump.
type shortExit struct {
	item   int
	fn     []byte // its function's code and padding
	lo, hi uint64 // its function's extent
	exit   instr.Exit
}

// exitLeft notes that item's exit e keeps a breakpoint, for err; but an
// exit inside an entry's patch gets none (its frame closes from the
// stack pointer).
func (x *exitPatches) exitLeft(left map[int][]instr.Exit, item int, e instr.Exit, err error, taken spans) {
	x.left = append(x.left, fallBack{item: item, err: err, pc: e.PC})
	if !taken.covers(e.PC, e.PC+1) {
		left[item] = append(left[item], e)
	}
}

// shortExit patches exit s with a short jump to a hop taken from hops,
// its trampoline at cell, as plans (its function's exits planned for
// short jumps) say; its patch and hop must overlap neither taken nor
// claimed.
func (x *exitPatches) shortExit(s shortExit, plans []instr.ExitPlan, taken, claimed spans, hops *hopSpace, cell uint64) (patchWrite, error) {
	i := slices.IndexFunc(plans, func(p instr.ExitPlan) bool { return p.Exit.PC == s.exit.PC })
	if i < 0 {
		return patchWrite{}, fmt.Errorf("exit at %#x: %w", s.exit.PC, instr.ErrTooShort)
	}
	p := &plans[i]
	if p.Err != nil {
		return patchWrite{}, p.Err
	}
	if overlaps(claimed, p.Patch.Site, p.Patch.End()) {
		return patchWrite{}, errOverlap
	}
	w, err := x.exitTrampoline(s.item, p, taken, nil, cell)
	if err != nil {
		return patchWrite{}, err
	}
	back, fwd := x.arch.ShortReach()
	hop, ok := hops.take(p.Patch.Site, back, fwd, hopLen)
	if !ok || overlaps(claimed, hop, hop+hopLen) || taken.covers(hop, hop+hopLen) {
		return patchWrite{}, errNoHop
	}
	if w.hopCode, err = x.arch.Jump(hop, cell); err != nil {
		return patchWrite{}, err
	}
	w.hop = hop
	if w.jump, err = x.arch.PatchJump(&p.Patch, hop); err != nil {
		return patchWrite{}, err
	}
	return w, nil
}

// overlaps reports whether [lo, hi) overlaps one of s, in any order.
func overlaps(s spans, lo, hi uint64) bool {
	return slices.ContainsFunc(s, func(r [2]uint64) bool { return r[0] < hi && lo < r[1] })
}

// errOverlap is why an exit whose window another patch covers keeps a
// breakpoint (or, inside an entry's patch, nothing: its frame closes from
// the stack pointer).
var errOverlap = errors.New("another patch covers the exit's window")

// exitTrampoline builds the trampoline at cell of item's exit p.
func (x *exitPatches) exitTrampoline(item int, p *instr.ExitPlan, taken spans, mine [][2]uint64, cell uint64) (patchWrite, error) {
	if p.Err != nil {
		return patchWrite{}, p.Err
	}
	lo, hi := p.Patch.Site, p.Patch.End()
	if taken.covers(lo, hi) || slices.ContainsFunc(mine, func(m [2]uint64) bool { return m[0] < hi && lo < m[1] }) {
		return patchWrite{}, errOverlap
	}
	if x.scan.landings.inside(lo, hi) {
		return patchWrite{}, fmt.Errorf("a jump from outside the function lands in the exit's window [%#x, %#x): %w", lo, hi, instr.ErrBranchInto)
	}
	if err := x.scan.code.boundary(lo); err != nil {
		return patchWrite{}, err // (never: the exits are found decoding the function)
	}
	rc := x.timer.eventCode(item, exitEvent)
	if rc.code == nil {
		return patchWrite{}, errNoRoom
	}
	if err := x.scratchAt(&rc, p.Patch.Insts); err != nil {
		return patchWrite{}, err
	}
	tr, err := instr.ExitTrampoline(x.arch, &p.Patch, cell, rc.code)
	if err != nil {
		return patchWrite{}, err
	}
	if len(tr.Code) > trampCell {
		return patchWrite{}, fmt.Errorf("exit trampoline of %d bytes: %w", len(tr.Code), instr.ErrNotRelocatable)
	}
	var jump []byte
	if !p.Patch.Short { // (a short jump's goes to its hop: shortExit)
		if jump, err = x.arch.PatchJump(&p.Patch, cell); err != nil {
			return patchWrite{}, err
		}
	}
	return patchWrite{addr: lo, jump: jump, code: tr.Code,
		tramp: &tramp{addr: cell, patch: p.Patch, code: tr, regions: []region{rc.at(tr.At)}}}, nil
}

// errNotTailCall is why a jump out of a function keeps a breakpoint where
// the record code needs registers free (instr.RecordCode.Scratch).
var errNotTailCall = errors.New("a jump out of the function to no function's entry (its cold part?), where registers may be live")

// scratchAt says why record code rc cannot go before the exit among
// insts (the instructions a patch replaces): a jump out of the function
// that is not a tail call, where rc needs registers that are free only at
// entries and returns. A tail call is told by its target: the start of a
// function of the module's symbol table that is no cold part, or an
// address some call of the module calls.
func (x *exitPatches) scratchAt(rc *timedCode, insts []instr.Inst) error {
	if !rc.scratch {
		return nil
	}
	for _, in := range insts {
		if in.Kind == instr.Jump && !x.scan.starts[in.Target] && len(x.scan.returns[in.Target]) == 0 {
			return fmt.Errorf("%s: %w", in.Text, errNotTailCall)
		}
	}
	return nil
}
