// Function entries: planting a module's entries, in-process (a jump to a
// trampoline that counts, or times, and runs the moved instructions) or,
// where no patch can go, with a breakpoint whose instruction runs from an
// out-of-line slot. Everything a module takes is built in its codeArea
// and written in bulk (writePlanting). The trampolines themselves are
// trampolines.go's; the exits' patches exitpatch.go's.

package profile

import (
	"cmp"
	"fmt"
	"runtime/debug"
	"slices"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// plantModule plants module mi, loaded with bias, mapped as in, in a
// process with the given maps: each mechanism in turn plants what it
// takes (plant) into one planting, written in bulk at the end
// (writePlanting): the area, then the jumps, then the breakpoints.
func (t *tracer) plantModule(mi int, bias uint64, in instance, maps []mapping) error {
	// (The areas and pages are mapped in one borrowing of the thread,
	// put back before anything is written.)
	var p *planting
	if err := t.withCalls(t.setupThread(), func() error {
		if p = t.newPlanting(mi, bias, in, maps); p == nil || p.err != nil {
			return nil
		}
		// Planting allocates a little for every site, most of it live
		// until the end, and more that is not (the layout's tries):
		// the collector is held back, not off (at 1000 % a program of
		// 120,000 lines took 330 MB at its peak, at 300 % 230 MB, in the
		// same time).
		defer debug.SetGCPercent(debug.SetGCPercent(300))
		for _, m := range t.mechanisms() {
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

// planting is the work of planting one module (plantModule): the module,
// and for a function profile its functions' code as read, the area next
// to it, what is left to plant, and the jumps built so far, which what is
// planted after them must not overlap.
type planting struct {
	mi   int
	bias uint64
	in   instance
	maps []mapping
	// lines is set for a line profile, whose sites are planted and
	// nothing else: lineSites are the sites left to plant, each with the
	// lines there (lineTrampolines takes those it can, the breakpoints
	// the rest), text the code from the first to past the last, and
	// spans what the breakpoints write there, with the jumps.
	lines     bool
	lineSites *lineSiteSet
	spans     []span
	// err is why the module cannot be planted at all.
	err   error
	items []int      // the functions planted, by index in the plan
	text  moduleText // their code
	area  *codeArea
	// entries are the functions whose entries are left to plant, one
	// for each address (an entry two names share is counted once): all,
	// or none once entryTrampolines planted them, handing those no jump
	// fits to the breakpoints itself. exits are the exits left to plant,
	// by function (timing).
	entries []int
	exits   map[int][]instr.Exit
	jumps   []patchWrite
	// hops is the padding where short jumps' hops go (padding).
	hops *hopSpace
	// lay is the layout of text's patches, and room where their
	// trampolines go (layout), paged those trampolines in the room's
	// pages, written in bulk (writePaged).
	lay   *instr.Layout
	room  *room
	paged []span
}

// newPlanting prepares the planting of module mi, loaded with bias,
// mapped as in: for a function profile, the functions whose entries the
// module's decoding accepts (checkEntry), their exits when timing, their
// code, and one area mapped next to the module, room for trampCell bytes
// per entry (a trampoline where the entry can be patched in-process,
// else the out-of-line slot of its breakpoint) and the exits' cells. It
// returns nil when there is nothing to plant.
func (t *tracer) newPlanting(mi int, bias uint64, in instance, maps []mapping) *planting {
	if !t.plan.Method.IsFunction() {
		return t.newLinePlanting(mi, bias, in, maps)
	}
	items := t.plantable(mi, bias)
	if len(items) == 0 {
		return nil
	}
	var exits map[int][]instr.Exit
	nExits := 0
	if t.timed {
		exits, nExits = findExits(t.arch, t.mem, t.plan.Funcs, items, bias)
		nExits -= t.checkExits(exits)
	}
	area := t.areaNear(in, maps, t.areaCells(items, bias, nExits))
	if t.counters == nil && t.rings != nil {
		t.noRings()
	}
	return &planting{mi: mi, bias: bias, in: in, maps: maps, items: items, text: t.readText(items, bias), area: area,
		entries: t.uniqueEntries(items, bias), exits: exits}
}

// areaNear maps an area of size bytes, rounded up to pages, where code
// of instance in (mapped as maps say) reaches it, for what is planted
// there, and notes it, to be unmapped with the instance (forget). With
// no room there, it warns (PRF4644) and returns an area that is not
// mapped: nothing needing one is planted.
func (t *tracer) areaNear(in instance, maps []mapping, size uint64) *codeArea {
	pages := (size + t.pageSize - 1) &^ (t.pageSize - 1)
	base, err := t.mapArea(slotArea(maps, in.lo, in.hi, pages, t.pageSize), pages)
	if err != nil {
		t.cfg.Warn(prf.NoSlots(err))
		return newCodeArea(0, size)
	}
	t.areas[in.first.Start] = append(t.areas[in.first.Start], [2]uint64{base, pages})
	return newCodeArea(base, size)
}

// uniqueEntries returns items, loaded with bias, less those whose entry
// an earlier item has too.
func (t *tracer) uniqueEntries(items []int, bias uint64) []int {
	seen := map[uint64]bool{}
	out := make([]int, 0, len(items))
	for _, item := range items {
		if addr := t.plan.Funcs[item].Entry + bias; !seen[addr] {
			seen[addr] = true
			out = append(out, item)
		}
	}
	return out
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
	if t.rings != nil {
		exitCell = trampCell
		calls := 0
		for _, item := range items {
			calls += len(t.scan.returns[t.plan.Funcs[item].Entry+bias])
		}
		nExits += min(calls, returnSites)
	}
	return uint64(len(items))*trampCell + uint64(nExits)*exitCell
}

// entryTrampolines is the mechanism of function entries in-process: a
// jump at each entry to a trampoline that counts into the thread's block
// of counters (counters), or records the entry into its ring; full jumps,
// short jumps with a hop in the padding, or punned jumps. An entry that
// takes none is handed to the breakpoints at once (plantEntry).
type entryTrampolines struct {
	t *tracer
	// fellBack lists the entries of the module being planted that keep a
	// breakpoint, with the reason, and patched counts the others
	// (reportFallBacks).
	fellBack []fallBack
	patched  int
}

// plant plants the entries of planting p: each a jump to its trampoline,
// which counts (or records) and runs the instruction the jump replaced
// (the layout's rule: planted from the highest down); where no jump
// fits, a breakpoint (plantEntry).
func (et *entryTrampolines) plant(p *planting) error {
	if p.lines {
		return nil
	}
	t := et.t
	order := slices.Clone(p.entries)
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(t.plan.Funcs[b].Entry, t.plan.Funcs[a].Entry) })
	sites := make([]uint64, len(order))
	for n, item := range order {
		sites[len(order)-1-n] = t.plan.Funcs[item].Entry + p.bias
	}
	if p.area.mapped() {
		t.layout(p).Sites(sites)
	}
	for _, item := range order {
		pl, err := et.planEntry(p, item)
		if err == nil {
			t.putPlanned(p, pl, func(x *instr.Planned) []region { return et.regions(p, item, pl, x) }, 0)
			et.patched++
			continue
		}
		et.fellBack = append(et.fellBack, fallBack{item: item, err: err})
		if p.lay != nil {
			p.lay.Unstable(t.plan.Funcs[item].Entry+p.bias, len(t.arch.Breakpoint()))
		}
		if err := t.bp.plantEntry(p, item); err != nil {
			return err
		}
	}
	p.entries = nil
	return nil
}

// planEntry plans the patch of item's entry in planting p's layout, or
// says why it keeps a breakpoint.
func (et *entryTrampolines) planEntry(p *planting, item int) (*instr.Planned, error) {
	t := et.t
	f := &t.plan.Funcs[item]
	lo, hi := f.Low+p.bias, f.High+p.bias
	switch {
	case f.Low >= f.High || f.Entry < f.Low || f.Entry >= f.High:
		return nil, errNoExtent
	case !p.area.mapped():
		return nil, errNoRoom
	case p.text.b == nil || lo < p.text.start || hi > p.text.start+uint64(len(p.text.b)):
		return nil, errNoCode
	}
	if t.counters.layout.rings {
		if err := t.rings.ringTimed(f); err != nil {
			return nil, err
		}
	}
	if t.entryScratch(f) && slices.Contains(instr.ScanCode(t.arch, p.text.b[lo-p.text.start:hi-p.text.start], lo).Jumps, f.Entry+p.bias) {
		return nil, errLoopEntry
	}
	lay := t.layout(p)
	lay.Evict = et.exitBuild(p, item, lo, hi)
	build := func(pt *instr.Patch, at uint64) (instr.Trampoline, error) {
		tr, err := t.entryTrampoline(pt, at, f, item, lo, hi)
		if err == nil && len(tr.Code) > trampCell {
			err = fmt.Errorf("trampoline of %d bytes: %w", len(tr.Code), instr.ErrNotRelocatable)
		}
		return tr, err
	}
	entry := f.Entry + p.bias
	pl, err := lay.Plan(entry, build)
	if err != nil && lo < entry && !t.scan.landings.has(entry) {
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
	t := et.t
	if !t.counters.layout.rings {
		return nil
	}
	f := &t.plan.Funcs[item]
	return func(addr uint64) instr.Build {
		if !slices.ContainsFunc(p.exits[item], func(e instr.Exit) bool { return e.PC == addr }) {
			return nil
		}
		exit, _ := t.arch.RecordCode(t.rings.recordRing(f), instr.RecordTag(item, true))
		return func(pt *instr.Patch, at uint64) (instr.Trampoline, error) {
			return instr.ExitTrampoline(t.arch, pt, at, exit.Code)
		}
	}
}

// regions returns the regions of the trampoline of x, item's entry's
// patch pl or an instruction it moved out: an exit's, its record.
func (et *entryTrampolines) regions(p *planting, item int, pl, x *instr.Planned) []region {
	t := et.t
	f := &t.plan.Funcs[item]
	if x == pl {
		return t.regions(f, item, &x.Tramp, x.At, preludeAt(&x.Patch, &x.Tramp, x.At, f.Entry+p.bias))
	}
	if !t.counters.layout.rings || !x.Tramp.Exit {
		return nil
	}
	exit, _ := t.arch.RecordCode(t.rings.recordRing(f), instr.RecordTag(item, true))
	return []region{recordRegion(x.Tramp.At, &exit)}
}

// stop claims no stop: a trampoline's breakpoints are the rings'.
func (et *entryTrampolines) stop(*thread, uint64) (bool, error) { return false, nil }

// forget has nothing of its own to drop: the trampolines are the
// counters' (counters.forget).
func (et *entryTrampolines) forget(lo, hi uint64) {}

// collect has nothing of its own: the counts are in the counters'
// blocks (counters.ended).
func (et *entryTrampolines) collect(*Result) {}

// writePlanting writes what planting p built into the program: the
// area's code, then the jumps with the code between them (writeCode),
// then the breakpoints.
func (t *tracer) writePlanting(p *planting) error {
	t.explain.planting(p)
	if used := p.area.used(); len(used) > 0 {
		if err := t.writeArea(p.area.base, used); err != nil {
			return fmt.Errorf("write trampolines and slots: %w", err)
		}
	}
	if err := t.writePaged(p); err != nil {
		return err
	}
	var jumps []span
	for _, j := range p.jumps {
		if j.hopCode != nil {
			jumps = append(jumps, span{j.hop, j.hopCode})
		}
		jumps = append(jumps, span{j.addr, j.jump})
	}
	// (The breakpoints of lines go with the jumps, in the same text.)
	if err := t.writeCode(p.text, append(slices.Clone(p.spans), jumps...)); err != nil {
		return fmt.Errorf("patch the code: %w", err)
	}
	t.watch.wrote(p.mi, p.bias, jumps)
	if err := t.bp.write(); err != nil {
		return err
	}
	if t.counters != nil {
		t.counters.sortTramps()
	}
	return nil
}

// writeArea writes code into an area PROFILE mapped, untouched so far.
// A write that fails is tried once more after a read of each of its
// pages: a write through /proc/PID/mem into a fresh private mapping
// without write permission was seen to fail with EIO, once in a great
// many runs (arm64, 16K pages, Linux 6.12), where the page it needs made
// by a read first is the path every other write of PROFILE's takes.
func (t *tracer) writeArea(base uint64, code []byte) error {
	err := t.mem.WriteMem(base, code)
	if err == nil {
		return nil
	}
	var b [1]byte
	for at := base; at < base+uint64(len(code)); at += max(t.pageSize, 4096) {
		if rerr := t.mem.ReadMem(at, b[:]); rerr != nil {
			return fmt.Errorf("%w (and a read there: %v)", err, rerr)
		}
	}
	return t.mem.WriteMem(base, code)
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

// patchWrite is a jump to write over an entry, its trampoline's code, and
// for a short jump its hop.
type patchWrite struct {
	addr    uint64
	jump    []byte
	code    []byte
	hop     uint64
	hopCode []byte
	tramp   *tramp
	// count is, in a line trampoline, the offset of the instruction
	// that reads the site's counter (instr.DepthCode.Count).
	count int
	// movedOut marks the jump of an instruction moved out of the way of
	// a site's jump (instr.Layout), whose trampoline only runs it.
	movedOut bool
	// evicts marks a site's jump whose trampoline carries out the
	// instruction moved out of its way (movedOut) too.
	evicts bool
	// farHop is where the jump lands when its window has no room for
	// the trampoline: a jump of full reach on to it (instr.Planned.Hop).
	farHop uint64
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
	if lo >= hi || hi-lo > 1<<30 || t.counters == nil {
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
