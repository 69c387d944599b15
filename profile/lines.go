package profile

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/procmaps"
)

// Line profiles (docs/linux.md, "Debugging information"): every site of
// every line takes a breakpoint, as the original's did. Line counting
// keeps each for the whole run, a stop per hit, the thread stepping over
// the displaced instruction out of line; line coverage removes each at its
// first hit. Two lines may share a site (an inlined call's line and its
// callee's first line start at one address): a hit there counts for both.

// newLinePlanting prepares the planting of the lines of module mi,
// loaded with bias, mapped as in: its sites (a site where the module's
// code, decoded (planter.scan), has no instruction boundary is not
// planted, whatever the plan says: PRF4624), the module's code from the
// first to past the last, read once, and one area for the trampolines
// of the sites counted in-process and the slots of the others. Line
// coverage's branches have sites too, but those whose ways, in ways,
// both went (addBranchSites). It returns nil when there is nothing to
// plant.
func (pl *planter) newLinePlanting(mi int, bias uint64, in procmaps.Instance, maps []procmaps.Mapping, hits, ways []uint64, lt *lineTrampolines) *planting {
	type siteLine struct {
		addr uint64
		line int
	}
	var pairs []siteLine
	coverage := pl.plan.Method.IsCoverage()
	for i, l := range pl.plan.Lines {
		if l.Module != mi || (coverage && hits[i] != 0) {
			// (A line covered in an earlier load of a library is
			// not planted again.)
			continue
		}
		for _, a := range l.Addrs {
			if err := pl.scan.code.boundary(a + bias); err != nil {
				pl.warn(prf.CannotProfileLine(l.Line, lineFile(pl.plan, &l), pl.plan.Modules[mi].Name, fmt.Errorf("address %#x: %w; not planted", a, err)))
				continue
			}
			pairs = append(pairs, siteLine{a + bias, i})
		}
	}
	slices.SortStableFunc(pairs, func(a, b siteLine) int { return cmp.Compare(a.addr, b.addr) })
	sites := &lineSiteSet{}
	var firsts []int
	firsts, sites.lines = runsOfLines(len(pairs), func(k int) int { return pairs[k].line },
		func(k int) bool { return pairs[k].addr == pairs[k-1].addr })
	sites.addrs = make([]uint64, len(firsts))
	for i, k := range firsts {
		sites.addrs[i] = pairs[k].addr
	}
	pl.addBranchSites(sites, mi, bias, ways)
	if len(sites.addrs) == 0 {
		return nil
	}
	sites.done, sites.left = make([]bool, len(sites.addrs)), len(sites.addrs)
	if lt != nil {
		sites.counter = make([]int, len(sites.addrs))
		for n, a := range sites.addrs {
			if c, ok := lt.index.get(mi, a-bias); ok && len(sites.lines[n]) > 0 {
				sites.counter[n] = c
			} else {
				sites.counter[n] = -1 // (a branch's alone: no line to count)
			}
		}
	}
	lo, hi := sites.addrs[0], sites.addrs[len(sites.addrs)-1]
	p := &planting{mi: mi, bias: bias, in: in, maps: maps, lines: true, lineSites: sites}
	// The module's code from the first site to past the last: one read.
	if hi-lo > 1<<30 {
		p.err = fmt.Errorf("plant lines: the lines of %s span %#x bytes of code, more than a module holds: the plan does not describe this program", pl.plan.Modules[mi].Name, hi-lo)
		return p
	}
	p.text = moduleText{start: lo, b: make([]byte, hi-lo+lineCell/2+uint64(pl.arch.MaxInstLen()))}
	if err := pl.readCode(lo, p.text.b); err != nil {
		// (The last instruction may end the mapping.)
		p.text.b = p.text.b[:hi-lo+1]
		if err := (*pl.mem).ReadMem(lo, p.text.b); err != nil {
			p.err = fmt.Errorf("read code of %s: %w", pl.plan.Modules[mi].Name, err)
			return p
		}
	}
	pl.checkBranchSites(p)
	pl.afterRestarts(p, lt)
	cell := uint64((pl.arch.SlotSize() + 15) &^ 15)
	if lt != nil {
		cell += lineCell // (a trampoline is planned for each site first)
	}
	p.area = pl.areaNear(in, maps, uint64(len(sites.addrs))*cell)
	return p
}

// lineSiteSet are the line sites of a module being planted, sorted by
// address: each with the lines there, its counter (in-process), and
// whether a mechanism took it (done); left counts the others.
type lineSiteSet struct {
	addrs   []uint64
	lines   [][]int
	counter []int
	done    []bool
	left    int
	// branch is the branch of the plan at each site (branches.go), -1
	// for none; nil when the module has none. A branch's site may have
	// no line: its lines empty, its counter -1.
	branch []int
}

// find returns the index of the site at addr, or -1.
func (s *lineSiteSet) find(addr uint64) int {
	if n, ok := slices.BinarySearch(s.addrs, addr); ok {
		return n
	}
	return -1
}

