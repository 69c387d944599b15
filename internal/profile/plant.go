package profile

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/elfid"
	"github.com/sourceprofiler/sprof/internal/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/profile/ptrace"
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
	t.chooseMechanism()
	if err := t.startInproc(); err != nil {
		return err
	}
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
	defer func() { t.code = nil }()
	if !t.plan.Method.IsFunction() {
		return t.plantLines(mi, bias, in, maps)
	}
	if err := t.plantModule(mi, bias, in, maps); err != nil {
		return err
	}
	t.reportFallBacks()
	return nil
}

// startInproc maps the counters into the program, when entries are
// counted in-process, and gives the main thread its block; when timing
// in-process, it writes the calibration blocks of the records' cost. It
// runs before any module is planted, so that every module, the program's
// or a library loaded later, finds them set up.
func (t *tracer) startInproc() error {
	if t.countKind == 0 {
		if t.timeInProcess {
			t.noRings()
		}
		return nil
	}
	// The counters' file name, for the program to open, goes in a page
	// of its own.
	own, err := t.mmap(0, t.pageSize)
	if err == nil {
		t.inproc, err = t.newInproc(t.countKind, t.plan.NumItems(), own)
	}
	if err != nil {
		t.cfg.Warn(prf.NoInProcess(err))
		t.countKind = 0
		if t.timeInProcess {
			t.noRings()
		}
		return nil
	}
	if err := t.giveBlock(t.pid, false); err != nil {
		return fmt.Errorf("give the main thread its counters: %w", err)
	}
	if !t.timeInProcess {
		return nil
	}
	with, without := t.calibrationBlocks(t.inproc.ring())
	size := (uint64(len(with)+len(without)) + 16 + t.pageSize - 1) &^ (t.pageSize - 1)
	at, err := t.mmap(0, size)
	if err != nil {
		return fmt.Errorf("map the calibration blocks: %w", err)
	}
	for i, block := range [][]byte{with, without} {
		t.inproc.calibration[i] = at
		if err := t.mem.WriteMem(at, block); err != nil {
			return fmt.Errorf("write the calibration blocks: %w", err)
		}
		at += (uint64(len(block)) + 15) &^ 15
	}
	return nil
}

// chooseMechanism decides how entries are counted: in-process where the
// CPU allows it and --breakpoints was not given, else breakpoints. Coverage
// with breakpoints removes each at its first hit; in-process, coverage
// counts every call as counting does (its records carry the real counts,
// as the original's did), breakpoints that stand in for a trampoline
// included.
func (t *tracer) chooseMechanism() {
	if !t.cfg.Breakpoints && t.books == nil && t.plan.Method.IsFunction() {
		hwcap, err := ptrace.AuxValue(t.pid, hwcapEntry)
		if err == nil {
			t.countKind, err = t.arch.Counting(hwcap)
		}
		if err != nil {
			t.cfg.Warn(prf.NoInProcess(err))
			t.countKind = 0
		}
	}
	if t.books != nil {
		// Timing, /SF and /AT: the books are kept by PROFILE, from the
		// records of the threads' rings where the architecture has them
		// (ring.go), else from breakpoints at every entry and exit.
		// The rings are in the threads' blocks (amd64), or found through
		// the stack table (arm64, which needs no atomic add for them).
		t.countKind = 0
		if !t.cfg.Breakpoints && t.ringPossible() {
			hwcap, err := ptrace.AuxValue(t.pid, hwcapEntry)
			if err == nil {
				kind, err := t.arch.Counting(hwcap)
				_, byTable := t.arch.DepthCode(instr.Depth{Slots: depthSlots, Table: 1})
				switch {
				case err == nil && kind == instr.CountPerThread:
					t.countKind, t.timeInProcess = kind, true
				case byTable:
					t.countKind, t.timeInProcess = instr.CountShared, true
				}
			}
		}
		if !t.timeInProcess {
			t.warnBooks()
		}
	}
	t.coverage = t.plan.Method.IsCoverage() && t.countKind == 0 && t.books == nil
}

// warnBooks warns that the books are kept with breakpoints.
func (t *tracer) warnBooks() {
	what := "attribution (/AT)"
	switch {
	case t.plan.Method.IsTiming():
		what = "function timing"
	case t.plan.StartFunc != "":
		what = "the start function (/SF)"
	}
	t.cfg.Warn(prf.BooksWithBreakpoints(what, t.plan.Method.IsTiming()))
}

// noRings gives up timing in-process (no room for trampolines, no shared
// memory): the books are kept with breakpoints.
func (t *tracer) noRings() {
	t.timeInProcess, t.countKind = false, 0
	t.warnBooks()
}

// reportFallBacks warns about the entries, and the exits of timed
// functions, of the module just planted that keep a breakpoint: how many
// and why, and with --verbose each of them.
func (t *tracer) reportFallBacks() {
	ip := t.inproc
	if ip == nil {
		return
	}
	if len(ip.fellBack) > 0 {
		reasons := t.reasons(ip.fellBack, func(fb fallBack, f *datafile.Func, file string) *prf.Diagnostic {
			return prf.EntryNotPatched(f.Name, file, fb.err)
		})
		t.cfg.Warn(prf.BreakpointEntries(len(ip.fellBack), len(ip.fellBack)+ip.patched, reasons))
	}
	if len(ip.exitsLeft) > 0 {
		reasons := t.reasons(ip.exitsLeft, func(fb fallBack, f *datafile.Func, file string) *prf.Diagnostic {
			return prf.ExitNotPatched(f.Name, file, fb.pc, fb.err)
		})
		t.cfg.Warn(prf.BreakpointExits(len(ip.exitsLeft), len(ip.exitsLeft)+ip.exitsPatched, reasons))
	}
	// (A library planted later is reported on its own.)
	ip.fellBack, ip.patched, ip.exitsLeft, ip.exitsPatched = nil, 0, nil, 0
}

