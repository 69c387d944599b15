package layout

// Clocks is the region of the pages of the threads' task clocks
// (instr.Book.Clock, profile's ledger_waits.go), next to the memory
// PROFILE shares with the program: one page for each block, or area of
// the table, at the same distance from it, so that a thread's book code
// finds its page from its block's address alone. PROFILE maps the region
// readable, all zeros, and each thread's page over its place. A block,
// or an area, is a whole number of pages for it (Spec.ClockPage).
type Clocks struct {
	// At is the region's address in the program, and PageSize the size
	// of a page: 0, no region.
	At, PageSize uint64
}

// ClockCandidates returns where the region of layout l may go, its
// pages pageSize bytes, about the memory in the program, which spans
// [start, end): just below it (where mmap, which fills the address space
// downwards, has most often left room), else just above.
func (l *Layout) ClockCandidates(start, end, pageSize uint64) []uint64 {
	size := uint64(l.NBlocks) * l.slotStride()
	var at []uint64
	if start > size {
		at = append(at, (start-size)&^(pageSize-1))
	}
	return append(at, (end+pageSize-1)&^(pageSize-1))
}

// PlaceClocks returns the region of layout l at at, its pages pageSize
// bytes: none (the zero Clocks) where pageSize is 0, or the threads have
// no books of their own.
func (l *Layout) PlaceClocks(at, pageSize uint64) Clocks {
	if pageSize == 0 || !l.Books || !l.OwnParts() {
		return Clocks{}
	}
	return Clocks{At: at, PageSize: pageSize}
}

// slotStride is the distance between two blocks, or two areas.
func (l *Layout) slotStride() uint64 {
	if l.Table {
		return l.Stride
	}
	return l.BlockSize
}

// firstBase is the address of block 0, or of area 0.
func (l *Layout) firstBase() uint64 {
	if l.Table {
		return l.AreaAddr(0)
	}
	return l.BlockAddr(0)
}

// Region returns the region's address and size in layout l (0, 0:
// none).
func (c Clocks) Region(l *Layout) (at, size uint64) {
	if c.PageSize == 0 {
		return 0, 0
	}
	return c.At, uint64(l.NBlocks) * l.slotStride()
}

// Distance is the distance from a block, or an area, of layout l to its
// page (instr.Book.Clock), modulo 2^64 (the region may be below): 0
// where there is no region.
func (c Clocks) Distance(l *Layout) uint64 {
	if c.PageSize == 0 {
		return 0
	}
	return c.At - l.firstBase()
}

// Page is the address of the page of block, or area, b of layout l.
func (c Clocks) Page(l *Layout, b int) uint64 { return c.At + uint64(b)*l.slotStride() }
