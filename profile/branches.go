package profile

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// Branch coverage (docs/linux.md, "Branch coverage"): a line coverage
// plan's conditional branches (datafile.Plan.Branches) each have a site
// of their own, among the lines' sites, at the branch instruction. In
// process, its patch's trampoline runs the branch relocated with a mark
// on each of its two ways (instr.Patch.Ways): the way to its target and
// the way on each set a counter of their own in the thread's block, as a
// line's cover does, and the patch is taken out once both are set (and
// the site's lines covered). Where no jump fits, the site keeps a
// breakpoint, which emulates the branch at each hit, marks the way it
// went and is taken out once both ways went. A branch's ways are
// counted at the branch, not at its targets: a target may be reached
// from elsewhere too (the join after an if), and a probe there would
// tell nothing of the branch.

// addBranchSites adds to sites, of module mi loaded with bias, the
// sites of the plan's branches there whose two ways, in ways, have not
// both gone (a library loaded again): a line site at the same address
// takes the branch too. A branch whose address is not on an instruction
// boundary of the code decoded is warned about (PRF4624) and left out.
func (pl *planter) addBranchSites(sites *lineSiteSet, mi int, bias uint64, ways []uint64) {
	type branchAt struct {
		addr uint64
		b    int
	}
	var found []branchAt
	for b := range pl.plan.Branches {
		br := &pl.plan.Branches[b]
		if pl.plan.Lines[br.Line].Module != mi || ways[2*b] != 0 && ways[2*b+1] != 0 {
			continue
		}
		if err := pl.scan.code.boundary(br.Addr + bias); err != nil {
			pl.warnBranch(b, fmt.Errorf("branch at %#x: %w; not planted", br.Addr, err))
			continue
		}
		found = append(found, branchAt{br.Addr + bias, b})
	}
	if len(found) == 0 {
		return
	}
	slices.SortFunc(found, func(a, b branchAt) int { return cmp.Compare(a.addr, b.addr) })
	n := len(sites.addrs) + len(found)
	addrs, lines, branch := make([]uint64, 0, n), make([][]int, 0, n), make([]int, 0, n)
	i, j := 0, 0
	for i < len(sites.addrs) || j < len(found) {
		switch {
		case j == len(found) || i < len(sites.addrs) && sites.addrs[i] < found[j].addr:
			addrs, lines, branch = append(addrs, sites.addrs[i]), append(lines, sites.lines[i]), append(branch, -1)
			i++
		case i < len(sites.addrs) && sites.addrs[i] == found[j].addr:
			addrs, lines, branch = append(addrs, sites.addrs[i]), append(lines, sites.lines[i]), append(branch, found[j].b)
			i, j = i+1, j+1
		default:
			addrs, lines, branch = append(addrs, found[j].addr), append(lines, nil), append(branch, found[j].b)
			j++
		}
	}
	sites.addrs, sites.lines, sites.branch = addrs, lines, branch
}

// checkBranchSites checks the branch sites of planting p against the
// code read: each must be a conditional branch to the plan's target.
// One that is not (the plan does not describe this program) is warned
// about (PRF4624) and left out: its site, if it has no line, is taken
// by no mechanism.
func (pl *planter) checkBranchSites(p *planting) {
	ls := p.lineSites
	decode := instr.BareDecoder(pl.arch)
	for k, b := range ls.branch {
		if b < 0 {
			continue
		}
		addr := ls.addrs[k]
		in, err := decode(p.text.b[addr-p.text.start:], addr)
		if err == nil && (in.Kind != instr.CondJump || in.Target != pl.plan.Branches[b].Target+p.bias) {
			err = fmt.Errorf("%s, not a conditional branch to %#x", in.Text, pl.plan.Branches[b].Target)
		}
		if err == nil {
			continue
		}
		pl.warnBranch(b, fmt.Errorf("branch at %#x: %w; not planted", pl.plan.Branches[b].Addr, err))
		ls.branch[k] = -1
		if len(ls.lines[k]) == 0 {
			ls.take(addr)
		}
	}
}

// warnBranch warns that branch b cannot be profiled (PRF4624, of its
// line).
func (pl *planter) warnBranch(b int, err error) {
	l := &pl.plan.Lines[pl.plan.Branches[b].Line]
	pl.warn(prf.CannotProfileLine(l.Line, lineFile(pl.plan, l), pl.plan.Modules[l.Module].Name, err))
}

// siteBranch returns the branch of the plan at site k of s, or -1.
func (s *lineSiteSet) siteBranch(k int) int {
	if s.branch == nil {
		return -1
	}
	return s.branch[k]
}

// siteLine returns a line of site k of s: its first, or its branch's.
func (s *lineSiteSet) siteLine(plan *datafile.Plan, k int) int {
	if len(s.lines[k]) > 0 {
		return s.lines[k][0]
	}
	return plan.Branches[s.branch[k]].Line
}

// wayCounter returns the counter of way w (0: to the target, 1: on) of
// branch b: after the sites' counters and the save slot.
func (lt *lineTrampolines) wayCounter(b, w int) int { return len(lt.lines) + 1 + 2*b + w }

