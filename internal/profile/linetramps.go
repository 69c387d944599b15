// Line sites in-process: the mechanism of line profiles wherever a jump
// fits. Each line site's instruction (with the next ones, where the first
// is shorter than a jump and nothing can land among them) is replaced by a
// jump to a trampoline that adds one to the site's counter in the
// thread's block, or sets it (coverage), then runs the replaced
// instructions and jumps back. The sites no jump fits keep their
// breakpoints (lines.go), reported by reason (PRF4673).

package profile

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/sourceprofiler/sprof/internal/elfid"
	"github.com/sourceprofiler/sprof/internal/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// lineCell is the room of one line patch's trampoline in the area: the
// counts of its sites (40 bytes each on amd64, 32 on arm64; a patch of a
// few instructions may replace the first of three lines), the replaced
// instructions relocated (a call's relocation is the longest, 26 bytes)
// and the jump back.
const lineCell = 192

// siteKey names a line site for the whole run: its module, and its
// link-time address.
type siteKey struct {
	mi   int
	addr uint64
}

// lineTrampolines is the mechanism of line sites in-process. Its counters
// are the sites', not the lines': two lines may share a site (an inlined
// call's line and its callee's first line) and a line may have several
// (one for each function it was compiled into); collect gives each line
// the sum of its sites.
type lineTrampolines struct {
	t     *tracer
	cover bool
	// index is each site's counter; lines are the lines of each counter's
	// site. Both come from the plan, so that a library loaded twice
	// counts into the same counters. alias gives, for a site that shares
	// the count of an earlier site of its block, that site's counter.
	index map[siteKey]int
	lines [][]int
	alias map[int]int
	// save is the offset in a thread's block where the count code may
	// save a register (instr.Instrumenter.LineCode).
	save uint64
	// goModules marks the modules written in Go.
	goModules map[int]bool
	// fellBack are the sites of the module being planted that keep a
	// breakpoint, and patched counts the others (reportFallBacks).
	fellBack []lineFallBack
	patched  int
	// punPages are the pages mapped for punned jumps' trampolines: each
	// its address and where its free room starts.
	punPages [][2]uint64
	// sweep takes covered lines' jumps out (coverage; linesweep.go).
	sweep *sweeper
}

// lineFallBack is a line site that keeps a breakpoint, and why.
type lineFallBack struct {
	line int
	addr uint64
	err  error
}

// newLineTrampolines numbers the line sites of the plan.
func newLineTrampolines(t *tracer) *lineTrampolines {
	lt := &lineTrampolines{t: t, cover: t.plan.Method.IsCoverage(), index: map[siteKey]int{}, alias: map[int]int{}, goModules: map[int]bool{}}
	if lt.cover {
		lt.sweep = &sweeper{}
	}
	for i, l := range t.plan.Lines {
		for _, a := range l.Addrs {
			k := siteKey{l.Module, a}
			n, ok := lt.index[k]
			if !ok {
				n = len(lt.lines)
				lt.index[k] = n
				lt.lines = append(lt.lines, nil)
			}
			lt.lines[n] = append(lt.lines[n], i)
		}
	}
	lt.save = uint64(len(lt.lines)) * 8
	return lt
}

// counters is the number of counters a block needs: one for each site,
// and the save slot.
func (lt *lineTrampolines) counters() int { return len(lt.lines) + 1 }

// Reasons for a line site's breakpoint that are not the architecture's.
var (
	errIndirectInto = errors.New("an indirect jump may land in the instructions a jump would replace")
	errNextSite     = errors.New("the next line's site is within a jump's length")
	errNoPunPage    = errors.New("no page can be mapped where a punned jump lands")
	errGoLines      = errors.New("code in Go, whose lines keep breakpoints in this version")
)

