package profile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/elfid"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/procmaps"
)

// plantAll instruments the program at its exec stop: the counters are
// mapped, the program's own functions or lines are planted, and when the
// plan has shared libraries, the dynamic linker's rendezvous is watched so
// that each is planted when it is mapped (modules.go).
func (t *tracer) plantAll() error {
	maps, err := t.readMaps()
	if err != nil {
		return err
	}
	if err := t.startCounters(t.chooseMechanism()); err != nil {
		return err
	}
	t.choose()
	t.told.note(mechanismsEvent{})
	base := filepath.Base(t.cfg.Path)
	for mi := range t.plan.Modules {
		if t.plan.Modules[mi].Name != base {
			t.parts.modules.libs = append(t.parts.modules.libs, mi)
			continue
		}
		if _, err := os.Stat(t.cfg.Path); err != nil {
			return prf.CannotOpen(t.cfg.Path, err)
		}
		in, ok := t.parts.modules.programInstance(maps)
		if !ok {
			return prf.NotMapped(t.cfg.Path, t.pid)
		}
		if err := t.plantLoaded(mi, t.cfg.Path, in, maps); err != nil {
			return err
		}
	}
	if len(t.parts.modules.libs) > 0 {
		return t.parts.modules.watchLibraries(maps)
	}
	return nil
}

// plantLoaded plants module mi, the file at path mapped as in, in a
// process with the given maps. Its code is decoded first (scanCode):
// nothing is planted where that decoding finds no instruction boundary.
// Function sampling that counts no call (Plan.Uncounted) plants nothing:
// the module is only placed for the sampler.
func (t *tracer) plantLoaded(mi int, path string, in procmaps.Instance, maps []procmaps.Mapping) error {
	m := &t.plan.Modules[mi]
	bias := uint64(0)
	if m.PIE {
		bias = elfid.LoadBias(in.First.Start, in.First.Offset, m.LinkBase)
	}
	if !t.plan.Uncounted {
		t.parts.plant.scanCode(maps, in, mi, path, bias)
		defer func() { t.parts.plant.scan.code = nil }()
		if err := t.plantModule(mi, bias, in, maps); err != nil {
			return err
		}
	}
	if t.parts.sampling != nil {
		t.parts.sampling.planted(mi, bias, in)
	}
	t.parts.reportFallBacks(t.cfg, t.plan)
	return nil
}

// startCounters maps the counters into the program, when entries are
// counted in-process (kind is how, 0 when they are not), and gives the main thread its block; when timing
// in-process, it writes the calibration blocks of the records' cost. It
// runs before any module is planted, so that every module, the program's
// or a library loaded later, finds them set up.
func (t *tracer) startCounters(kind instr.CountKind) error {
	if kind == 0 {
		if t.parts.timer() != nil {
			t.noRings()
		}
		return nil
	}
	// The name of the counters' memory, for the program to create it
	// with, goes in a page of its own.
	items := t.plan.NumItems()
	var lines *lineTrampolines
	if !t.plan.Method.IsFunction() {
		lines = newLineTrampolines(t)
		items = lines.counters()
	}
	own, err := t.parts.plant.mmap(0, t.parts.plant.pageSize)
	if err == nil {
		t.parts.counters, err = newCounters(t.counterEnv(), t.parts.calls, t.parts.plant.pageSize, kind, items, own)
	}
	if err != nil {
		t.cfg.Warn(prf.NoInProcess(err))
		if t.parts.timer() != nil {
			t.noRings()
		}
		return nil
	}
	if lines != nil {
		t.parts.lines = lines
		site := t.parts.counters.layout.Site(0)
		site.Save, site.Cover = lines.save, lines.cover
		code, _ := t.arch.LineCode(kind, site)
		t.parts.counters.saves = len(code.Rollback) > 0
	} else {
		t.parts.entries = newEntryTrampolines(t.plan, t.arch, t.parts.plant, t.parts.bp.plantEntry)
	}
	if err := t.parts.counters.giveBlock(t.pid, false); err != nil {
		return fmt.Errorf("give the main thread its counters: %w", err)
	}
	var with, without []byte
	switch {
	case t.parts.ledgers != nil:
		if err := t.parts.ledgers.mapCloser(t.parts.plant.mmap, t.parts.plant.pageSize, t.mem.WriteMem); err != nil {
			return err
		}
		with, without = t.parts.ledgers.calibrationBlocks()
	case t.parts.rings != nil:
		with, without = calibrationBlocks(t.arch, t.parts.counters.layout.Ring())
	default:
		return nil
	}
	size := (uint64(len(with)+len(without)) + 16 + t.parts.plant.pageSize - 1) &^ (t.parts.plant.pageSize - 1)
	at, err := t.parts.plant.mmap(0, size)
	if err != nil {
		return fmt.Errorf("map the calibration blocks: %w", err)
	}
	for i, block := range [][]byte{with, without} {
		t.parts.counters.calibration[i] = at
		if err := t.mem.WriteMem(at, block); err != nil {
			return fmt.Errorf("write the calibration blocks: %w", err)
		}
		at += (uint64(len(block)) + 15) &^ 15
	}
	return nil
}

