package profile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/elfid"
	"github.com/sourceprofiler/sprof/internal/prf"
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
	t.explain.mechanism()
	base := filepath.Base(t.cfg.Path)
	for mi := range t.plan.Modules {
		if t.plan.Modules[mi].Name != base {
			t.libs = append(t.libs, mi)
			continue
		}
		if _, err := os.Stat(t.cfg.Path); err != nil {
			return prf.CannotOpen(t.cfg.Path, err)
		}
		in, ok := t.programInstance(maps)
		if !ok {
			return prf.NotMapped(t.cfg.Path, t.pid)
		}
		if err := t.plantLoaded(mi, t.cfg.Path, in, maps); err != nil {
			return err
		}
	}
	if len(t.libs) > 0 {
		return t.watchLibraries(maps)
	}
	return nil
}

// programInstance finds the program in the maps of its exec stop: the
// file the kernel mapped, which is the end of the chain of symbolic
// links the program's path may be (fileMapping).
func (t *tracer) programInstance(maps []mapping) (instance, bool) {
	first, ok := fileMapping(maps, t.cfg.Path)
	if !ok {
		return instance{}, false
	}
	for _, in := range instances(maps, first, elfid.ReadLoadSpan(t.cfg.Path, t.pageSize)) {
		if in.first.Start == first.Start {
			return in, true
		}
	}
	return instance{}, false
}

// plantLoaded plants module mi, the file at path mapped as in, in a
// process with the given maps. Its code is decoded first (scanCode):
// nothing is planted where that decoding finds no instruction boundary.
func (t *tracer) plantLoaded(mi int, path string, in instance, maps []mapping) error {
	m := &t.plan.Modules[mi]
	bias := uint64(0)
	if m.PIE {
		bias = elfid.LoadBias(in.first.Start, in.first.Offset, m.LinkBase)
	}
	t.scanCode(maps, in, mi, path, bias)
	defer func() { t.scan.code = nil }()
	if err := t.plantModule(mi, bias, in, maps); err != nil {
		return err
	}
	if t.sampling != nil {
		t.sampling.planted(mi, bias, in)
	}
	t.reportFallBacks()
	return nil
}