// reasons counts the sites of list by reason, in a few words each, and
// with --verbose warns about each with one.
func (t *tracer) reasons(list []fallBack, one func(fallBack, *datafile.Func, string) *prf.Diagnostic) string {
	byReason := map[string]int{}
	var reasons []string
	for _, fb := range list {
		r := fallBackReason(fb.err)
		if byReason[r] == 0 {
			reasons = append(reasons, r)
		}
		byReason[r]++
		if t.cfg.Verbose {
			f := &t.plan.Funcs[fb.item]
			t.cfg.Warn(one(fb, f, t.plan.Modules[f.Module].Name))
		}
	}
	var out []string
	for _, r := range reasons {
		out = append(out, fmt.Sprintf("%s: %d", r, byReason[r]))
	}
	return strings.Join(out, ", ")
}

func (t *tracer) readMaps() ([]mapping, error) {
	data, err := t.maps.Read()
	if err != nil {
		return nil, fmt.Errorf("read memory map: %w", err)
	}
	return parseMaps(data)
}

// plantModule instruments the function entries of module mi, loaded with
// bias, mapped as in, in a process with the given maps; an entry the
// module's decoding refuses (checkEntry) gets nothing. One area is mapped
// next to the module, room for trampCell bytes per entry: a trampoline
// where the entry can be patched in-process, else the out-of-line slot of
// its breakpoint, packed from the area's start. Everything is written in
// bulk: the area, then the jumps, then the breakpoints (writePlanting).
func (t *tracer) plantModule(mi int, bias uint64, in instance, maps []mapping) error {
	items := t.plantable(mi, bias)
	if len(items) == 0 {
		return nil
	}
	var exits map[int][]instr.Exit
	nExits := 0
	if t.plan.Method.IsTiming() {
		exits, nExits = t.findExits(items, bias)
		nExits -= t.checkExits(exits)
	}
	cells := t.areaCells(items, bias, nExits)
	size := (cells + t.pageSize - 1) &^ (t.pageSize - 1)
	base, err := t.mmap(slotArea(maps, in.lo, in.hi, size, t.pageSize), size)
	if err != nil {
		t.cfg.Warn(prf.NoSlots(err))
		base = 0
	}
	if base != 0 {
		t.areas[in.first.Start] = append(t.areas[in.first.Start], [2]uint64{base, size})
	}
	if t.inproc == nil && t.timeInProcess {
		t.noRings()
	}
	// Planting allocates a little for every entry, all of it live until
	// the end: collecting meanwhile would only slow the start down.
	defer debug.SetGCPercent(debug.SetGCPercent(1000))
	p := &planting{mi: mi, bias: bias, items: items, text: t.readText(items, bias), area: newCodeArea(base, cells)}
	short, err := t.plantEntries(p)
	if err != nil {
		return err
	}
	if err := t.plantShortEntries(p, short); err != nil {
		return err
	}
	if t.timeInProcess && t.inproc != nil && p.area.mapped() {
		var exitJumps []patchWrite
		exitJumps, exits = t.exitTrampolines(p, exits)
		p.jumps = append(p.jumps, exitJumps...)
	}
	if exits != nil {
		t.exitSites(p.area, exits)
	}
	return t.writePlanting(p)
}

// planting is the work of planting the function entries of one module
// (plantModule): the module, its functions' code as read, the area next
// to it, and the jumps built so far, which what is planted after them
// must not overlap.
type planting struct {
	mi    int
	bias  uint64
	items []int      // the functions planted, by index in the plan
	text  moduleText // their code
	area  *codeArea
	jumps []patchWrite
	// hops is the padding where short jumps' hops go (padding).
	hops *hopSpace
}

// padding returns the padding where the short jumps of planting p put
// their hops, found at the first need, once the entries' full jumps are
// known.
func (t *tracer) padding(p *planting) *hopSpace {
	if p.hops == nil {
		p.hops = t.hopSpace(p.items, p.bias, p.text, p.jumps)
	}
	return p.hops
}

// plantable returns the functions of module mi, loaded with bias, whose
// entries may be planted; the others are warned about (checkEntry).
func (t *tracer) plantable(mi int, bias uint64) []int {
	var items []int
	for i := range t.plan.Funcs {
		f := &t.plan.Funcs[i]
		if f.Module != mi {
			continue
		}
		if err := t.checkEntry(f, bias); err != nil {
			t.cfg.Warn(prf.EntryRefused(f.Name, t.plan.Modules[mi].Name, err))
			continue
		}
		items = append(items, i)
	}
	return items
}

// areaCells returns the bytes the area next to a module needs for the
// entries of items (module loaded with bias) and nExits exits: trampCell
// an entry (a trampoline, or a breakpoint's slot), a slot an exit; timing
// in-process, a trampoline an exit, and room for the return sites of the
// functions' calls too (see exitTrampolines).
func (t *tracer) areaCells(items []int, bias uint64, nExits int) uint64 {
	exitCell := uint64((t.arch.SlotSize() + 15) &^ 15)
	if t.timeInProcess {
		exitCell = trampCell
		calls := 0
		for _, item := range items {
			calls += len(t.returns[t.plan.Funcs[item].Entry+bias])
		}
		nExits += min(calls, returnSites)
	}
	return uint64(len(items))*trampCell + uint64(nExits)*exitCell
}