// chooseMechanism decides how entries are counted: in-process where the
// CPU allows it and --breakpoints was not given (it returns how the
// trampolines count), else breakpoints (it returns 0). Coverage
// with breakpoints removes each at its first hit; in-process, coverage
// counts every call as counting does (its records carry the real counts,
// as the original's did), breakpoints that stand in for a trampoline
// included. Sampling that counts no call counts nothing (0, and nothing
// is planted).
func (t *tracer) chooseMechanism() instr.CountKind {
	var count instr.CountKind
	if t.plan.Uncounted {
		return 0
	}
	if !t.cfg.Breakpoints && t.parts.books == nil {
		hwcap, err := t.proc.auxValue(t.pid, hwcapEntry)
		if err == nil {
			count, err = t.arch.Counting(hwcap)
		}
		if err != nil {
			t.cfg.Warn(prf.NoInProcess(err))
			count = 0
		}
	}
	if t.parts.books != nil {
		// Timing, /SF and /AT: the books are kept by PROFILE, from the
		// records of the threads' rings where the architecture has them
		// (ring.go), else from breakpoints at every entry and exit.
		// The rings are in the threads' blocks (amd64), or found through
		// the stack table (arm64, which needs no atomic add for them).
		count = 0
		if !t.cfg.Breakpoints && ledgerPossible(t) {
			// The books kept in the program (ledger.go), in the
			// threads' blocks (amd64), or in their areas of the stack
			// table (arm64, which needs no atomic add for them either).
			hwcap, err := t.proc.auxValue(t.pid, hwcapEntry)
			if err == nil {
				kind, err := t.arch.Counting(hwcap)
				_, byTable := t.arch.DepthCode(instr.Depth{Slots: depthSlots, Table: 1})
				switch {
				case err == nil && kind == instr.CountPerThread:
				case byTable:
					kind = instr.CountShared
				default:
					kind = 0
				}
				if kind != 0 {
					l := newLedgers(t)
					count, t.parts.ledgers, t.parts.exits = kind, l, newExitPatches(t, l)
				}
			}
		}
		if r := newRings(t); count == 0 && !t.cfg.Breakpoints && r.ringPossible() {
			hwcap, err := t.proc.auxValue(t.pid, hwcapEntry)
			if err == nil {
				kind, err := t.arch.Counting(hwcap)
				_, byTable := t.arch.DepthCode(instr.Depth{Slots: depthSlots, Table: 1})
				switch {
				case err == nil && kind == instr.CountPerThread:
					count, t.parts.rings, t.parts.exits = kind, r, newExitPatches(t, r)
				case byTable:
					count, t.parts.rings, t.parts.exits = instr.CountShared, r, newExitPatches(t, r)
				}
			}
		}
		if count == 0 {
			warnBooks(t.cfg.Warn, t.plan, t.parts.trace != nil, t.timed)
		}
	}
	// (Line coverage's breakpoints, where a line site takes no jump, are
	// removed at their first hit too.)
	t.parts.bp.removeAtHit = t.plan.Method.IsCoverage() && (count == 0 || !t.plan.Method.IsFunction()) && t.parts.books == nil
	return count
}

