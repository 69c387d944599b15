package profile

import (
	"sort"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/procmaps"
)

// stackMaps tells the books which mapping of the program's memory holds
// a stack pointer, so that the frames of a thread on different stacks (a
// signal handler's alternate stack, a coroutine's) are not compared
// (books.go). It reads the memory map once, at the first address asked
// about, and again only when an address falls where the last reading had
// no mapping: a stack mapped since (a thread's, an alternate stack), or
// the main thread's stack, grown. A gap found empty after a reading is
// remembered until the next, so that an address in no mapping (a stack
// unmapped before its records were read) costs one reading. Where the map
// cannot be read (the program is gone), no address is known, and the
// books compare every frame, as they did.
type stackMaps struct {
	read func() ([]procmaps.Mapping, error)
	// extents are the mappings of the last reading, sorted; empty are the
	// gaps between them found empty since.
	extents []extent
	empty   []extent
	failed  bool
	// reads counts the readings (TestStackMaps).
	reads int
}

// extent is the memory from lo to hi.
type extent struct{ lo, hi uint64 }

func (s extent) holds(a uint64) bool { return s.lo <= a && a < s.hi }

// stackAt returns the bounds of the mapping that holds sp.
func (m *stackMaps) StackAt(sp uint64) (lo, hi uint64, ok bool) {
	if s, ok := m.find(sp); ok {
		return s.lo, s.hi, true
	}
	for _, g := range m.empty {
		if g.holds(sp) {
			return 0, 0, false
		}
	}
	if m.failed {
		return 0, 0, false
	}
	maps, err := m.read()
	m.reads++
	if err != nil {
		m.failed = true
		return 0, 0, false
	}
	m.extents = m.extents[:0]
	for _, mp := range maps {
		if mp.Start < mp.End {
			m.extents = append(m.extents, extent{mp.Start, mp.End})
		}
	}
	sort.Slice(m.extents, func(i, j int) bool { return m.extents[i].lo < m.extents[j].lo })
	m.empty = m.empty[:0]
	if s, ok := m.find(sp); ok {
		return s.lo, s.hi, true
	}
	g := extent{0, ^uint64(0)}
	i := sort.Search(len(m.extents), func(i int) bool { return m.extents[i].lo > sp })
	if i > 0 {
		g.lo = m.extents[i-1].hi
	}
	if i < len(m.extents) {
		g.hi = m.extents[i].lo
	}
	m.empty = append(m.empty, g)
	return 0, 0, false
}

// find returns the extent of the last reading that holds a.
func (m *stackMaps) find(a uint64) (extent, bool) {
	i := sort.Search(len(m.extents), func(i int) bool { return m.extents[i].hi > a })
	if i < len(m.extents) && m.extents[i].holds(a) {
		return m.extents[i], true
	}
	return extent{}, false
}

// maxStack bounds the stack a thread may grow to where its mapping does
// not say (the main thread's grows down on demand).
const maxStack = 256 << 20

// ownStack points the stack table's entries of the stack that holds sp
// (the pages of its mapping at and below sp) at area b. The main thread's
// stack, which grows, is taken as deep as its limit allows.
func (c *counters) ownStack(sp uint64, b int) error {
	env := &c.env
	// The maps are read again for every thread: a cached copy could hold
	// a stack since unmapped, whose bounds would take another's pages.
	maps, err := env.readMaps()
	if err != nil {
		return err
	}
	m, ok := stackOf(maps, sp)
	if !ok {
		return nil // a stack in no mapping: its frames go to the discard area
	}
	lo := m.Start
	if m.Path == "[stack]" {
		limit := uint64(maxStack)
		if l, err := env.proc.stackLimit(env.pid); err == nil && l < limit {
			limit = l
		}
		if m.End-limit < lo && limit < m.End {
			lo = m.End - limit
		}
	}
	lo = max(lo, sp-min(sp, maxStack)) &^ (1<<instr.DepthTablePage - 1)
	c.pointStack(lo, sp, b, -1)
	if b != 0 {
		if c.stacks == nil {
			c.stacks = map[int][2]uint64{}
		}
		c.stacks[b] = [2]uint64{lo, sp}
	}
	return nil
}

// pointStack points the stack table's entries of the pages from lo to hi
// at area b: all of them, or where from is not -1, those that point at
// area from.
func (c *counters) pointStack(lo, hi uint64, b, from int) {
	c.layout.PointStack(c.shared.Bytes(), lo, hi, b, from)
}

// tableArea is the area the stack table gives a thread whose stack
// pointer is sp (layout.Layout.TableArea).
func (c *counters) tableArea(sp uint64) int { return c.layout.TableArea(c.shared.Bytes(), sp) }

// stackOf returns the mapping that holds sp.
func stackOf(maps []procmaps.Mapping, sp uint64) (procmaps.Mapping, bool) {
	for _, m := range maps {
		if m.Start <= sp && sp < m.End {
			return m, true
		}
	}
	return procmaps.Mapping{}, false
}