// retry is an entry to patch again with a short jump, and why a full one
// could not go there.
type retry struct {
	item int
	err  error
}

// plantEntries builds the trampolines of the entries of planting p,
// planned in parallel and placed one after the other in the area, and
// prepares a breakpoint for each entry that cannot take one. It returns
// the entries to try again with a short jump, whose hop needs the padding
// the full jumps leave (plantShortEntries).
func (t *tracer) plantEntries(p *planting) ([]retry, error) {
	planned := t.planEntries(p.items, p.bias, p.area.base, p.text)
	dup := make([]bool, len(p.items)) // an entry two names share is counted once
	seen := map[uint64]bool{}
	for n, item := range p.items {
		addr := t.plan.Funcs[item].Entry + p.bias
		dup[n], seen[addr] = seen[addr], true
		if !dup[n] && planned[n].err == nil {
			planned[n].at = p.area.alloc(len(planned[n].j.code))
		}
	}
	t.placeEntries(planned)
	var short []retry
	for n, item := range p.items {
		if dup[n] {
			continue
		}
		if t.inproc != nil {
			j, err := planned[n].j, planned[n].err
			if err == nil {
				p.area.put(j.tramp.addr, j.code)
				t.addEntryJump(p, j)
				continue
			}
			if _, fwd := t.arch.ShortReach(); fwd > 0 && (errors.Is(err, instr.ErrBranchInto) || errors.Is(err, instr.ErrTooShort)) {
				short = append(short, retry{item, err})
				continue
			}
			t.inproc.fellBack = append(t.inproc.fellBack, fallBack{item: item, err: err})
		}
		if err := t.breakpointSite(p, item); err != nil {
			return nil, err
		}
	}
	return short, nil
}

// plantShortEntries patches the entries of short with a short jump to a
// hop in the padding, or else a punned jump; an entry that takes neither
// gets a breakpoint.
func (t *tracer) plantShortEntries(p *planting, short []retry) error {
	if len(short) == 0 {
		return nil
	}
	hops := t.padding(p)
	for _, r := range short {
		f := &t.plan.Funcs[r.item]
		j, err := t.trampoline(f, r.item, p.bias, p.area.next, p.text, hops)
		if err == nil {
			at := p.area.alloc(len(j.code)) // where it was built: next
			p.area.put(at, j.code)
			t.addEntryJump(p, j)
			continue
		}
		if j, perr := t.punTrampoline(f, r.item, p.bias, p.text); perr == nil {
			t.addEntryJump(p, j)
			continue
		}
		if errors.Is(r.err, errJumpInto) && !errors.Is(err, errJumpInto) {
			// (Why a full jump could not go there says more.)
			err = fmt.Errorf("%w; %v", r.err, err)
		}
		t.inproc.fellBack = append(t.inproc.fellBack, fallBack{item: r.item, err: err})
		if err := t.breakpointSite(p, r.item); err != nil {
			return err
		}
	}
	return nil
}

// addEntryJump adds entry jump j to those of planting p, and its
// trampoline to those the run knows.
func (t *tracer) addEntryJump(p *planting, j patchWrite) {
	p.jumps = append(p.jumps, j)
	t.inproc.addEntry(j.tramp)
}

// writePlanting writes what planting p built into the program: the
// area's code, then the jumps with the code between them (writeCode),
// then the breakpoints.
func (t *tracer) writePlanting(p *planting) error {
	if used := p.area.used(); len(used) > 0 {
		if err := t.mem.WriteMem(p.area.base, used); err != nil {
			return fmt.Errorf("write trampolines and slots: %w", err)
		}
	}
	var code []span
	for _, j := range p.jumps {
		if j.hopCode != nil {
			code = append(code, span{j.hop, j.hopCode})
		}
		code = append(code, span{j.addr, j.jump})
	}
	if err := t.writeCode(p.text, code); err != nil {
		return fmt.Errorf("patch entries: %w", err)
	}
	t.wrote(p.mi, p.bias, code)
	bp := t.arch.Breakpoint()
	for _, s := range t.fresh {
		if err := t.mem.WriteMem(s.addr, bp); err != nil {
			return fmt.Errorf("plant breakpoint at %#x: %w", s.addr, err)
		}
	}
	t.fresh = t.fresh[:0]
	if t.inproc != nil {
		t.inproc.sortTramps()
	}
	return nil
}

// checkEntry returns nil when f's entry, loaded with bias, may be
// planted: where the decoding of its module's code (t.code) has an
// instruction boundary, inside no instruction of another function, and,
// when the plan gives its extent, its code decodes from its start to its
// end. Else why not: the plan does not describe the code the program has
// (a plan written by hand, or for another build).
func (t *tracer) checkEntry(f *datafile.Func, bias uint64) error {
	entry := f.Entry + bias
	cm := t.code.at(entry)
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
			err := t.code.boundary(e.PC)
			if err != nil {
				t.cfg.Warn(prf.SiteRefused("exit", e.PC, f.Name, t.plan.Modules[f.Module].Name, err))
				n++
			}
			return err != nil
		})
	}
	return n
}