// plant patches the line sites of planting p that a jump fits, and leaves
// the others in p for the breakpoints. A patch of a site's instruction
// alone is always safe: every other instruction starts where it did.
// One that replaces the next instructions too is taken only where
// nothing lands among them (targets): no direct jump or call, no code
// pointer of the module's data, no entry of a jump table. Where such a
// window covers the next lines' sites, nothing lands on them either, so
// they are reached only through the site's instructions: the one
// trampoline counts them too, each before its instruction.
func (lt *lineTrampolines) plant(p *planting) error {
	t := lt.t
	if !p.lines || p.lineSites == nil || p.lineSites.left == 0 || !p.area.mapped() {
		return nil
	}
	ls := p.lineSites
	all := ls.addrs
	if lt.isGo(p.mi) {
		// A Go program crashed with its lines' probes in place (a fault
		// in a goroutine whose traceback did not unwind, gostacks): not
		// understood yet, so Go's lines keep breakpoints.
		for k, a := range all {
			lt.fellBack = append(lt.fellBack, lineFallBack{line: ls.lines[k][0], addr: a, err: errGoLines})
		}
		return nil
	}
	lt.punPages = nil // (they go with their module)
	targets := sync.OnceValue(func() landings { return t.indirectTargets(p) })
	addrs, shared := all, [][2]uint64(nil)
	if !t.cfg.EveryLineSite {
		addrs, shared = lt.shareBlocks(p, all, targets())
	}
	plans := make([]linePatch, len(addrs))
	inParallel(len(addrs), func(n int) { plans[n].p, plans[n].err = lt.planSite(p, addrs[n]) })
	lt.join(addrs, plans, targets)
	for n := range plans {
		if plans[n].err == nil && plans[n].sites != nil {
			plans[n].cell = p.area.alloc(lineCell)
		}
	}
	inParallel(len(plans), func(n int) {
		if pl := &plans[n]; pl.err == nil && pl.sites != nil {
			pl.j, pl.err = lt.trampoline(p, pl)
		}
	})
	lt.pun(p, addrs, plans, shared, targets())
	for n := range addrs {
		pl := &plans[n]
		if pl.err != nil {
			sites := pl.sites
			if sites == nil {
				sites = addrs[n : n+1]
			}
			for _, a := range sites {
				lt.fellBack = append(lt.fellBack, lineFallBack{line: ls.lines[ls.find(a)][0], addr: a, err: pl.err})
			}
			continue
		}
		if pl.sites == nil {
			continue // (joined to an earlier site's)
		}
		if pl.punned {
			if err := t.mem.WriteMem(pl.cell, pl.j.code); err != nil {
				return fmt.Errorf("write a trampoline: %w", err)
			}
		} else {
			p.area.put(pl.j.tramp.addr, pl.j.code)
		}
		p.jumps = append(p.jumps, pl.j)
		t.counters.add(pl.j.tramp)
		for _, a := range pl.sites {
			ls.take(a)
			lt.patched++
		}
	}
	for _, ba := range shared {
		b, a := ba[0], ba[1]
		if !ls.taken(a) {
			continue // (the site it shares with keeps a breakpoint: so does it)
		}
		lt.alias[ls.counter[ls.find(b)]] = ls.counter[ls.find(a)]
		ls.take(b)
		lt.patched++
	}
	if lt.sweep != nil {
		// (A punned jump after the patches whose bytes it shares.)
		for _, punned := range []bool{false, true} {
			for n := range plans {
				if pl := &plans[n]; pl.err == nil && pl.sites != nil && pl.punned == punned {
					lt.sweep.add(pl.j.tramp, lt.siteCounters(p, pl.sites), pl.shares)
				}
			}
		}
	}
	return nil
}

// siteCounters returns the counters of sites, of planting p.
func (lt *lineTrampolines) siteCounters(p *planting, sites []uint64) []int {
	ks := make([]int, len(sites))
	for i, a := range sites {
		ks[i] = p.lineSites.counter[p.lineSites.find(a)]
	}
	return ks
}

// shareBlocks returns, of the line sites addrs of planting p, those that
// need a probe, and for each of the others the site whose count is its
// own: the first site of its run of straight code, where nothing lands
// after it (targets) and every instruction falls through to the next
// (instr.StraightTo), whatever passes at one passes at the other. A
// signal handler that does not return (a longjmp out of it) between the
// two would count the second once too often.
func (lt *lineTrampolines) shareBlocks(p *planting, addrs []uint64, targets landings) ([]uint64, [][2]uint64) {
	t := lt.t
	var shared [][2]uint64 // a site, and the one it shares with
	probed := make([]uint64, 0, len(addrs))
	root := uint64(0) // the site the last one shares with, or itself
	for n, b := range addrs {
		if n > 0 && !targets.has(b) && !targets.inside(addrs[n-1], b) &&
			instr.StraightTo(t.arch, p.text.b[addrs[n-1]-p.text.start:], addrs[n-1], b) {
			shared = append(shared, [2]uint64{b, root})
			continue
		}
		probed = append(probed, b)
		root = b
	}
	return probed, shared
}

