// Line sites in-process: the mechanism of line profiles wherever a jump
// fits. Each line site's instruction (with the next ones, where the first
// is shorter than a jump and nothing can land among them) is replaced by a
// jump to a trampoline that adds one to the site's counter in the
// thread's block, or sets it (coverage), then runs the replaced
// instructions and jumps back. The sites no jump fits keep their
// breakpoints (lines.go), reported by reason (PRF4673).

package profile

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/elfid"
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
	env   lineEnv
	cover bool
	// index is each site's counter; lines are the lines of each counter's
	// site. Both come from the plan, so that a library loaded twice
	// counts into the same counters. alias gives, for a site that shares
	// the count of an earlier site of its block, that site's counter.
	index *siteIndex
	lines [][]int
	alias map[int]int
	// solvers give the counts of the sites counted by flow
	// (lineflow.go) from the others', a solver for each module planted.
	solvers []*flowSolver
	// save is the offset in a thread's block where the count code may
	// save a register (instr.Instrumenter.LineCode).
	save uint64
	// goModules marks the modules written in Go.
	goModules map[int]bool
	// fellBack are the sites of the module being planted that keep a
	// breakpoint, and patched counts the others (reportFallBacks).
	fellBack []lineFallBack
	patched  int
	// unprobed are the branches of the module being planted that keep
	// breakpoints (branches.go), and branches counts them all.
	unprobed []lineFallBack
	branches int
	// hosted counts the sites whose count an instruction after them
	// keeps (linehosts.go).
	hosted int
	// sweep takes covered lines' jumps out (coverage; linesweep.go).
	sweep *sweeper
}

// lineFallBack is a line site that keeps a breakpoint, and why.
type lineFallBack struct {
	line int
	addr uint64
	err  error
}

// lineEnv is what the lines' trampolines read and call of the run: the
// plan and the options that bear on it, the program's memory (the
// tracer's, or the injector's while it borrows a thread: a sweep writes
// through it) and threads, the process (a sweep interrupts the threads),
// the planting engine, the counters, the lines' hits, the watch (the
// jumps written, those swept dropped from them), the narration of sweeps
// and the loop's way to let a thread go (goOn). The counters are made after the lines are numbered: they come
// in tracer.choose.
type lineEnv struct {
	plan     *datafile.Plan
	arch     instr.Arch
	every    bool // --every-line-site
	verbose  bool
	warn     func(*prf.Diagnostic)
	mem      *instr.Memory
	proc     process
	threads  map[int]*thread
	plant    *planter
	counters *counters
	hits     []uint64
	ways     []uint64
	watch    *watch
	told     observers
	// goOn lets a thread a sweep held go on, as the loop would have at
	// its interrupt's stop.
	goOn func(th *thread) error
}

// newLineTrampolines returns the lines' trampolines of t's run, given
// what they need of it (lineEnv), the line sites of the plan numbered.
func newLineTrampolines(t *tracer) *lineTrampolines {
	return numberLines(lineEnv{
		plan: t.plan, arch: t.arch, every: t.cfg.EveryLineSite, verbose: t.cfg.Verbose, warn: t.cfg.Warn,
		mem: &t.mem, proc: t.proc, threads: t.threads, plant: t.parts.plant, counters: t.parts.counters,
		hits: t.counted.hits, ways: t.counted.ways, watch: &t.parts.watch, told: t.told, goOn: func(th *thread) error { return afterInterrupt(t, th) },
	})
}

// numberLines returns the lines' trampolines over env, the line sites of
// its plan numbered.
func numberLines(env lineEnv) *lineTrampolines {
	lt := &lineTrampolines{env: env, cover: env.plan.Method.IsCoverage(), alias: map[int]int{}, goModules: map[int]bool{}}
	if lt.cover {
		lt.sweep = &sweeper{}
	}
	lt.index, lt.lines = numberSites(env.plan.Lines)
	lt.save = uint64(len(lt.lines)) * 8
	return lt
}

// counters is the number of counters a block needs: one for each site,
// the save slot, and two for each branch (wayCounter).
func (lt *lineTrampolines) counters() int { return len(lt.lines) + 1 + 2*len(lt.env.plan.Branches) }