// span is bytes to write at an address.
type span struct {
	addr uint64
	b    []byte
}

// writeCode writes the spans into the program's code, those close
// together in one write filled with the code between them as read in text
// (a write to another process's memory costs a system call: 10,000
// patches one by one take longer than everything else PROFILE does at
// start-up).
func (t *tracer) writeCode(text moduleText, spans []span) error {
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.addr, b.addr) })
	const gap = 4096
	end := text.start + uint64(len(text.b))
	for i := 0; i < len(spans); {
		lo, hi := spans[i].addr, spans[i].addr+uint64(len(spans[i].b))
		j := i + 1
		for j < len(spans) && spans[j].addr < hi+gap && lo >= text.start && spans[j].addr+uint64(len(spans[j].b)) <= end {
			hi = max(hi, spans[j].addr+uint64(len(spans[j].b)))
			j++
		}
		if j == i+1 {
			if err := t.mem.WriteMem(lo, spans[i].b); err != nil {
				return fmt.Errorf("write at %#x: %w", lo, err)
			}
			i = j
			continue
		}
		buf := slices.Clone(text.b[lo-text.start : hi-text.start])
		for _, sp := range spans[i:j] {
			copy(buf[sp.addr-lo:], sp.b)
		}
		if err := t.mem.WriteMem(lo, buf); err != nil {
			return fmt.Errorf("write %d bytes at %#x: %w", len(buf), lo, err)
		}
		i = j
	}
	return nil
}

// breakpointSite prepares the breakpoint of item's entry, planted by p,
// with its out-of-line slot taken from p's area (when there is one); a
// function that cannot be profiled is warned about.
func (t *tracer) breakpointSite(p *planting, item int) error {
	f := &t.plan.Funcs[item]
	addr := f.Entry + p.bias
	code := make([]byte, t.arch.MaxInstLen())
	if err := t.readCode(addr, code); err != nil {
		return fmt.Errorf("read code of %s at %#x: %w", f.Name, addr, err)
	}
	bp := t.arch.Breakpoint()
	cell := uint64(0)
	if p.area.mapped() {
		cell = p.area.alloc(t.arch.SlotSize())
	}
	s := &site{addr: addr, item: item, exit: -1, orig: append([]byte(nil), code[:len(bp)]...), slot: cell}
	// Coverage removes a breakpoint at its first hit and needs no
	// displacement, except for a vfork child, which shares the program's
	// memory: it must step over the breakpoint, not remove it.
	d, err := t.arch.Displace(code, addr, s.slot)
	if err == nil && d.Emulate == nil && cell == 0 {
		err = instr.ErrOutOfReach
	}
	switch {
	case err == nil:
		s.disp, s.displaced = d, true
		if d.Slot != nil {
			p.area.put(cell, d.Slot)
			t.slots[cell] = s
		}
	case !t.coverage:
		t.cfg.Warn(prf.CannotProfileFunction(f.Name, t.plan.Modules[p.mi].Name, err))
		return nil
	}
	t.sites[addr] = s
	t.fresh = append(t.fresh, s)
	return nil
}

// patchWrite is a jump to write over an entry, its trampoline's code, and
// for a short jump its hop.
type patchWrite struct {
	addr    uint64
	jump    []byte
	code    []byte
	hop     uint64
	hopCode []byte
	tramp   *tramp
	// build builds the trampoline again at another address.
	build func(at uint64) (instr.Trampoline, error)
}

// plannedEntry is the outcome of planning one entry's patch, and where its
// trampoline goes.
type plannedEntry struct {
	j   patchWrite
	err error
	at  uint64
}

// placeEntries moves the planned trampolines to their addresses (see
// place), in parallel like planning.
func (t *tracer) placeEntries(planned []plannedEntry) {
	inParallel(len(planned), func(n int) {
		if p := &planned[n]; p.err == nil && p.at != 0 {
			p.err = t.place(&p.j, p.at)
		}
	})
}

// inParallel calls do for 0 to n-1, spread over the CPUs when n is large
// enough to pay for the goroutines. Each call must touch its own data.
func inParallel(n int, do func(int)) {
	workers := min(runtime.GOMAXPROCS(0), max(1, n/256))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				do(i)
			}
		}()
	}
	wg.Wait()
}

// planEntries plans the patches and trampolines of items (without short
// jumps, which share the padding): in parallel, since decoding every
// function of a large program is most of PROFILE's start-up, and each
// entry's plan is its own. Nothing here touches the program.
func (t *tracer) planEntries(items []int, bias, area uint64, text moduleText) []plannedEntry {
	out := make([]plannedEntry, len(items))
	if t.inproc == nil || area == 0 {
		for n := range out {
			out[n].err = errNoRoom
		}
		return out
	}
	inParallel(len(items), func(n int) {
		item := items[n]
		// Built at the area's start for its size; placed later.
		out[n].j, out[n].err = t.trampoline(&t.plan.Funcs[item], item, bias, area, text, nil)
	})
	return out
}

// hopSpace is the padding where hops may go: the alignment padding after
// the module's planned functions that no patch covers, as free ranges.
type hopSpace struct {
	free [][2]uint64
}