// linePatch is the patch of a line site, planned (p, or why not: err),
// the sites whose counts its trampoline runs (the site's, and those of
// the next sites its window covers; nil for a site joined to an earlier
// one's), and where it goes.
type linePatch struct {
	p     instr.Patch
	err   error
	sites []uint64
	cell  uint64
	j     patchWrite
	// punned marks a punned jump, whose trampoline is in a page of its
	// own where the jump lands (lineTrampolines.pun), and shares lists
	// the patches whose first bytes are its last.
	punned bool
	shares []uint64
}

// planSite plans the patch of the line site at addr, in planting p: whole
// instructions from the site, at least a jump's length.
func (lt *lineTrampolines) planSite(p *planting, addr uint64) (instr.Patch, error) {
	t := lt.t
	end := min(addr+lineCell/2, p.text.start+uint64(len(p.text.b)))
	fn := p.text.b[addr-p.text.start : end-p.text.start]
	return t.arch.PlanPatch(fn[:instr.WholeInsts(t.arch, fn, addr)], addr, addr)
}

// join decides which planned patches of the sites addrs are taken: a
// patch of several instructions only where no target lands inside it,
// and one that covers the next sites only where none of them is a
// target and each begins an instruction of the patch, those sites then
// joined to it.
func (lt *lineTrampolines) join(addrs []uint64, plans []linePatch, targets func() landings) {
	for n := 0; n < len(addrs); n++ {
		pl := &plans[n]
		if pl.err != nil {
			continue
		}
		m := n + 1
		for m < len(addrs) && addrs[m] < pl.p.End() {
			m++
		}
		if len(pl.p.Insts) > 1 && targets().inside(pl.p.Site, pl.p.End()) {
			pl.err = errIndirectInto
			if m > n+1 {
				pl.err = errNextSite
			}
			continue
		}
		for _, a := range addrs[n+1 : m] {
			if instIndex(&pl.p, a) < 0 {
				pl.err = errNextSite
			}
		}
		if pl.err != nil {
			continue
		}
		pl.sites = addrs[n:m]
		for k := n + 1; k < m; k++ {
			plans[k] = linePatch{}
		}
		n = m - 1
	}
}

