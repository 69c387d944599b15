// Function entries: planting a module's entries, in-process (a jump to a
// trampoline that counts, or times, and runs the moved instructions) or,
// where no patch can go, with a breakpoint whose instruction runs from an
// out-of-line slot. Everything a module takes is built in its codeArea
// and written in bulk (writePlanting). The trampolines themselves are
// trampolines.go's; the exits' patches exitpatch.go's.

package profile

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
)

// entryTrampolines is the mechanism of function entries in-process: a
// jump at each entry to a trampoline that counts into the thread's block
// of counters (counters), or records the entry into its ring; full jumps,
// short jumps with a hop in the padding, or punned jumps. An entry that
// takes none is handed to the breakpoints at once (plantEntry).
type entryTrampolines struct {
	env entryEnv
	// fellBack lists the entries of the module being planted that keep a
	// breakpoint, with the reason, and patched counts the others
	// (reportFallBacks).
	fellBack []fallBack
	patched  int
	// depths are the call depth's code of each form asked for: the same
	// for every entry, and 0.5 s to write again for each of 100,000.
	depths map[instr.Depth]depthCode
}

// depthCode is DepthCode's answer.
type depthCode struct {
	code instr.DepthCode
	ok   bool
}

// depthCode returns the architecture's DepthCode for d, written once.
// Its slices are shared: read, never written.
func (et *entryTrampolines) depthCode(d instr.Depth) (instr.DepthCode, bool) {
	if c, ok := et.depths[d]; ok {
		return c.code, c.ok
	}
	if et.depths == nil {
		et.depths = map[instr.Depth]depthCode{}
	}
	code, ok := et.env.arch.DepthCode(d)
	et.depths[d] = depthCode{code, ok}
	return code, ok
}

// entryEnv is what the entries' trampolines read and call of the run:
// the plan, the architecture, the planting engine (the layout of a
// module's patches, where their trampolines go, the scan's landings),
// the counters whose code the trampolines run, the timer whose code
// they run when timing in-process (both set where the run has them, the
// timer nil once the rings gave up: tracer.choose), and the breakpoints'
// planting of an entry no jump fits (breakpoints.plantEntry).
type entryEnv struct {
	plan       *datafile.Plan
	arch       instr.Arch
	plant      *planter
	counters   *counters
	timer      timer
	breakpoint func(p *planting, item int, once bool) error
	// leaves is set where nothing runs at a function's returns (no
	// timer, no books, no exits' mechanism): a leaf's trampoline may
	// then run it to its return (instr.Layout.Leaves).
	leaves bool
}

// newEntryTrampolines returns the entries' trampolines of a run of plan
// on arch, planted through plant, handing the entries no jump fits to
// breakpoint; the counters and the rings are the run's parts, set where
// they are chosen (tracer.choose).
func newEntryTrampolines(plan *datafile.Plan, arch instr.Arch, plant *planter, breakpoint func(p *planting, item int, once bool) error) *entryTrampolines {
	return &entryTrampolines{env: entryEnv{plan: plan, arch: arch, plant: plant, breakpoint: breakpoint}}
}

// plant plants the entries of planting p: each a jump to its trampoline,
// which counts (or records) and runs the instruction the jump replaced
// (the layout's rule: planted from the highest down); where no jump
// fits, a breakpoint (plantEntry).
func (et *entryTrampolines) plant(p *planting) error {
	if p.lines {
		return nil
	}
	env := &et.env
	order := slices.Clone(p.entries)
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(env.plan.Funcs[b].Entry, env.plan.Funcs[a].Entry) })
	sites := make([]uint64, len(order))
	for n, item := range order {
		sites[len(order)-1-n] = env.plan.Funcs[item].Entry + p.bias
	}
	if p.area.mapped() {
		env.plant.layout(p).Sites(sites)
	}
	for _, item := range order {
		pl, err := et.planEntry(p, item)
		if err == nil {
			env.plant.putPlanned(p, pl, func(x *instr.Planned) []region { return et.regions(p, item, pl, x) }, 0)
			et.patched++
			continue
		}
		et.fellBack = append(et.fellBack, fallBack{item: item, err: err})
		if p.lay != nil {
			p.lay.Unstable(env.plan.Funcs[item].Entry+p.bias, len(env.arch.Breakpoint()))
		}
		// (Coverage counts every call of a function whose entry keeps a
		// breakpoint in a run in-process, but a Go function's on arm64
		// without LSE: a Go program's entries may all be, and they are
		// taken out at their first hit, as coverage by breakpoints does.)
		once := env.plan.Method.IsCoverage() && errors.Is(err, errGoArea)
		if err := env.breakpoint(p, item, once); err != nil {
			return err
		}
	}
	p.entries = nil
	return nil
}