// hopSpace finds the padding after each of items' functions, less what the
// patches in jumps cover.
func (t *tracer) hopSpace(items []int, bias uint64, text moduleText, jumps []patchWrite) *hopSpace {
	covered := map[uint64]uint64{} // a patch's start, its end
	for _, j := range jumps {
		covered[j.addr] = j.addr + uint64(len(j.jump)+len(j.tramp.patch.Punned))
	}
	hs := &hopSpace{}
	for _, item := range items {
		f := &t.plan.Funcs[item]
		if f.Low >= f.High || f.High+bias < text.start {
			continue
		}
		hi := f.High + bias
		off := hi - text.start
		if off >= uint64(len(text.b)) {
			continue
		}
		pad := uint64(instr.PaddingAfter(t.arch, text.b[off:], hi))
		lo := hi
		for start, end := range covered {
			if start < hi && end > lo {
				lo = end // a tiny function's patch ran into its padding
			}
		}
		if lo+5 <= hi+pad {
			hs.free = append(hs.free, [2]uint64{lo, hi + pad})
		}
	}
	return hs
}

// remove takes [lo, hi) out of the free padding.
func (hs *hopSpace) remove(lo, hi uint64) {
	var free [][2]uint64
	for _, r := range hs.free {
		if r[1] <= lo || hi <= r[0] {
			free = append(free, r)
			continue
		}
		if r[0] < lo {
			free = append(free, [2]uint64{r[0], lo})
		}
		if hi < r[1] {
			free = append(free, [2]uint64{hi, r[1]})
		}
	}
	hs.free = free
}

// take allocates n bytes of padding that a short jump at site reaches
// (back and forward bytes from it), or returns false.
func (hs *hopSpace) take(site uint64, back, fwd int64, n uint64) (uint64, bool) {
	for i, r := range hs.free {
		if r[1]-r[0] < n {
			continue
		}
		if d := int64(r[0] - site); d >= -back && d <= fwd {
			hs.free[i][0] += n
			return r[0], true
		}
	}
	return 0, false
}

// moduleText is a module's code as read from the program once: the span
// of every planned function's code.
type moduleText struct {
	start uint64
	b     []byte
}

// readText reads the code of the functions items, loaded with bias, in
// one read. Functions whose extent the plan does not know, or a span too
// large to read at once, give an empty text: their entries keep
// breakpoints.
func (t *tracer) readText(items []int, bias uint64) moduleText {
	lo, hi := ^uint64(0), uint64(0)
	for _, item := range items {
		f := &t.plan.Funcs[item]
		if f.Low < f.High {
			lo, hi = min(lo, f.Low), max(hi, f.High)
		}
	}
	if lo >= hi || hi-lo > 1<<30 || t.inproc == nil {
		return moduleText{}
	}
	// And the padding after the last function, up to 16 bytes, where the
	// mapping allows.
	b := make([]byte, hi-lo+16)
	if err := t.mem.ReadMem(lo+bias, b); err != nil {
		b = b[:hi-lo]
		if err := t.mem.ReadMem(lo+bias, b); err != nil {
			return moduleText{}
		}
	}
	return moduleText{start: lo + bias, b: b}
}

// trampoline plans the patch of f's entry and builds its trampoline in
// cell; an error says why the entry keeps a breakpoint. With hops, the
// patch is a short jump to a hop taken from them.
func (t *tracer) trampoline(f *datafile.Func, item int, bias, cell uint64, text moduleText, hops *hopSpace) (patchWrite, error) {
	if f.Low >= f.High || f.Entry < f.Low || f.Entry >= f.High {
		return patchWrite{}, errNoExtent
	}
	if t.timeInProcess && f.Frame != datafile.FrameSP {
		return patchWrite{}, errGoFrames
	}
	if cell == 0 {
		return patchWrite{}, errNoRoom
	}
	lo, hi := f.Low+bias, f.High+bias
	if text.b == nil || lo < text.start || hi > text.start+uint64(len(text.b)) {
		return patchWrite{}, errNoCode
	}
	pad := instr.PaddingAfter(t.arch, text.b[hi-text.start:], hi)
	fn := text.b[lo-text.start : hi-text.start+uint64(pad)]
	plan := t.arch.PlanPatch
	if hops != nil {
		plan = t.arch.PlanShortPatch
		fn = fn[:hi-lo] // the padding is for hops
	}
	if t.timeInProcess && hops == nil {
		plan = func(fn []byte, start, site uint64) (instr.Patch, error) {
			p, err := instr.PlanPatchThroughExit(t.arch, fn, start, hi, site)
			exit, _ := t.arch.RecordCode(t.inproc.ring(), 0)
			if err == nil && (t.landings.inside(p.Site, p.End()) || t.scratchAt(&exit, p.Insts) != nil) {
				// The exit's window is landed in, or it is a jump the
				// record code cannot go before.
				return t.arch.PlanPatch(fn, start, site)
			}
			return p, err
		}
	}
	if t.entryScratch(f) && slices.Contains(instr.ScanCode(t.arch, fn[:hi-lo], lo).Jumps, f.Entry+bias) {
		return patchWrite{}, errLoopEntry
	}
	p, err := plan(fn, lo, f.Entry+bias)
	if err != nil {
		return patchWrite{}, err
	}
	if t.landings.inside(p.Site, p.End()) {
		// (A jump of another function, into an alternate entry of
		// this one's: the patch would replace where it lands.)
		return patchWrite{}, jumpInto{p.Site, p.End()}
	}
	build := func(at uint64) (instr.Trampoline, error) { return t.entryTrampoline(&p, at, f, item, lo, hi) }
	tr, err := build(cell)
	if err != nil {
		return patchWrite{}, err
	}
	if len(tr.Code) > trampCell && t.timeInProcess && hops == nil {
		// Two records and long instructions: without the exit, whose
		// patch is then its own.
		if p, err = t.arch.PlanPatch(fn, lo, f.Entry+bias); err != nil {
			return patchWrite{}, err
		}
		if tr, err = build(cell); err != nil {
			return patchWrite{}, err
		}
	}
	if len(tr.Code) > trampCell {
		return patchWrite{}, fmt.Errorf("trampoline of %d bytes: %w", len(tr.Code), instr.ErrNotRelocatable)
	}
	w := patchWrite{addr: p.Site, code: tr.Code}
	to := cell
	if p.Short {
		back, fwd := t.arch.ShortReach()
		hop, ok := hops.take(p.Site, back, fwd, hopLen)
		if !ok {
			return patchWrite{}, errNoHop
		}
		if w.hopCode, err = t.arch.Jump(hop, cell); err != nil {
			return patchWrite{}, err
		}
		w.hop, to = hop, hop
	}
	if w.jump, err = t.arch.PatchJump(&p, to); err != nil {
		return patchWrite{}, err
	}
	w.tramp = &tramp{addr: cell, patch: p, code: tr, regions: t.regions(f, item, &tr)}
	w.build = build
	return w, nil
}