// errGoAssembly is why a line of Go assembly keeps a breakpoint where the
// count needs registers Go's compiler leaves free (arm64's x27: LineCode).
var errGoAssembly = errors.New("a line of Go assembly, whose registers the count cannot borrow")

// plant patches the line sites of planting p that a jump fits, and
// leaves the others in p for the breakpoints. Each patch writes over its
// site's instruction alone (instr.Layout: a punned jump where the
// instruction is shorter than a jump, the next instruction moved out to
// a trampoline of its own where no window has room), so whatever lands
// anywhere else, seen or not, finds the program's own instructions, or a
// jump to a trampoline that runs the one it replaced. The sites are
// planned from the highest down, each knowing the bytes after it as they
// will be.
func (lt *lineTrampolines) plant(p *planting) error {
	e := &lt.env
	if !p.lines || p.lineSites == nil || p.lineSites.left == 0 || !p.area.mapped() {
		return nil
	}
	ls := p.lineSites
	all := ls.addrs
	for _, b := range ls.branch {
		if b >= 0 {
			lt.branches++
		}
	}
	targets := sync.OnceValue(func() landings { return e.plant.indirectTargets(p) })
	addrs, shared, flow := all, [][2]uint64(nil), (*flowPlacement)(nil)
	if !e.every {
		addrs, shared, flow = lt.shareBlocks(p, all, targets())
	}
	lay := e.plant.layout(p)
	lay.Sites(addrs)
	for n := len(addrs) - 1; n >= 0; n-- {
		pl, err := lay.Plan(addrs[n], lt.build(p, addrs[n], addrs[n]))
		if err != nil && ls.siteBranch(ls.find(addrs[n])) < 0 && lt.host(p, lay, addrs, n, targets()) {
			continue // (a branch's ways are told at the branch alone)
		}
		if err != nil {
			lt.noteFallBack(p, addrs[n], err)
			lt.fellBack = append(lt.fellBack, lineFallBack{line: ls.siteLine(e.plan, ls.find(addrs[n])), addr: addrs[n], err: err})
			lay.Unstable(addrs[n], len(e.arch.Breakpoint()))
			continue
		}
		lt.put(p, addrs[n], addrs[n], pl)
		ls.take(addrs[n])
		lt.patched++
	}
	lt.deriveSites(p, flow)
	for _, ba := range shared {
		b, a := ba[0], ba[1]
		if !ls.taken(a) {
			continue // (the site it shares with keeps a breakpoint: so does it)
		}
		lt.alias[ls.counter[ls.find(b)]] = ls.counter[ls.find(a)]
		ls.take(b)
		lt.patched++
	}
	return nil
}

// siteCounters returns the counters of sites, of planting p.
func (lt *lineTrampolines) siteCounters(p *planting, sites []uint64) []int {
	ks := make([]int, 0, len(sites))
	for _, a := range sites {
		if k := p.lineSites.counter[p.lineSites.find(a)]; k >= 0 {
			ks = append(ks, k) // (a branch's site alone has none)
		}
	}
	return ks
}

// shareBlocks returns, of the line sites addrs of planting p, those that
// need a probe, and for each of the others the site whose count is its
// own: the first site of its run of straight code, where nothing lands
// after it (targets) and every instruction falls through to the next
// (instr.StraightTo), whatever passes at one passes at the other. In a
// function with an indirect jump (a jump table's, a computed goto's),
// whose landings no decoding can know for sure, every site is probed,
// but for a site just after a landing pad that guards it
// (instr.Arch.PadGuards: BTI's): the pad's own patch is the site's
// instruction, and no indirect jump lands there. A signal handler that
// does not return (a longjmp out of it) between the two would count the
// second once too often. The sites of the functions whose flow is proven
// are placed by flow instead (placeByFlow, lineflow.go): the placement
// is returned, for plant to take its derived sites once it knows which
// probes it planted.
func (lt *lineTrampolines) shareBlocks(p *planting, addrs []uint64, targets landings) ([]uint64, [][2]uint64, *flowPlacement) {
	e := &lt.env
	flow, byFlow := lt.placeByFlow(p, addrs, targets)
	var shared [][2]uint64 // a site, and the one it shares with
	probed := make([]uint64, 0, len(addrs))
	if flow != nil {
		shared, probed = append(shared, flow.shared...), append(probed, flow.probes...)
	}
	root := uint64(0) // the site the last one shares with, or itself
	for n, b := range addrs {
		if byFlow[n] {
			continue
		}
		if n > 0 && !byFlow[n-1] && !targets.has(b) && !targets.inside(addrs[n-1], b) && p.lineSites.siteBranch(p.lineSites.find(b)) < 0 &&
			(!e.plant.scan.code.inIndirect(b) || lt.guarded(p, addrs[n-1], b)) &&
			instr.StraightTo(e.arch, p.text.b[addrs[n-1]-p.text.start:], addrs[n-1], b) {
			shared = append(shared, [2]uint64{b, root})
			continue
		}
		probed = append(probed, b)
		root = b
	}
	slices.Sort(probed)
	return probed, shared, flow
}