// warnBooks warns that the books are kept with breakpoints.
func warnBooks(warn func(*prf.Diagnostic), plan *datafile.Plan, traced, timed bool) {
	what := "attribution (/AT)"
	switch {
	case plan.Method.IsTiming():
		what = "function timing"
	case traced:
		what = "the execution trace (/TRACE)"
	case plan.StartFunc != "":
		what = "the start function (/SF)"
	}
	warn(prf.BooksWithBreakpoints(what, timed))
}

// noRings gives up timing in-process (no room for trampolines, no shared
// memory): the books are kept with breakpoints.
func (t *tracer) noRings() {
	t.parts.rings, t.parts.ledgers, t.parts.exits = nil, nil, nil
	t.choose()
	warnBooks(t.cfg.Warn, t.plan, t.parts.trace != nil, t.timed)
}

// reportFallBacks warns about the entries, and the exits of timed
// functions, of the module just planted that keep a breakpoint: how many
// and why, and with --verbose each of them.
func (p *parts) reportFallBacks(cfg Config, plan *datafile.Plan) {
	if et := p.entries; et != nil && len(et.fellBack) > 0 {
		why := reasons(cfg, plan, et.fellBack, func(fb fallBack, f *datafile.Func, file string) *prf.Diagnostic {
			return prf.EntryNotPatched(f.Name, file, fb.err)
		})
		cfg.Warn(prf.BreakpointEntries(len(et.fellBack), len(et.fellBack)+et.patched, why))
	}
	if x := p.exits; x != nil && len(x.left) > 0 {
		why := reasons(cfg, plan, x.left, func(fb fallBack, f *datafile.Func, file string) *prf.Diagnostic {
			return prf.ExitNotPatched(f.Name, file, fb.pc, fb.err)
		})
		cfg.Warn(prf.BreakpointExits(len(x.left), len(x.left)+x.patched, why))
	}
	if p.lines != nil {
		p.lines.report()
	}
	// (A library planted later is reported on its own.)
	if p.entries != nil {
		p.entries.fellBack, p.entries.patched = nil, 0
	}
	if p.exits != nil {
		p.exits.left, p.exits.patched = nil, 0
	}
}

// reasons counts the sites of list by reason, in a few words each, and
// with --verbose warns about each with one.
func reasons(cfg Config, plan *datafile.Plan, list []fallBack, one func(fallBack, *datafile.Func, string) *prf.Diagnostic) string {
	return byReason(cfg, len(list), func(n int) error { return list[n].err }, func(n int) *prf.Diagnostic {
		f := &plan.Funcs[list[n].item]
		return one(list[n], f, plan.Modules[f.Module].Name)
	})
}

// byReason counts n sites by the reason of each (errOf), in a few words
// each, and with --verbose warns about each (one).
func byReason(cfg Config, n int, errOf func(int) error, one func(int) *prf.Diagnostic) string {
	byReason := map[string]int{}
	var reasons []string
	for i := range n {
		r := fallBackReason(errOf(i))
		if byReason[r] == 0 {
			reasons = append(reasons, r)
		}
		byReason[r]++
		if cfg.Verbose {
			cfg.Warn(one(i))
		}
	}
	var out []string
	for _, r := range reasons {
		out = append(out, fmt.Sprintf("%s: %d", r, byReason[r]))
	}
	return strings.Join(out, ", ")
}

// readMaps reads the program's memory map, opened at the start.
func (t *tracer) readMaps() ([]procmaps.Mapping, error) {
	if t.maps == nil {
		return nil, errors.New("read memory map: not open") // (an attach that could not open it lets go without)
	}
	data, err := t.maps.Read()
	if err != nil {
		return nil, fmt.Errorf("read memory map: %w", err)
	}
	return procmaps.Parse(data)
}

// plantModule plants module mi, loaded with bias, mapped as in, in a
// process with the given maps: each mechanism in turn plants what it
// takes (plant) into one planting, written in bulk at the end
// (writePlanting): the area, then the jumps, then the breakpoints.
func (t *tracer) plantModule(mi int, bias uint64, in procmaps.Instance, maps []procmaps.Mapping) error {
	// (The areas and pages are mapped in one borrowing of the thread,
	// put back before anything is written.)
	var p *planting
	if err := t.parts.calls.withCalls(t.parts.calls.setupThread(), func() error {
		if p = t.newPlanting(mi, bias, in, maps); p == nil || p.err != nil {
			return nil
		}
		p.counters = t.parts.counters
		defer debug.SetGCPercent(debug.SetGCPercent(plantingGC(p)))
		for _, m := range t.parts.mechs {
			if err := m.plant(p); err != nil {
				return err
			}
		}
		return nil
	}); err != nil || p == nil {
		return err
	}
	if p.err != nil {
		return p.err
	}
	return t.writePlanting(p)
}