// place moves a planned trampoline to its address in the area: its code
// and the jump to it are built again there (their lengths do not change).
func (t *tracer) place(w *patchWrite, at uint64) error {
	if w.tramp.addr == at {
		return nil
	}
	tr, err := w.build(at)
	if err != nil {
		return err
	}
	if len(tr.Code) != len(w.code) {
		return fmt.Errorf("trampoline of %d bytes at %#x, %d elsewhere: %w", len(tr.Code), at, len(w.code), instr.ErrNotRelocatable)
	}
	jump, err := t.arch.PatchJump(&w.tramp.patch, at)
	if err != nil {
		return err
	}
	w.code, w.jump = tr.Code, jump
	w.tramp.addr, w.tramp.code = at, tr
	return nil
}

// punTrampoline patches f's entry with a punned jump (see
// [instr.Arch.PlanPunPatch]): its trampoline goes in a page of its own,
// mapped where the jump lands, and is written at once.
func (t *tracer) punTrampoline(f *datafile.Func, item int, bias uint64, text moduleText) (patchWrite, error) {
	lo, hi := f.Low+bias, f.High+bias
	if f.Low >= f.High || text.b == nil || lo < text.start || hi > text.start+uint64(len(text.b)) {
		return patchWrite{}, errNoCode
	}
	p, wlo, whi, err := t.arch.PlanPunPatch(text.b[lo-text.start:hi-text.start], lo, f.Entry+bias)
	if err != nil {
		return patchWrite{}, err
	}
	if t.landings.inside(p.Site, p.End()) {
		return patchWrite{}, jumpInto{p.Site, p.End()}
	}
	const lowest, top = 1 << 20, 1 << 47
	if wlo < lowest || whi > top || whi <= wlo {
		return patchWrite{}, errNoHop
	}
	// A page in the window, or the page holding its start; a few tries.
	var page uint64
	for try, at := 0, wlo&^(t.pageSize-1); try < 4 && at < whi; try, at = try+1, at+t.pageSize {
		if page, err = t.mmap(at, t.pageSize); err == nil {
			break
		}
	}
	if page == 0 {
		return patchWrite{}, fmt.Errorf("no page where the punned jump lands: %w", errNoHop)
	}
	addr := max(wlo, page)
	tr, err := t.entryTrampoline(&p, addr, f, item, lo, hi)
	if err == nil && addr+uint64(len(tr.Code)) > page+t.pageSize {
		err = fmt.Errorf("trampoline past its page: %w", errNoHop)
	}
	var jump []byte
	if err == nil {
		jump, err = t.arch.PatchJump(&p, addr)
	}
	if err == nil {
		err = t.mem.WriteMem(addr, tr.Code)
	}
	if err != nil {
		return patchWrite{}, err
	}
	return patchWrite{addr: p.Site, jump: jump, code: tr.Code,
		tramp: &tramp{addr: addr, patch: p, code: tr, regions: t.regions(f, item, &tr)}}, nil
}

// entryTrampoline builds the trampoline at addr of the patch p of f's
// entry (item; its code [lo, hi)): the instrumentation (the count, and
// the call depth's code where there is a depth area; timing in-process,
// the entry's record), the replaced instructions relocated, and the jump
// back. Timing in-process, where the patch covers the function's exit (a
// function of a few bytes), the exit's record goes before the exit, which
// leaves: no jump back.
func (t *tracer) entryTrampoline(p *instr.Patch, addr uint64, f *datafile.Func, item int, lo, hi uint64) (instr.Trampoline, error) {
	ip := t.inproc
	if !t.timeInProcess {
		count := t.arch.CountCode(ip.kind, ip.counterRef(item))
		if ip.keepsDepth() && f.Frame != datafile.FrameNone {
			d, _ := t.arch.DepthCode(ip.depth(f.Frame == datafile.FrameGoroutine))
			count = append(count[:len(count):len(count)], d.Code...)
		}
		return t.arch.Trampoline(p, addr, count)
	}
	entry, _ := t.arch.RecordCode(ip.ring(), instr.RecordTag(item, false))
	e := instr.ExitIndex(p, lo, hi)
	if e < 0 {
		return t.arch.Trampoline(p, addr, entry.Code)
	}
	exit, _ := t.arch.RecordCode(ip.ring(), instr.RecordTag(item, true))
	upTo := *p
	upTo.Insts = p.Insts[:e+1]
	n := 0
	for _, in := range upTo.Insts {
		n += in.Len
	}
	upTo.Orig = p.Orig[:n]
	at := addr + uint64(len(entry.Code))
	tr, err := instr.ExitTrampoline(t.arch, &upTo, at, exit.Code)
	if err != nil {
		return instr.Trampoline{}, err
	}
	tr.Code = append(entry.Code, tr.Code...)
	tr.At += len(entry.Code)
	return tr, nil
}