// guarded reports whether the line site b of planting p comes just after
// a landing pad at a that guards it (instr.Arch.PadGuards).
func (lt *lineTrampolines) guarded(p *planting, a, b uint64) bool {
	if !lt.env.arch.PadGuards(p.text.b[a-p.text.start:]) {
		return false
	}
	q, err := lt.env.arch.PlanOwn(p.text.b, p.text.start, a)
	return err == nil && q.Site == b
}

// put puts patch pl, at the instruction at at, of the count of the line
// site at site (at itself, or a host after it: linehosts.go), and what
// it moved out, into planting p (putPlanned), with the count's region a
// signal rolls a thread out of; for coverage, each patch to be taken out
// once its site's lines are covered, after the patches that lean on it.
func (lt *lineTrampolines) put(p *planting, site, at uint64, pl *instr.Planned) {
	code, _ := lt.lineCode(p, site, at)
	tramps := lt.env.plant.putPlanned(p, pl, func(x *instr.Planned) []region {
		if x != pl || len(code.Rollback) == 0 {
			return nil
		}
		return []region{{at: 0, rollback: code.Rollback}}
	}, code.Count)
	if lt.sweep == nil {
		return
	}
	for i, tp := range tramps {
		var counters []int
		if i == len(tramps)-1 {
			counters = lt.siteCounters(p, []uint64{site})
			if b := p.lineSites.siteBranch(p.lineSites.find(site)); b >= 0 {
				counters = append(counters, lt.wayCounter(b, 0), lt.wayCounter(b, 1))
			}
		}
		lt.sweep.add(tp, counters, leansOf(pl, tp.patch.Site))
	}
}

// leansOf returns the sites whose patches the patch at site, pl or one
// it moved out, leans on.
func leansOf(pl *instr.Planned, site uint64) []uint64 {
	for _, x := range append([]*instr.Planned{pl}, pl.Evicted...) {
		if x.Patch.Site == site {
			return x.Leans
		}
	}
	return nil
}

// build returns the builder of the trampoline, at the instruction at at,
// of the count of the line site at site (at itself, or a host after it),
// in planting p: the count (instr.Instrumenter.LineCode), then the
// instruction relocated, then the jump back.
func (lt *lineTrampolines) build(p *planting, site, at uint64) instr.Build {
	arch := lt.env.arch
	k := p.lineSites.find(site)
	var code instr.DepthCode
	ok := true
	if p.lineSites.counter[k] >= 0 {
		code, ok = lt.lineCode(p, site, at)
	}
	var ways [][2][]byte
	if b := p.lineSites.siteBranch(k); b >= 0 && ok {
		var w [2][]byte
		w, ok = lt.waysCode(p, b, site)
		ways = [][2][]byte{w}
	}
	return func(pt *instr.Patch, addr uint64) (instr.Trampoline, error) {
		if !ok && lt.goAsm(p, site) {
			return instr.Trampoline{}, fmt.Errorf("%w: %w", errGoAssembly, instr.ErrNoCounting)
		}
		if !ok {
			return instr.Trampoline{}, fmt.Errorf("no count code: %w", instr.ErrNoCounting)
		}
		q := *pt
		q.Before = [][]byte{code.Code}
		if ways != nil {
			if len(q.Insts) == 0 || q.Insts[0].Kind != instr.CondJump {
				return instr.Trampoline{}, fmt.Errorf("a branch's site whose patch does not begin with it: %w", instr.ErrNotRelocatable)
			}
			q.Ways = ways
		}
		return arch.Trampoline(&q, addr, nil)
	}
}