// waysCode returns the marks of the two ways of branch b, in planting
// p: each a cover of its counter (instr.Instrumenter.LineCode), which
// keeps the flags and every register.
func (lt *lineTrampolines) waysCode(p *planting, b int, site uint64) ([2][]byte, bool) {
	var ways [2][]byte
	for w := range ways {
		d, ok := lt.coverCode(p, lt.wayCounter(b, w), site)
		if !ok || len(d.Rollback) > 0 {
			return ways, false
		}
		ways[w] = d.Code
	}
	return ways, true
}

// collectWays gives each branch's ways the counts of their counters: one
// where it went that way, in any thread.
func (lt *lineTrampolines) collectWays(totals []uint64) {
	ways := lt.env.ways
	for i := range ways {
		if k := len(lt.lines) + 1 + i; k < len(totals) && totals[k] != 0 {
			ways[i] = 1
		}
	}
}

// branchHit handles a hit of the breakpoint of branch site s by a thread
// of the program: the branch is emulated, the way it went marked, and
// the breakpoint taken out once both ways went and the site's lines are
// covered, or after branchStops stops, the branch then not counted;
// until then it stays, and the thread goes on where the branch sent
// it.
func (bp *breakpoints) branchHit(th *thread, s *site) error {
	e := &bp.env
	if s.pending && !bp.displaceLater(s) {
		return bp.retire(th, s)
	}
	d := &s.disp
	if d.Emulate == nil || d.Inst.Kind != instr.CondJump {
		return bp.retire(th, s)
	}
	if err := d.Emulate(e.regs, *e.mem); err != nil {
		return fmt.Errorf("emulate %s at %#x: %w", d.Inst.Text, s.addr, err)
	}
	w := 1
	if e.regs.PC() == d.Inst.Target {
		w = 0
	}
	b := s.branchOf()
	e.ways[2*b+w] = 1
	if bp.allCovered(s) {
		return bp.retire(th, s)
	}
	if s.hits++; s.hits >= branchStops {
		// (Its lines were covered at its first hit.)
		e.unprobed[b] = 1
		return bp.retire(th, s)
	}
	return e.loop.setAndResume(th, 0)
}

// allCovered reports whether every line of site s is covered and both
// ways of its branch, if it has one, went.
func (bp *breakpoints) allCovered(s *site) bool {
	if s.item >= 0 && !covered(bp.env.hits, s) {
		return false
	}
	b, ways := s.branchOf(), bp.env.ways
	return b < 0 || ways[2*b] != 0 && ways[2*b+1] != 0
}

// branchAt returns the plan's branch at link-time address addr of module
// mi, or -1 (the branches are by module, in order, and by address in
// each, as PREP writes them).
func branchAt(plan *datafile.Plan, mi int, addr uint64) int {
	bs := plan.Branches
	module := func(i int) int { return plan.Lines[bs[i].Line].Module }
	lo := sort.Search(len(bs), func(i int) bool { return module(i) >= mi })
	hi := sort.Search(len(bs), func(i int) bool { return module(i) > mi })
	if i, ok := slices.BinarySearchFunc(bs[lo:hi], addr, func(b datafile.Branch, a uint64) int { return cmp.Compare(b.Addr, a) }); ok {
		return lo + i
	}
	return -1
}

// branchStops is how many times a branch's breakpoint stops the
// program before it is taken out, when the branch has gone one way
// only: the loop of a program may pass a branch millions of times
// before it first goes the other way (its loop's end), a stop each. A
// branch taken out so is not counted in the run
// (datafile.Stats.Unprobed): its ways seen say nothing of the other.
const branchStops = 100

// noteFallBack notes, of the site at addr of planting p whose jump did
// not fit (err), its branch, which keeps a breakpoint (at most
// branchStops stops: warning PRF4687).
func (lt *lineTrampolines) noteFallBack(p *planting, addr uint64, err error) {
	if b := p.lineSites.siteBranch(p.lineSites.find(addr)); b >= 0 {
		lt.unprobed = append(lt.unprobed, lineFallBack{line: lt.env.plan.Branches[b].Line, addr: addr, err: err})
	}
}

// reportUnprobed warns about the branches of the module just planted
// that keep breakpoints (PRF4687), by reason, and with --verbose about
// each (PRF4674, of its line).
func (lt *lineTrampolines) reportUnprobed() {
	e := &lt.env
	if len(lt.unprobed) > 0 {
		reasons := byReason(Config{Warn: e.warn, Verbose: e.verbose}, len(lt.unprobed), func(n int) error { return lt.unprobed[n].err }, func(n int) *prf.Diagnostic {
			fb := &lt.unprobed[n]
			l := &e.plan.Lines[fb.line]
			return prf.LineNotPatched(l.Line, lineFile(e.plan, l), e.plan.Modules[l.Module].Name, fb.addr, fmt.Errorf("its branch, at most %d stops: %w", branchStops, fb.err))
		})
		mod := e.plan.Lines[lt.unprobed[0].line].Module
		e.warn(prf.BranchesUnprobed(len(lt.unprobed), lt.branches, e.plan.Modules[mod].Name, branchStops, reasons))
	}
	lt.unprobed, lt.branches = nil, 0
}