// regions returns the regions of the trampoline tr of item's entry (see
// entryTrampoline).
func (t *tracer) regions(f *datafile.Func, item int, tr *instr.Trampoline) []region {
	ip := t.inproc
	if !t.timeInProcess {
		if !ip.keepsDepth() || f.Frame == datafile.FrameNone {
			return nil
		}
		d, _ := t.arch.DepthCode(ip.depth(f.Frame == datafile.FrameGoroutine))
		return []region{{at: len(t.arch.CountCode(ip.kind, ip.counterRef(item))), rollback: d.Rollback}}
	}
	entry, _ := t.arch.RecordCode(ip.ring(), instr.RecordTag(item, false))
	rs := []region{recordRegion(0, &entry)}
	if tr.Exit {
		exit, _ := t.arch.RecordCode(ip.ring(), instr.RecordTag(item, true))
		rs = append(rs, recordRegion(tr.At, &exit))
	}
	return rs
}

// entryScratch reports whether the instrumentation of f's entry uses
// registers the calling convention leaves free at a call, not at a branch
// of f's own (arm64's x16 and x17: the record code, and the call depth's
// table form).
func (t *tracer) entryScratch(f *datafile.Func) bool {
	if t.timeInProcess {
		rc, _ := t.arch.RecordCode(t.inproc.ring(), 0)
		return rc.Scratch
	}
	return t.inproc.table && t.inproc.keepsDepth() && f.Frame != datafile.FrameNone
}

// hopLen is the room of a hop: the longest full jump (amd64 jmp rel32).
const hopLen = 5

// Reasons for a breakpoint that are not the architecture's.
var (
	errNoExtent = errors.New("the plan does not hold the function's extent")
	errNoRoom   = errors.New("no room for trampolines near the module")
	errNoCode   = errors.New("the function's code could not be read")
	errNoHop    = errors.New("no padding within a short jump's reach for a hop")
	// errLoopEntry: a branch of the function goes back to its entry (a
	// loop, or a recursive call made a jump), where the registers the
	// instrumentation uses may be live.
	errLoopEntry = errors.New("a branch of the function to its own entry")
	// errJumpInto: a jump or call from elsewhere in the module (an
	// alternate entry of hand-written assembly, a cold part) lands in
	// the bytes the patch would replace, which decoding the function
	// alone does not see.
	errJumpInto = errors.New("a jump from elsewhere lands in the bytes a patch would replace")
)

// jumpInto is why a patch of [lo, hi) cannot go where it would: a jump
// from elsewhere in the module lands inside (errJumpInto, and to the
// tactics of shorter patches instr.ErrBranchInto).
type jumpInto struct{ lo, hi uint64 }

func (e jumpInto) Error() string {
	return fmt.Sprintf("a jump from elsewhere in the module lands in [%#x, %#x), the bytes a patch would replace", e.lo, e.hi)
}

// Is makes a jumpInto both errJumpInto and instr.ErrBranchInto.
func (e jumpInto) Is(target error) bool {
	return target == errJumpInto || target == instr.ErrBranchInto
}

// fallBackReason classifies why an entry keeps a breakpoint, in a few words.
func fallBackReason(err error) string {
	switch {
	case errors.Is(err, errNoExtent):
		return "extent unknown"
	case errors.Is(err, errNoRoom):
		return "no room"
	case errors.Is(err, errNoCode):
		return "code unreadable"
	case errors.Is(err, errNoHop):
		return "no hop"
	case errors.Is(err, errGoFrames):
		return "Go function, timed with breakpoints"
	case errors.Is(err, errOverlap):
		return "overlaps another patch"
	case errors.Is(err, errLoopEntry):
		return "a loop to the entry"
	case errors.Is(err, errJumpInto):
		return "a jump from elsewhere into its first bytes"
	case errors.Is(err, errNotTailCall):
		return "a jump to no function's entry"
	}
	return instr.Reason(err)
}