// take marks the site at addr taken.
func (s *lineSiteSet) take(addr uint64) {
	if n := s.find(addr); n >= 0 && !s.done[n] {
		s.done[n] = true
		s.left--
	}
}

// taken reports whether the site at addr was taken.
func (s *lineSiteSet) taken(addr uint64) bool {
	n := s.find(addr)
	return n >= 0 && s.done[n]
}

// plantLines plants a breakpoint at each line site of planting p left to
// it (p.lineSites), written with the code between them (writePlanting);
// each site's slot is reserved in the area, and written at the site's
// first hit (displaceLater): a program of 120,000 lines starts in a
// third of a second with breakpoints alone.
func (bp *breakpoints) plantLines(p *planting) error {
	e := &bp.env
	ls := p.lineSites
	if ls == nil || ls.left == 0 {
		return nil
	}
	coverage := e.plan.Method.IsCoverage()
	if coverage && bp.lineSites == nil {
		bp.lineSites = make([][]*site, len(e.plan.Lines))
	}
	slot := (e.arch.SlotSize() + 15) &^ 15
	brk := e.arch.Breakpoint()
	sites := make([]site, 0, ls.left) // (one allocation for all)
	for k, addr := range ls.addrs {
		if ls.done[k] {
			continue
		}
		n := len(sites)
		sites = sites[:n+1]
		code := p.text.b[addr-p.text.start:]
		code = code[:min(len(code), e.arch.MaxInstLen())]
		cell := p.area.slot(slot)
		lines := ls.lines[k]
		m := meaning{item: -1, exit: -1, branch: ls.siteBranch(k) + 1}
		if len(lines) > 0 {
			m.item, m.more = lines[0], lines[1:]
		}
		sites[n] = site{addr: addr, orig: code[:len(brk)], meaning: m, carrying: carrying{slot: cell, pending: true, code: code}}
		bp.sites[addr] = &sites[n]
		p.spans = append(p.spans, span{addr, brk})
		if coverage {
			for _, i := range lines {
				bp.lineSites[i] = append(bp.lineSites[i], &sites[n])
			}
		}
	}
	p.lineSites = nil
	return nil
}

// displaceLater prepares, at its first hit, how a thread steps over the
// instruction of line site s (its slot written into the program then),
// and reports whether it could: a line whose instruction cannot be
// displaced is warned about (PRF4624), and its breakpoint taken out after
// this hit.
func (bp *breakpoints) displaceLater(s *site) bool {
	if err := bp.prepareDisplace(s); err != nil {
		plan := bp.env.plan
		i := s.item
		if i < 0 {
			i = plan.Branches[s.branchOf()].Line
		}
		l := &plan.Lines[i]
		bp.env.warn(prf.CannotProfileLine(l.Line, lineFile(plan, l), plan.Modules[l.Module].Name, fmt.Errorf("%w; counted until its first hit", err)))
		return false
	}
	return true
}

// prepareDisplace works out how line site s's instruction is carried
// out of line, and writes its slot.
func (bp *breakpoints) prepareDisplace(s *site) error {
	s.pending = false
	d, err := bp.env.arch.Displace(s.code, s.addr, s.slot)
	if err == nil && d.Emulate == nil && s.slot == 0 {
		err = fmt.Errorf("no slot for the displaced instruction")
	}
	if err == nil && d.Slot != nil {
		err = (*bp.env.mem).WriteMem(s.slot, d.Slot)
	}
	if err != nil {
		return err
	}
	s.disp, s.displaced = d, true
	if d.Slot != nil {
		bp.slots[s.slot] = s
	}
	return nil
}

// lineFile returns the source file of line l, as plan names it.
func lineFile(plan *datafile.Plan, l *datafile.Line) string {
	m := &plan.Modules[l.Module]
	if l.File >= 0 && l.File < len(m.Files) {
		return m.Files[l.File]
	}
	return "?"
}

// cover books a hit of line coverage at site s: each of its lines is
// covered, once a run however many of its sites run, as the original's
// one breakpoint per line was; and the other sites of a line newly
// covered are removed, when every line they carry is covered, so that
// they cost no stop (a thread already stopped at one finds it retired).
func (bp *breakpoints) cover(s *site) error {
	hits := bp.env.hits
	for k := -1; k < len(s.more); k++ {
		i := s.item
		if k >= 0 {
			i = s.more[k]
		}
		if i < 0 || hits[i] != 0 {
			continue // (a branch's site alone has no line)
		}
		hits[i] = 1
		for _, o := range bp.lineSites[i] {
			if o == s || bp.sites[o.addr] != o || !bp.allCovered(o) {
				continue
			}
			if err := bp.unplant(o); err != nil {
				return err
			}
			delete(bp.sites, o.addr)
			bp.retired[o.addr] = o
		}
		bp.lineSites[i] = nil
	}
	return nil
}

// covered reports whether every line of site s is covered in hits.
func covered(hits []uint64, s *site) bool {
	if hits[s.item] == 0 {
		return false
	}
	for _, i := range s.more {
		if hits[i] == 0 {
			return false
		}
	}
	return true
}