// lineCode returns the count of the line site at site, in planting p,
// run before the instruction at at (the site's own, or a host's): without
// touching the flags unless they are dead at at, and in Go's code without
// touching the goroutine's stack.
func (lt *lineTrampolines) lineCode(p *planting, site, at uint64) (instr.DepthCode, bool) {
	return lt.counterCode(p, p.lineSites.counter[p.lineSites.find(site)], site, at)
}

// coverCode returns the cover of counter k (a branch's way), in planting
// p: the counter set, neither flags nor registers changed.
func (lt *lineTrampolines) coverCode(p *planting, k int, site uint64) (instr.DepthCode, bool) {
	return lt.counterCode(p, k, site, site)
}

// counterCode is lineCode of counter k.
func (lt *lineTrampolines) counterCode(p *planting, k int, site, at uint64) (instr.DepthCode, bool) {
	e := &lt.env
	s := e.counters.layout.Site(k)
	s.Save, s.Cover = lt.save, lt.cover
	s.GoStack, s.GoAsm = lt.isGo(p.mi), lt.goAsm(p, site)
	s.ThreadPointer = s.GoStack && e.counters.threadPointers()
	s.NoFlags = !lt.cover && e.arch.FlagsDead(p.text.b, p.text.start, at)
	return e.arch.LineCode(e.counters.layout.Kind, s)
}

// goAsm reports whether the line site at addr, in planting p, is Go
// assembly: in a Go module, a line of a .s file.
func (lt *lineTrampolines) goAsm(p *planting, addr uint64) bool {
	if !lt.isGo(p.mi) {
		return false
	}
	plan := lt.env.plan
	return strings.HasSuffix(lineFile(plan, &plan.Lines[p.lineSites.siteLine(plan, p.lineSites.find(addr))]), ".s")
}

// isGo reports whether module mi is written in Go (it has Go's build
// information), read once.
func (lt *lineTrampolines) isGo(mi int) bool {
	is, ok := lt.goModules[mi]
	if !ok {
		is = elfid.ReadIsGo(lt.env.plan.Modules[mi].Path)
		lt.goModules[mi] = is
	}
	return is
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
	hits := lt.env.hits
	totals := lt.env.counters.totals(lt.counters())
	for _, s := range lt.solvers {
		counts := s.counts(func(k int) uint64 { return totals[k] })
		for i, d := range s.derived {
			totals[d.counter] = counts[i]
		}
	}
	for b, a := range lt.alias {
		totals[b] += totals[a]
	}
	lt.collectWays(totals)
	for k, n := range totals[:len(lt.lines)] {
		if n == 0 {
			continue
		}
		for _, i := range lt.lines[k] {
			if lt.cover {
				hits[i] = 1
			} else {
				hits[i] += n
			}
		}
	}
}

// report warns about the line sites of the module just planted that keep
// a breakpoint (PRF4673), by reason, and with --verbose about each.
func (lt *lineTrampolines) report() {
	e := &lt.env
	if len(lt.fellBack) > 0 {
		reasons := byReason(Config{Warn: e.warn, Verbose: e.verbose}, len(lt.fellBack), func(n int) error { return lt.fellBack[n].err }, func(n int) *prf.Diagnostic {
			fb := &lt.fellBack[n]
			l := &e.plan.Lines[fb.line]
			return prf.LineNotPatched(l.Line, lineFile(e.plan, l), e.plan.Modules[l.Module].Name, fb.addr, fb.err)
		})
		e.warn(prf.BreakpointLines(len(lt.fellBack), len(lt.fellBack)+lt.patched, reasons))
	}
	lt.reportUnprobed()
	lt.fellBack, lt.patched = nil, 0
}