// startCounters maps the counters into the program, when entries are
// counted in-process (kind is how, 0 when they are not), and gives the main thread its block; when timing
// in-process, it writes the calibration blocks of the records' cost. It
// runs before any module is planted, so that every module, the program's
// or a library loaded later, finds them set up.
func (t *tracer) startCounters(kind instr.CountKind) error {
	if kind == 0 {
		if t.rings != nil {
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
	own, err := t.mmap(0, t.pageSize)
	if err == nil {
		t.counters, err = t.newCounters(kind, items, own)
	}
	if err != nil {
		t.cfg.Warn(prf.NoInProcess(err))
		if t.rings != nil {
			t.noRings()
		}
		return nil
	}
	if lines != nil {
		t.lines = lines
		code, _ := t.arch.LineCode(kind, instr.LineSite{Counter: t.counters.layout.counterRef(0), Save: lines.save, Cover: lines.cover})
		t.counters.saves = len(code.Rollback) > 0
	} else {
		t.entries = &entryTrampolines{t: t}
	}
	if err := t.counters.giveBlock(t.pid, false); err != nil {
		return fmt.Errorf("give the main thread its counters: %w", err)
	}
	if t.rings == nil {
		return nil
	}
	with, without := calibrationBlocks(t.arch, t.counters.layout.ring())
	size := (uint64(len(with)+len(without)) + 16 + t.pageSize - 1) &^ (t.pageSize - 1)
	at, err := t.mmap(0, size)
	if err != nil {
		return fmt.Errorf("map the calibration blocks: %w", err)
	}
	for i, block := range [][]byte{with, without} {
		t.counters.calibration[i] = at
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
// included.
func (t *tracer) chooseMechanism() instr.CountKind {
	var count instr.CountKind
	if !t.cfg.Breakpoints && t.books == nil {
		hwcap, err := t.proc.auxValue(t.pid, hwcapEntry)
		if err == nil {
			count, err = t.arch.Counting(hwcap)
		}
		if err != nil {
			t.cfg.Warn(prf.NoInProcess(err))
			count = 0
		}
	}
	if t.books != nil {
		// Timing, /SF and /AT: the books are kept by PROFILE, from the
		// records of the threads' rings where the architecture has them
		// (ring.go), else from breakpoints at every entry and exit.
		// The rings are in the threads' blocks (amd64), or found through
		// the stack table (arm64, which needs no atomic add for them).
		count = 0
		if r := newRings(t); !t.cfg.Breakpoints && r.ringPossible() {
			hwcap, err := t.proc.auxValue(t.pid, hwcapEntry)
			if err == nil {
				kind, err := t.arch.Counting(hwcap)
				_, byTable := t.arch.DepthCode(instr.Depth{Slots: depthSlots, Table: 1})
				switch {
				case err == nil && kind == instr.CountPerThread:
					count, t.rings, t.exits = kind, r, newExitPatches(t, r)
				case byTable:
					count, t.rings, t.exits = instr.CountShared, r, newExitPatches(t, r)
				}
			}
		}
		if t.rings == nil {
			t.warnBooks()
		}
	}
	// (Line coverage's breakpoints, where a line site takes no jump, are
	// removed at their first hit too.)
	t.bp.removeAtHit = t.plan.Method.IsCoverage() && (count == 0 || !t.plan.Method.IsFunction()) && t.books == nil
	return count
}

// warnBooks warns that the books are kept with breakpoints.
func (t *tracer) warnBooks() {
	what := "attribution (/AT)"
	switch {
	case t.plan.Method.IsTiming():
		what = "function timing"
	case t.trace != nil:
		what = "the execution trace (/TRACE)"
	case t.plan.StartFunc != "":
		what = "the start function (/SF)"
	}
	t.cfg.Warn(prf.BooksWithBreakpoints(what, t.timed))
}

// noRings gives up timing in-process (no room for trampolines, no shared
// memory): the books are kept with breakpoints.
func (t *tracer) noRings() {
	t.rings, t.exits = nil, nil
	t.choose()
	t.warnBooks()
}

// reportFallBacks warns about the entries, and the exits of timed
// functions, of the module just planted that keep a breakpoint: how many
// and why, and with --verbose each of them.
func (t *tracer) reportFallBacks() {
	if et := t.entries; et != nil && len(et.fellBack) > 0 {
		reasons := t.reasons(et.fellBack, func(fb fallBack, f *datafile.Func, file string) *prf.Diagnostic {
			return prf.EntryNotPatched(f.Name, file, fb.err)
		})
		t.cfg.Warn(prf.BreakpointEntries(len(et.fellBack), len(et.fellBack)+et.patched, reasons))
	}
	if x := t.exits; x != nil && len(x.left) > 0 {
		reasons := t.reasons(x.left, func(fb fallBack, f *datafile.Func, file string) *prf.Diagnostic {
			return prf.ExitNotPatched(f.Name, file, fb.pc, fb.err)
		})
		t.cfg.Warn(prf.BreakpointExits(len(x.left), len(x.left)+x.patched, reasons))
	}
	if t.lines != nil {
		t.lines.report()
	}
	// (A library planted later is reported on its own.)
	if t.entries != nil {
		t.entries.fellBack, t.entries.patched = nil, 0
	}
	if t.exits != nil {
		t.exits.left, t.exits.patched = nil, 0
	}
}

// reasons counts the sites of list by reason, in a few words each, and
// with --verbose warns about each with one.
func (t *tracer) reasons(list []fallBack, one func(fallBack, *datafile.Func, string) *prf.Diagnostic) string {
	return t.byReason(len(list), func(n int) error { return list[n].err }, func(n int) *prf.Diagnostic {
		f := &t.plan.Funcs[list[n].item]
		return one(list[n], f, t.plan.Modules[f.Module].Name)
	})
}

// byReason counts n sites by the reason of each (errOf), in a few words
// each, and with --verbose warns about each (one).
func (t *tracer) byReason(n int, errOf func(int) error, one func(int) *prf.Diagnostic) string {
	byReason := map[string]int{}
	var reasons []string
	for i := range n {
		r := fallBackReason(errOf(i))
		if byReason[r] == 0 {
			reasons = append(reasons, r)
		}
		byReason[r]++
		if t.cfg.Verbose {
			t.cfg.Warn(one(i))
		}
	}
	var out []string
	for _, r := range reasons {
		out = append(out, fmt.Sprintf("%s: %d", r, byReason[r]))
	}
	return strings.Join(out, ", ")
}

// readMaps reads the program's memory map, opened at the start.
func (t *tracer) readMaps() ([]mapping, error) {
	if t.maps == nil {
		return nil, errors.New("read memory map: not open") // (an attach that could not open it lets go without)
	}
	data, err := t.maps.Read()
	if err != nil {
		return nil, fmt.Errorf("read memory map: %w", err)
	}
	return parseMaps(data)
}

// checkEntry returns nil when f's entry, loaded with bias, may be
// planted: where the decoding of its module's code (t.scan.code) has an
// instruction boundary, inside no instruction of another function, and,
// when the plan gives its extent, its code decodes from its start to its
// end. Else why not: the plan does not describe the code the program has
// (a plan written by hand, or for another build).
func (t *tracer) checkEntry(f *datafile.Func, bias uint64) error {
	entry := f.Entry + bias
	cm := t.scan.code.at(entry)
	if cm == nil {
		return fmt.Errorf("its entry %#x: not in the module's code: %w", f.Entry, instr.ErrNotBoundary)
	}
	if lo, hi := f.Low+bias, f.High+bias; f.Low < f.High && cm.Contains(lo) && cm.Contains(hi-1) {
		if err := cm.Decoded(lo, hi); err != nil {
			return fmt.Errorf("[%#x, %#x): %w", f.Low, f.High, err)
		}
	}
	if err := cm.Boundary(entry); err != nil {
		return fmt.Errorf("its entry %#x: %w", f.Entry, err)
	}
	return nil
}

// checkExits takes out of exits those whose instruction the decoding of
// the module's code does not begin where FindExits found it (never, but
// in a plan that does not describe the code), with a warning, and
// returns how many.
func (t *tracer) checkExits(exits map[int][]instr.Exit) int {
	n := 0
	for item, es := range exits {
		f := &t.plan.Funcs[item]
		exits[item] = slices.DeleteFunc(es, func(e instr.Exit) bool {
			err := t.scan.code.boundary(e.PC)
			if err != nil {
				t.cfg.Warn(prf.SiteRefused("exit", e.PC, f.Name, t.plan.Modules[f.Module].Name, err))
				n++
			}
			return err != nil
		})
	}
	return n
}