// planEntry plans the patch of item's entry in planting p's layout, or
// says why it keeps a breakpoint.
func (et *entryTrampolines) planEntry(p *planting, item int) (*instr.Planned, error) {
	env := &et.env
	f := &env.plan.Funcs[item]
	lo, hi := f.Low+p.bias, f.High+p.bias
	switch {
	case f.Low >= f.High || f.Entry < f.Low || f.Entry >= f.High:
		return nil, errNoExtent
	case !p.area.mapped():
		return nil, errNoRoom
	case p.text.b == nil || lo < p.text.start || hi > p.text.start+uint64(len(p.text.b)):
		return nil, errNoCode
	}
	if env.timer != nil {
		if err := env.timer.timed(f); err != nil {
			return nil, err
		}
	} else if c := env.counters; c != nil && c.layout.Kind == instr.CountInArea && f.Frame != datafile.FrameSP && !c.threadPointers() {
		return nil, errGoArea
	}
	if et.entryScratch(item) && slices.Contains(instr.ScanCode(env.arch, p.text.b[lo-p.text.start:hi-p.text.start], lo).Jumps, f.Entry+p.bias) {
		return nil, errLoopEntry
	}
	lay := env.plant.layout(p)
	lay.Evict = et.exitBuild(p, item, lo, hi)
	lay.Leaves = env.leaves
	defer func() { lay.Leaves = false }()
	build := func(pt *instr.Patch, at uint64) (instr.Trampoline, error) {
		tr, err := et.entryTrampoline(pt, at, f, item, lo, hi)
		if err == nil && len(tr.Code) > trampCell {
			err = fmt.Errorf("trampoline of %d bytes: %w", len(tr.Code), instr.ErrNotRelocatable)
		}
		return tr, err
	}
	entry := f.Entry + p.bias
	pl, err := lay.Plan(entry, build)
	if err != nil && lo < entry && !env.plant.scan.landings.has(entry) {
		// A Go function's entry, after its stack check: planned at its
		// start instead, carrying the check, the count after it (where
		// nothing jumps to the entry but through the start).
		if pl2, err2 := lay.PlanThrough(lo, entry, build); err2 == nil {
			return pl2, nil
		}
	}
	return pl, err
}

// exitBuild returns, timing in-process, the builder of the trampoline of
// an exit of item (its code [lo, hi)) moved out for its entry's patch:
// the exit's record, then the exit. Nil otherwise, or for an
// instruction that is no exit (then the instruction alone, relocated).
func (et *entryTrampolines) exitBuild(p *planting, item int, lo, hi uint64) func(uint64) instr.Build {
	env := &et.env
	if env.timer == nil {
		return nil
	}
	return func(addr uint64) instr.Build {
		if !slices.ContainsFunc(p.exits[item], func(e instr.Exit) bool { return e.PC == addr }) {
			return nil
		}
		exit := env.timer.eventCode(item, exitEvent)
		return func(pt *instr.Patch, at uint64) (instr.Trampoline, error) {
			return instr.ExitTrampoline(env.arch, pt, at, exit.code)
		}
	}
}

// regions returns the regions of the trampoline of x, item's entry's
// patch pl or an instruction it moved out: an exit's, its record.
func (et *entryTrampolines) regions(p *planting, item int, pl, x *instr.Planned) []region {
	env := &et.env
	f := &env.plan.Funcs[item]
	if x == pl {
		return et.entryRegions(f, item, &x.Tramp, x.At, preludeAt(&x.Patch, &x.Tramp, x.At, f.Entry+p.bias))
	}
	if env.timer == nil || !x.Tramp.Exit {
		return nil
	}
	exit := env.timer.eventCode(item, exitEvent)
	return []region{exit.at(x.Tramp.At)}
}

// stop claims no stop: a trampoline's breakpoints are its timer's.
func (et *entryTrampolines) stop(*thread, uint64) (bool, error) { return false, nil }

// forget has nothing of its own to drop: the trampolines are the
// counters' (counters.forget).
func (et *entryTrampolines) forget(lo, hi uint64) {}

// collect has nothing of its own: the counts are in the counters'
// blocks (counters.ended).
func (et *entryTrampolines) collect(*Result) {}