// newPlanting prepares the planting of module mi, loaded with bias,
// mapped as in: for a function profile, the functions whose entries the
// module's decoding accepts (checkEntry), their exits when timing, their
// code, and one area mapped next to the module, room for trampCell bytes
// per entry (a trampoline where the entry can be patched in-process,
// else the out-of-line slot of its breakpoint) and the exits' cells. It
// returns nil when there is nothing to plant.
func (t *tracer) newPlanting(mi int, bias uint64, in procmaps.Instance, maps []procmaps.Mapping) *planting {
	if !t.plan.Method.IsFunction() {
		return t.parts.plant.newLinePlanting(mi, bias, in, maps, t.counted.hits, t.counted.ways, t.parts.lines)
	}
	items := t.parts.plant.plantable(mi, bias)
	if len(items) == 0 {
		return nil
	}
	var exits map[int][]instr.Exit
	nExits := 0
	if t.timed {
		exits, nExits = findExits(t.arch, t.mem, t.plan.Funcs, items, bias)
		nExits -= t.parts.plant.checkExits(exits)
	}
	area := t.parts.plant.areaNear(in, maps, t.parts.plant.areaCells(items, bias, nExits, t.parts.timer() != nil))
	if t.parts.counters == nil && t.parts.timer() != nil {
		t.noRings()
	}
	var text moduleText
	if t.parts.counters != nil {
		text = t.parts.plant.readText(items, bias)
	}
	return &planting{mi: mi, bias: bias, in: in, maps: maps, items: items, text: text, area: area,
		entries: t.parts.plant.uniqueEntries(items, bias), exits: exits}
}

// writePlanting writes what planting p built into the program: the
// area's code, then the jumps with the code between them (planter.write),
// then the breakpoints.
func (t *tracer) writePlanting(p *planting) error {
	t.told.note(plantingEvent{p})
	jumps, err := t.parts.plant.write(p)
	if err != nil {
		return err
	}
	t.parts.watch.wrote(p.mi, p.bias, jumps)
	if err := t.parts.bp.write(); err != nil {
		return err
	}
	if t.parts.counters != nil {
		t.parts.counters.sortTramps()
	}
	return nil
}

// unplant has every part forget what it planted in [lo, hi), an instance
// unmapped, beside which PROFILE mapped areas (modules.forget).
func (t *tracer) unplant(lo, hi uint64, areas [][2]uint64) {
	if t.parts.sampling != nil {
		t.parts.sampling.forget(lo, hi, areas)
	}
	in := func(a uint64) bool { return a >= lo && a < hi }
	for _, m := range t.parts.mechs {
		m.forget(lo, hi)
	}
	if t.parts.counters != nil {
		t.parts.counters.forget(lo, hi)
	}
	t.parts.watch.written = slices.DeleteFunc(t.parts.watch.written, func(w written) bool { return in(w.addr) })
	if t.attach != nil && t.attach.undo != nil {
		t.attach.undo.forget(lo, hi)
	}
}

// plantingGC is the collector's percentage while planting p. Planting
// allocates a little for every site, most of it live until the end, and
// more that is not (the layout's tries): for up to bigPlanting sites the
// collector is held back, not off (at 1000 % a program of 120,000 lines
// took 330 MB at its peak, at 300 % 230 MB, in the same time); past it,
// where the live heap is hundreds of megabytes, it runs at Go's default
// (1,100,000 lines: 1.75 GB at 300 %, 1.2 GB at 100 %; 100,000 functions:
// 620 MB and 440 MB, in the same time, 3 runs each).
func plantingGC(p *planting) int {
	n := len(p.entries)
	if p.lineSites != nil {
		n += len(p.lineSites.addrs)
	}
	if n > bigPlanting {
		return 100
	}
	return 300
}

// bigPlanting is the most sites a planting holds the collector back for.
const bigPlanting = 50_000