// slotArea chooses where to map size bytes of slots for a module whose
// instance spans [start, end) (its segments and bss): in the free gap of
// the process's maps nearest to the module, so that a relocated
// instruction reaches its original neighbourhood (±2 GiB for RIP-relative
// operands on amd64, ±128 MiB for B on arm64), with guard pages around
// it. Below the module wins a tie: a C program's heap grows up from its
// end. 0 means no gap within reach was found, and the kernel chooses. The
// area is aligned to pageSize, the running system's page:
// MAP_FIXED_NOREPLACE refuses any other address.
func slotArea(maps []mapping, start, end, size, pageSize uint64) uint64 {
	guard := 16 * pageSize
	const (
		lowest = 1 << 20   // leave the lowest addresses alone
		top    = 1 << 47   // the top of user space on both architectures
		reach  = 100 << 20 // well within the shortest reach (arm64 B)
		none   = ^uint64(0)
	)
	// (Its bss may go on in an anonymous mapping past the segments'
	// span as the file says it; not what happens to lie next to it, the
	// counters, another library.)
	for _, m := range maps {
		if m.Start == end && m.Path == "" {
			end = m.End
		}
	}
	best, bestDist := uint64(0), none
	consider := func(lo, hi uint64) {
		lo = max(lo, lowest)
		if hi <= lo || hi-lo < size+2*guard {
			return
		}
		var addr, dist uint64
		switch {
		case hi <= start:
			addr = (hi - guard - size) &^ (pageSize - 1)
			dist = start - addr
		case lo >= end:
			addr = (lo + guard + pageSize - 1) &^ (pageSize - 1)
			dist = addr + size - end
		default:
			return
		}
		if dist < bestDist && dist <= reach {
			best, bestDist = addr, dist
		}
	}
	prev := uint64(0)
	for _, m := range maps {
		consider(prev, m.Start)
		prev = max(prev, m.End)
	}
	consider(prev, top)
	return best
}

// readCode reads up to len(b) bytes of code at addr; near the end of a
// mapping it reads what there is and zeroes the rest.
func (t *tracer) readCode(addr uint64, b []byte) error {
	err := t.mem.ReadMem(addr, b)
	if err == nil {
		return nil
	}
	clear(b)
	end := (addr + t.pageSize) &^ (t.pageSize - 1)
	return t.mem.ReadMem(addr, b[:min(uint64(len(b)), end-addr)])
}

// mmap maps size bytes of private, anonymous, readable and executable memory
// in the program, near hint when that is free.
func (t *tracer) mmap(hint, size uint64) (uint64, error) {
	const (
		protRead                 = 0x1
		protExec                 = 0x4
		mapPrivate               = 0x02
		mapAnon                  = 0x20
		mapFixedNoReplace        = 0x100000
		noFD              uint64 = ^uint64(0)
	)
	flags := uint64(mapPrivate | mapAnon)
	if hint != 0 {
		// Exactly there or nowhere (Linux 4.17): a slot elsewhere may be out
		// of reach. The kernel fails with EEXIST if the range is taken.
		flags |= mapFixedNoReplace
	}
	return t.inject(t.setupThread(), instr.SysMmap, hint, size, protRead|protExec, flags, noFD, 0)
}

// setupThread is the stopped thread PROFILE borrows for its system calls:
// the main thread at the start, the thread at the rendezvous later.
func (t *tracer) setupThread() int {
	if t.here != 0 {
		return t.here
	}
	return t.pid
}

// borrow writes code over the current instruction of stopped thread tid,
// for the tracer's own use of the thread, and returns the thread's
// registers as they were and the function that puts the instruction and
// the registers back.
func (t *tracer) borrow(tid int, code []byte) (ptrace.Regs, func() error, error) {
	var saved ptrace.Regs
	if err := ptrace.GetRegs(tid, &saved); err != nil {
		return saved, nil, err
	}
	pc := saved.PC()
	orig := make([]byte, len(code))
	if err := t.mem.ReadMem(pc, orig); err != nil {
		return saved, nil, err
	}
	if err := t.mem.WriteMem(pc, code); err != nil {
		return saved, nil, err
	}
	restore := func() error {
		if err := t.mem.WriteMem(pc, orig); err != nil {
			return err
		}
		return ptrace.SetRegs(tid, &saved)
	}
	return saved, restore, nil
}

// inject makes stopped thread tid run one system call: the system call
// instruction is written over its current instruction, single-stepped,
// and the instruction and registers restored. It returns the call's result,
// or its errno as an error.
func (t *tracer) inject(tid int, call instr.Syscall, args ...uint64) (uint64, error) {
	saved, restore, err := t.borrow(tid, t.arch.SyscallInst())
	if err != nil {
		return 0, err
	}
	res, err := t.stepSyscall(tid, saved, saved.PC(), call, args...)
	if rerr := restore(); err == nil && rerr != nil {
		return 0, rerr
	}
	return res, err
}

// stepSyscall makes stopped thread tid, whose registers are saved, run
// the system call instruction at pc as call with args, single-stepped,
// and returns the call's result, or its errno as an error. The caller
// puts the registers back.
func (t *tracer) stepSyscall(tid int, saved ptrace.Regs, pc uint64, call instr.Syscall, args ...uint64) (uint64, error) {
	const maxErrno = 4095
	regs := saved
	regs.NoRestart()
	t.arch.SetSyscall(&regs, t.arch.SyscallNumber(call), args...)
	regs.SetPC(pc)
	if err := ptrace.SetRegs(tid, &regs); err != nil {
		return 0, err
	}
	if err := ptrace.Step(tid); err != nil {
		return 0, err
	}
	ws, err := ptrace.WaitFor(tid)
	if err != nil {
		return 0, err
	}
	if !ws.Stopped() {
		return 0, errors.New("program ended during set-up")
	}
	if err := ptrace.GetRegs(tid, &regs); err != nil {
		return 0, err
	}
	if ws.StopSignal() != syscall.SIGTRAP {
		return 0, fmt.Errorf("unexpected %v during set-up", ws.StopSignal())
	}
	res := t.arch.SyscallResult(&regs)
	if res > ^uint64(maxErrno) {
		return 0, syscall.Errno(-res)
	}
	return res, nil
}
