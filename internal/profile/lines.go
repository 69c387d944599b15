package profile

import (
	"fmt"
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// Line profiles (docs/linux.md, "Debugging information"): every site of
// every line takes a breakpoint, as the original's did. Line counting
// keeps each for the whole run, a stop per hit, the thread stepping over
// the displaced instruction out of line; line coverage removes each at its
// first hit. Two lines may share a site (an inlined call's line and its
// callee's first line start at one address): a hit there counts for both.

// plantLines plants the breakpoints of the lines of the module of
// planting p. The module's code is read once and the breakpoints are written with the
// code between them (writeCode); each site's slot is reserved in one
// area, and written at the site's first hit (displaceLater): a program
// of 120,000 lines starts in a third of a second. A site where the
// module's code, decoded (t.scan.code), has no instruction boundary is not
// planted, whatever the plan says (PRF4624).
func (bp *breakpoints) plantLines(p *planting) error {
	t, mi, bias := bp.t, p.mi, p.bias
	items := map[uint64][]int{} // site -> the lines there
	coverage := t.plan.Method.IsCoverage()
	if coverage && bp.lineSites == nil {
		bp.lineSites = make([][]*site, len(t.plan.Lines))
	}
	for i, l := range t.plan.Lines {
		if l.Module != mi || (coverage && t.hits[i] != 0) {
			// (A line covered in an earlier load of a library is
			// not planted again.)
			continue
		}
		for _, a := range l.Addrs {
			if err := t.scan.code.boundary(a + bias); err != nil {
				t.cfg.Warn(prf.CannotProfileLine(l.Line, t.lineFile(&l), t.plan.Modules[mi].Name, fmt.Errorf("address %#x: %w; not planted", a, err)))
				continue
			}
			items[a+bias] = append(items[a+bias], i)
		}
	}
	if len(items) == 0 {
		return nil
	}
	addrs := make([]uint64, 0, len(items))
	for a := range items {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	// The module's code from the first site to past the last: one read.
	if span := addrs[len(addrs)-1] - addrs[0]; span > 1<<30 {
		return fmt.Errorf("plant breakpoints: the lines of %s span %#x bytes of code, more than a module holds: the plan does not describe this program", t.plan.Modules[mi].Name, span)
	}
	text := moduleText{start: addrs[0], b: make([]byte, addrs[len(addrs)-1]-addrs[0]+uint64(t.arch.MaxInstLen()))}
	if err := t.mem.ReadMem(text.start, text.b); err != nil {
		// (The last instruction may end the mapping.)
		text.b = text.b[:addrs[len(addrs)-1]-addrs[0]+1]
		if err := t.mem.ReadMem(text.start, text.b); err != nil {
			return fmt.Errorf("read code of %s: %w", t.plan.Modules[mi].Name, err)
		}
	}
	slot := uint64((t.arch.SlotSize() + 15) &^ 15)
	area := t.areaNear(p.in, p.maps, uint64(len(addrs))*slot).base
	brk := t.arch.Breakpoint()
	spans := make([]span, 0, len(addrs))
	sites := make([]site, len(addrs)) // (one allocation for all)
	for n, addr := range addrs {
		code := text.b[addr-text.start:]
		code = code[:min(len(code), t.arch.MaxInstLen())]
		cell := uint64(0)
		if area != 0 {
			cell = area + uint64(n)*slot
		}
		lines := items[addr]
		sites[n] = site{addr: addr, item: lines[0], more: lines[1:], exit: -1, orig: code[:len(brk)], slot: cell,
			pending: true, code: code}
		bp.sites[addr] = &sites[n]
		spans = append(spans, span{addr, brk})
		if coverage {
			for _, i := range lines {
				bp.lineSites[i] = append(bp.lineSites[i], &sites[n])
			}
		}
	}
	if err := t.writeCode(text, spans); err != nil {
		return fmt.Errorf("plant breakpoints: %w", err)
	}
	return nil
}

// displaceLater prepares, at its first hit, how a thread steps over the
// instruction of line site s (its slot written into the program then),
// and reports whether it could: a line whose instruction cannot be
// displaced is warned about (PRF4624), and its breakpoint taken out after
// this hit.
func (bp *breakpoints) displaceLater(s *site) bool {
	t := bp.t
	if err := bp.prepareDisplace(s); err != nil {
		l := &t.plan.Lines[s.item]
		t.cfg.Warn(prf.CannotProfileLine(l.Line, t.lineFile(l), t.plan.Modules[l.Module].Name, fmt.Errorf("%w; counted until its first hit", err)))
		return false
	}
	return true
}

// prepareDisplace works out how line site s's instruction is carried
// out of line, and writes its slot.
func (bp *breakpoints) prepareDisplace(s *site) error {
	t := bp.t
	s.pending = false
	d, err := t.arch.Displace(s.code, s.addr, s.slot)
	if err == nil && d.Emulate == nil && s.slot == 0 {
		err = fmt.Errorf("no slot for the displaced instruction")
	}
	if err == nil && d.Slot != nil {
		err = t.mem.WriteMem(s.slot, d.Slot)
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

// lineFile returns the source file of line l, as the plan names it.
func (t *tracer) lineFile(l *datafile.Line) string {
	m := &t.plan.Modules[l.Module]
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
	t := bp.t
	for k := -1; k < len(s.more); k++ {
		i := s.item
		if k >= 0 {
			i = s.more[k]
		}
		if t.hits[i] != 0 {
			continue
		}
		t.hits[i] = 1
		for _, o := range bp.lineSites[i] {
			if o == s || bp.sites[o.addr] != o || !t.covered(o) {
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

// covered reports whether every line of site s is covered.
func (t *tracer) covered(s *site) bool {
	if t.hits[s.item] == 0 {
		return false
	}
	for _, i := range s.more {
		if t.hits[i] == 0 {
			return false
		}
	}
	return true
}