// pun gives a punned jump (instr.Patcher.PlanPunPatchTo) to each site of
// planting p whose own patch would cover a place where something lands
// or may land (the next site among them, after a jump or a call, a
// target): the jump replaces the instructions before that place, and its
// last bytes are the bytes there as they will be, the program's own or
// the first bytes of the next site's jump (e9patch's punning, chained).
// Its trampoline must lie in the window those bytes give, in a page
// mapped there (punCell). The jumps' trampolines are built by then
// (plans), and no later patch changes the bytes a punned jump shares.
func (lt *lineTrampolines) pun(p *planting, addrs []uint64, plans []linePatch, shared [][2]uint64, targets landings) {
	t := lt.t
	var taken, punned spans
	for n := range plans {
		if pl := &plans[n]; pl.err == nil && pl.sites != nil {
			taken = append(taken, [2]uint64{pl.p.Site, pl.p.End()})
		}
	}
	slices.SortFunc(taken, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	for n, addr := range addrs {
		pl := &plans[n]
		if pl.err == nil || !punnable(pl.err) || pl.sites != nil {
			continue
		}
		stop, sites := lt.punStop(p, addr, addrs[n:], targets)
		if stop == 0 {
			continue
		}
		if taken.covers(addr, stop) || punned.covers(addr, addr+hopLen) || brokenPun(addrs, plans, shared, addr, stop) {
			pl.err = fmt.Errorf("%w; a punned jump: %w", pl.err, errOverlap)
			continue
		}
		end := min(addr+lineCell/2, p.text.start+uint64(len(p.text.b)))
		code := slices.Clone(p.text.b[addr-p.text.start : end-p.text.start])
		var shares []uint64
		for k := n + 1; k < len(addrs) && addrs[k] < addr+hopLen; k++ {
			if o := &plans[k]; o.err == nil && o.sites != nil {
				copy(code[o.p.Site-addr:], o.j.jump) // (the bytes shared are the next jump's)
				shares = append(shares, o.p.Site)
			}
		}
		pt, lo, hi, err := t.arch.PlanPunPatchTo(code, addr, addr, stop)
		var cell uint64
		if err == nil {
			cell, err = lt.punCell(p, lo, hi)
		}
		var j patchWrite
		if err == nil {
			try := linePatch{p: pt, sites: sites, cell: cell}
			j, err = lt.trampoline(p, &try)
		}
		if err != nil {
			pl.err = fmt.Errorf("%w; a punned jump: %w", pl.err, err)
			continue
		}
		*pl = linePatch{p: pt, sites: sites, cell: cell, j: j, punned: true, shares: shares}
		for k := 1; k < len(sites); k++ {
			plans[n+k] = linePatch{}
		}
		punned = append(punned, [2]uint64{addr, addr + hopLen}) // (in order)
	}
}

// brokenPun reports whether a line site in [stop, site+5), the bytes a
// punned jump at site shares with the code after it, may keep a
// breakpoint, whose byte would change where the jump lands: a site
// probed (addrs, with plans) whose patch failed, or one sharing the
// count of such a site (shared, sorted) other than the punned one.
func brokenPun(addrs []uint64, plans []linePatch, shared [][2]uint64, site, stop uint64) bool {
	lo, hi := stop, site+hopLen
	failed := func(a uint64) bool {
		k, ok := slices.BinarySearch(addrs, a)
		return a != site && (!ok || plans[k].err != nil)
	}
	for k := sort.Search(len(addrs), func(k int) bool { return addrs[k] >= lo }); k < len(addrs) && addrs[k] < hi; k++ {
		if plans[k].err != nil {
			return true
		}
	}
	for k := sort.Search(len(shared), func(k int) bool { return shared[k][0] >= lo }); k < len(shared) && shared[k][0] < hi; k++ {
		if failed(shared[k][1]) {
			return true
		}
	}
	return false
}

// punnable reports whether a site that could not be patched for reason
// err may take a punned jump: where its patch would have covered a place
// something lands on, or run past the code's end.
func punnable(err error) bool {
	return errors.Is(err, errNextSite) || errors.Is(err, errIndirectInto) || errors.Is(err, instr.ErrTooShort) || errors.Is(err, instr.ErrBranchInto)
}

// punStop returns where a punned jump at the line site addr (sites the
// sites from it on, in order) must stop replacing instructions: at the
// first place within a jump's length where something lands or may land
// (targets), or after the first jump, return or call; 0 where there is
// no such place, or an instruction does not decode. It returns the sites
// before that place too, which the jump's trampoline counts.
func (lt *lineTrampolines) punStop(p *planting, addr uint64, sites []uint64, targets landings) (uint64, []uint64) {
	t := lt.t
	in := sites[:1]
	for a := addr; a < addr+hopLen; {
		if a > addr && targets.has(a) {
			return a, in
		}
		if len(in) < len(sites) && sites[len(in)] == a && a > addr {
			in = sites[:len(in)+1]
		}
		if a < p.text.start || a >= p.text.start+uint64(len(p.text.b)) {
			return 0, nil
		}
		x, err := t.arch.Decode(p.text.b[a-p.text.start:], a)
		if err != nil {
			return 0, nil
		}
		a += uint64(x.Len)
		if x.Kind == instr.Jump || x.Kind == instr.Ret || x.Kind == instr.Call {
			return a, in
		}
	}
	return 0, nil
}

// punCell returns room for a line trampoline at an address in [lo, hi),
// the window of a punned jump: in a page already mapped for one, or in a
// page mapped in the window (a few tries), noted to be unmapped with the
// module of planting p.
func (lt *lineTrampolines) punCell(p *planting, lo, hi uint64) (uint64, error) {
	t := lt.t
	const lowest, top = 1 << 20, 1 << 47
	if lo < lowest || hi > top || hi <= lo {
		return 0, errNoPunPage
	}
	for i := range lt.punPages {
		pg := &lt.punPages[i]
		if at := max(pg[1], lo); at < hi && at+lineCell <= pg[0]+t.pageSize {
			pg[1] = at + lineCell
			return at, nil
		}
	}
	for try, page := 0, lo&^(t.pageSize-1); try < 4 && page < hi; try, page = try+1, page+t.pageSize {
		at := max(lo, page)
		if at+lineCell > page+t.pageSize {
			continue
		}
		if _, err := t.mmap(page, t.pageSize); err != nil {
			continue
		}
		t.areas[p.in.first.Start] = append(t.areas[p.in.first.Start], [2]uint64{page, t.pageSize})
		lt.punPages = append(lt.punPages, [2]uint64{page, at + lineCell})
		return at, nil
	}
	return 0, errNoPunPage
}

// instIndex returns the index of the instruction of p that begins at
// addr, or -1.
func instIndex(p *instr.Patch, addr uint64) int {
	at := p.Site
	for i, in := range p.Insts {
		if at == addr {
			return i
		}
		at += uint64(in.Len)
	}
	return -1
}

// trampoline builds the trampoline of line patch pl, of planting p, at
// its cell: each of its sites' counts before the site's instruction (the
// first site's before the patch's first instruction, which is the site's
// own or the one after its landing pad), the instructions relocated, and
// the jump back.
func (lt *lineTrampolines) trampoline(p *planting, pl *linePatch) (patchWrite, error) {
	t := lt.t
	pt := pl.p
	pt.Before = make([][]byte, len(pt.Insts))
	// Each site's count goes before its instruction, after the counts
	// already there: a site at a landing pad and the next, at the
	// instruction after it where the patch starts, count one after the
	// other.
	type placed struct {
		inst, off int
		rollback  []instr.Rollback
	}
	var counts []placed
	first := 0 // where the first count reads its counter (--explain)
	for k, a := range pl.sites {
		code, ok := t.arch.LineCode(t.counters.kind, instr.LineSite{
			Counter: t.counters.counterRef(p.lineSites.counter[p.lineSites.find(a)]), Save: lt.save,
			Cover: lt.cover, NoFlags: !lt.cover && t.arch.FlagsDead(p.text.b[a-p.text.start:], a),
		})
		if !ok {
			return patchWrite{}, fmt.Errorf("no count code: %w", instr.ErrNoCounting)
		}
		i := 0
		if k > 0 {
			i = instIndex(&pt, a)
		} else {
			first = code.Count
		}
		counts = append(counts, placed{i, len(pt.Before[i]), code.Rollback})
		pt.Before[i] = append(pt.Before[i], code.Code...)
	}
	tr, err := t.arch.Trampoline(&pt, pl.cell, nil)
	if err != nil {
		return patchWrite{}, err
	}
	if len(tr.Code) > lineCell {
		return patchWrite{}, fmt.Errorf("trampoline of %d bytes: %w", len(tr.Code), instr.ErrNotRelocatable)
	}
	jump, err := t.arch.PatchJump(&pt, pl.cell)
	if err != nil {
		return patchWrite{}, err
	}
	tp := &tramp{addr: pl.cell, patch: pt, code: tr}
	for _, c := range counts {
		if len(c.rollback) > 0 {
			at := int(tr.PCs[c.inst].Tramp-pl.cell) - len(pt.Before[c.inst]) + c.off
			tp.regions = append(tp.regions, region{at: at, rollback: c.rollback})
		}
	}
	return patchWrite{addr: pt.Site, jump: jump, code: tr.Code, tramp: tp, count: first}, nil
}

// isGo reports whether module mi is written in Go (it has Go's build
// information), read once.
func (lt *lineTrampolines) isGo(mi int) bool {
	is, ok := lt.goModules[mi]
	if !ok {
		is = elfid.ReadIsGo(lt.t.plan.Modules[mi].Path)
		lt.goModules[mi] = is
	}
	return is
}

// indirectTargets returns where, in the module of planting p, jumps may
// land that the code's decoding does not follow, with the direct ones:
// the landings of direct jumps and calls, the functions' starts, the code
// pointers of the module's data (elfid.CodePointers), and the entries of
// the jump tables its code refers to (jumpTables), where instructions
// begin. Sorted.
func (t *tracer) indirectTargets(p *planting) landings {
	path := t.plan.Modules[p.mi].Path
	if mapped := p.in.first.Path; mapped != "" {
		path = mapped
	}
	out := slices.Clone(t.scan.landings)
	for _, a := range elfid.ReadFuncStarts(path) {
		out = append(out, a+p.bias)
	}
	for _, a := range elfid.ReadCodePointers(path) {
		out = append(out, a+p.bias)
	}
	out = append(out, t.jumpTables(p)...)
	slices.Sort(out)
	// (A place inside an instruction of the decoding is no target: a
	// number that looks like a pointer, a table read past its end.)
	return slices.DeleteFunc(slices.Compact(out), func(a uint64) bool {
		cm := t.scan.code.at(a)
		return cm != nil && cm.Boundary(a) != nil
	})
}

// maxTable bounds the entries read from one jump table.
const maxTable = 1 << 16

// jumpTables returns the entries of the jump tables that the code of the
// module of planting p refers to, as GCC and Clang lay out a switch's
// table in position-independent code: 32-bit offsets from the table's
// start, which a PC-relative lea or adr loads. Every address the code
// refers to outside its code is taken for a table, and its words read as
// offsets until one leads out of the code (e9patch's recovery of
// control flow does the same): a string read so leads nowhere at its
// first word.
func (t *tracer) jumpTables(p *planting) []uint64 {
	var refs []uint64
	for _, cm := range t.scan.code {
		refs = append(refs, cm.Refs...)
	}
	inCode := func(a uint64) bool { return t.scan.code.at(a) != nil }
	var out []uint64
	for _, m := range p.maps {
		if m.Inode != p.in.first.Inode || m.Path != p.in.first.Path || m.Start < p.in.lo || m.End > p.in.hi ||
			m.Perms[0] != 'r' || m.Perms[2] == 'x' || m.End-m.Start > 1<<28 {
			continue
		}
		lo := slices.IndexFunc(refs, func(r uint64) bool { return r >= m.Start })
		if lo < 0 || refs[lo] >= m.End {
			continue
		}
		data := make([]byte, m.End-m.Start)
		if err := t.mem.ReadMem(m.Start, data); err != nil {
			continue
		}
		for _, r := range refs[lo:] {
			if r >= m.End {
				break
			}
			for off := r - m.Start; off+4 <= uint64(len(data)) && off < r-m.Start+4*maxTable; off += 4 {
				e := r + uint64(int64(int32(binary.LittleEndian.Uint32(data[off:]))))
				if !inCode(e) {
					break
				}
				out = append(out, e)
			}
		}
	}
	return out
}

// stop claims no stop: a line trampoline has no breakpoint.
func (lt *lineTrampolines) stop(*thread, uint64) (bool, error) { return false, nil }

// forget drops the coverage patches in [lo, hi); the trampolines are
// the counters' (counters.forget), and the counts stay.
func (lt *lineTrampolines) forget(lo, hi uint64) {
	if lt.sweep != nil {
		lt.sweep.forget(lo, hi)
	}
}

// collect gives each line the counts of its sites: their sum, or for
// coverage one where any ran.
func (lt *lineTrampolines) collect(*Result) {
	t := lt.t
	totals := t.counters.totals(len(lt.lines))
	for b, a := range lt.alias {
		totals[b] += totals[a]
	}
	for k, n := range totals {
		if n == 0 {
			continue
		}
		for _, i := range lt.lines[k] {
			if lt.cover {
				t.hits[i] = 1
			} else {
				t.hits[i] += n
			}
		}
	}
}

// report warns about the line sites of the module just planted that keep
// a breakpoint (PRF4673), by reason, and with --verbose about each.
func (lt *lineTrampolines) report() {
	t := lt.t
	if len(lt.fellBack) > 0 {
		reasons := t.byReason(len(lt.fellBack), func(n int) error { return lt.fellBack[n].err }, func(n int) *prf.Diagnostic {
			fb := &lt.fellBack[n]
			l := &t.plan.Lines[fb.line]
			return prf.LineNotPatched(l.Line, t.lineFile(l), t.plan.Modules[l.Module].Name, fb.addr, fb.err)
		})
		t.cfg.Warn(prf.BreakpointLines(len(lt.fellBack), len(lt.fellBack)+lt.patched, reasons))
	}
	lt.fellBack, lt.patched = nil, 0
}
