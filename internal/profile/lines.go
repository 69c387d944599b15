package profile

import (
	"fmt"
	"slices"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// Line profiles (docs/linux.md, "Debugging information"): every site of
// every line takes a breakpoint, as the original's did. Line counting
// keeps each for the whole run, a stop per hit, the thread stepping over
// the displaced instruction out of line; line coverage removes each at its
// first hit. Two lines may share a site (an inlined call's line and its
// callee's first line start at one address): a hit there counts for both.

// plantLines plants the breakpoints of the lines of module mi, loaded
// with bias, whose first mapping starts at start, in a process with the
// given maps. The module's code is read once, the slots written in one
// piece, and the breakpoints with the code between them (writeCode): a
// program with 100,000 lines starts in a fraction of a second.
func (t *tracer) plantLines(mi int, bias, start uint64, maps []mapping) error {
	items := map[uint64][]int{} // site -> the lines there
	for i, l := range t.plan.Lines {
		if l.Module != mi {
			continue
		}
		for _, a := range l.Addrs {
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
	size := (uint64(len(addrs))*slot + t.pageSize - 1) &^ (t.pageSize - 1)
	area, err := t.mmap(slotArea(maps, start, size, t.pageSize), size)
	if err != nil {
		t.cfg.Warn(prf.NoSlots(err))
		area = 0
	}
	image := make([]byte, size)
	bp := t.arch.Breakpoint()
	var spans []span
	for n, addr := range addrs {
		code := text.b[addr-text.start:]
		code = code[:min(len(code), t.arch.MaxInstLen())]
		cell := uint64(0)
		if area != 0 {
			cell = area + uint64(n)*slot
		}
		lines := items[addr]
		s := &site{addr: addr, item: lines[0], more: lines[1:], exit: -1, orig: slices.Clone(code[:len(bp)]), slot: cell}
		d, err := t.arch.Displace(code, addr, cell)
		if err == nil && d.Emulate == nil && cell == 0 {
			err = fmt.Errorf("no slot for the displaced instruction")
		}
		switch {
		case err == nil:
			s.disp, s.displaced = d, true
			if d.Slot != nil {
				copy(image[cell-area:], d.Slot)
				t.slots[cell] = s
			}
		case !t.coverage:
			// (Coverage removes the breakpoint at its first hit: it
			// needs no displacement.)
			l, m := &t.plan.Lines[lines[0]], &t.plan.Modules[mi]
			file := "?"
			if l.File >= 0 && l.File < len(m.Files) {
				file = m.Files[l.File]
			}
			t.cfg.Warn(prf.CannotProfileLine(l.Line, file, m.Name, err))
			continue
		}
		t.sites[addr] = s
		spans = append(spans, span{addr, bp})
	}
	if area != 0 {
		if err := t.mem.WriteMem(area, image); err != nil {
			return fmt.Errorf("write slots: %w", err)
		}
	}
	if err := t.writeCode(text, spans); err != nil {
		return fmt.Errorf("plant breakpoints: %w", err)
	}
	return nil
}
