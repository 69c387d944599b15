// Package layout lays out the memory PROFILE shares with the program it
// profiles in-process (the counters of profile's inprocess.go): where
// each thread's counters, call depth and ring are, and how its
// trampolines find them. It knows nothing of a run: what to lay out is
// given (Spec), and the layout only computes places and reads the memory
// it is handed.
package layout

import (
	"encoding/binary"

	"github.com/sourceprofiler/sprof/instr"
)

// Spec is what a layout is made for: Items counters per block, counted
// as Kind says (instr.Instrumenter.Counting: CountInArea counts alone,
// with no rings or books); the threads' shadow stacks
// in their blocks where InBlock (the architecture keeps the call depth
// so), or through the stack table where ByTable; rings of Records
// records, where the run times in-process (Rings); at most MaxBlocks
// blocks, one per live thread; shadow stacks of DepthSlots frames. Where
// the run keeps its books in the program (Books), each block, or each
// area of the table, has a book of BookFuncs functions, DepthSlots
// frames and BookNodes caller stacks (instr.Book) in place of a ring.
type Spec struct {
	Kind             instr.CountKind
	Items            int
	InBlock, ByTable bool
	Rings            bool
	Books            bool
	BookFuncs        int
	BookNodes        int
	Records          int
	MaxBlocks        int
	DepthSlots       int
	// GoBooks, where the threads have blocks with books, is the number
	// of goroutines' books (instr.Book.Go): a table of books like the
	// blocks', one for each goroutine given one, after the blocks.
	GoBooks int
	// ClockPage, where the threads' books check their task clocks
	// (instr.Book.Clock), is the system's page size: a block, or an
	// area, is a whole number of pages, so that each has a page of its
	// own at the same distance, in a region after the memory (Clocks).
	ClockPage uint64
}

// Layout is how the memory PROFILE shares with the program is laid
// out, and how a thread's part of it is found and addressed. It has the
// three forms of the architecture's count (instr.CountKind, chosen by
// instr.Instrumenter.Counting):
//
//   - Per-thread blocks (instr.CountPerThread, x86-64): every thread has
//     a block of its own, BlockSize bytes, which its thread base (GS)
//     points at: a count names its counter by its offset in the block
//     (one incq %gs:offset, no lock), and the thread's shadow stack
//     (DepthAt) or ring (RingAt) follows its counters in the block.
//   - Shared counters (instr.CountShared, arm64, which has no thread
//     register to spare): one block of counters, block 1, that every
//     thread adds to atomically, a count naming its counter's address.
//     Where threads keep a shadow stack or a ring (Table), each has an
//     area of its own, Stride bytes, found through the stack table, 4
//     bytes for each page of stack addresses (instr.TableIndex), which
//     PROFILE fills for each thread's stack at its first stop.
//   - Counters in the areas (instr.CountInArea, arm64 without LSE, which
//     has no atomic add): the table's areas as in the second form, each
//     with the thread's counters (CountAt) after its shadow stack, added
//     to with a plain load and store. A count names its counter by its
//     offset in the area. Area 0 counts too, the counts of threads on a
//     stack no thread owns (an alternate signal stack, a coroutine's) or
//     beyond the areas (FirstCounted).
//
// Block 0, and area 0, are the discard: what is written there is no
// thread's of the program (a vfork child's, a thread's beyond the
// blocks). The memory is the blocks, then in the second form the areas
// (aligned to their stride) and the table, and last the guard
// (profile's damage.go).
type Layout struct {
	Kind      instr.CountKind
	ProgAddr  uint64 // where the memory is in the program
	BlockSize uint64
	// NBlocks is the number of blocks, or of areas where threads have
	// areas of the table.
	NBlocks int
	// DepthAt and RingAt are the offsets of a block's shadow stack and
	// its ring (per-thread blocks), 0 when it has none.
	DepthAt, RingAt uint64
	// Rings is set when threads have rings (function timing in-process,
	// profile's ring.go): in their blocks, or as their areas of the table.
	Rings bool
	// Books is set when threads keep books in the program (function
	// timing, profile's ledger.go): BookAt is the offset of the book in
	// a block, or in an area of the table, and BookFuncs the functions
	// it has figures for.
	Books     bool
	BookAt    uint64
	BookFuncs int
	// BookNodes is how many caller stacks a book has room for (/AT:
	// instr.Book.Nodes), 0 where it keeps none.
	BookNodes int
	// Table is set where threads of the second form have areas: the
	// offsets of the areas and of the table, and the distance between
	// two areas.
	Table            bool
	AreasAt, TableAt uint64
	Stride           uint64
	// Records is the number of records of a ring, and DepthSlots the
	// size of a shadow stack.
	Records    int
	DepthSlots int
	// GoBooks is the number of goroutines' books, GoBooksAt the offset
	// of the first and GoStride the distance between two (GoBook).
	GoBooks             int
	GoBooksAt, GoStride uint64
}

// New lays out the memory for s: the threads' shadow stacks go into
// their blocks or through the stack table, and rings, where the run has
// them, take their place. It returns the layout and its size, the guard
// not included; the layout is placed in the program once mapped (Place).
func New(s Spec) (Layout, uint64) {
	kind, rings := s.Kind, s.Rings
	l := Layout{Kind: kind, BlockSize: (uint64(max(s.Items, 1))*8 + 63) &^ 63, Rings: rings,
		Table: (s.ByTable && kind == instr.CountShared) || kind == instr.CountInArea, Stride: instr.DepthAreaAlign,
		Records: s.Records, DepthSlots: s.DepthSlots}
	maxBlocks := s.MaxBlocks
	switch {
	case kind == instr.CountInArea:
		// The counters follow the depth area where the trampolines
		// keep the call depth, else start the area (DepthSlots 0).
		if !s.ByTable {
			l.DepthSlots = 0
		}
		l.Stride = (l.CountAt() + l.BlockSize + instr.DepthAreaAlign - 1) &^ (instr.DepthAreaAlign - 1)
	case s.Books && kind == instr.CountPerThread:
		l.Books, l.BookAt, l.BookFuncs, l.BookNodes = true, l.BlockSize, s.BookFuncs, s.BookNodes
		l.BlockSize += (l.Book().Size() + 63) &^ 63
		if page := s.ClockPage; page > 0 {
			l.BlockSize = (l.BlockSize + page - 1) &^ (page - 1)
		}
	case s.Books && l.Table:
		// The books are the table's areas, each at its start.
		l.Books, l.BookFuncs, l.BookNodes = true, s.BookFuncs, s.BookNodes
		for l.Stride < max(l.Book().Size(), s.ClockPage) {
			l.Stride *= 2
		}
	case rings && l.Table:
		// The rings are the table's areas (the books keep the depth,
		// from the records).
		l.Stride = instr.RingStride(l.Records)
	case rings:
		l.RingAt = l.BlockSize
		l.BlockSize += instr.RingSize(l.Records)
	case s.InBlock && kind == instr.CountPerThread:
		l.DepthAt = l.BlockSize
		l.BlockSize += (instr.DepthAreaSize(l.DepthSlots) + 63) &^ 63
	}
	l.NBlocks = maxBlocks
	if kind == instr.CountShared || kind == instr.CountInArea {
		l.NBlocks = 2
	}
	for l.NBlocks > 2 && uint64(l.NBlocks)*l.BlockSize > 1<<30 {
		l.NBlocks /= 2
	}
	size := uint64(l.NBlocks) * l.BlockSize
	if l.Books && l.OwnParts() && s.GoBooks > 0 {
		// (Page-aligned, each book in pages of its own: a goroutine's
		// book is written by the threads that run it, one at a time.)
		l.GoStride = (l.Book().Size() + goBookAlign - 1) &^ (goBookAlign - 1)
		l.GoBooks = s.GoBooks
		for l.GoBooks > 1 && uint64(l.GoBooks)*l.GoStride > 1<<30 {
			l.GoBooks /= 2
		}
		l.GoBooksAt = (size + goBookAlign - 1) &^ (goBookAlign - 1)
		size = l.GoBooksAt + uint64(l.GoBooks)*l.GoStride
	}
	if l.Table {
		// Room for the areas' alignment (known once mapped), the areas,
		// and the table.
		l.NBlocks = maxBlocks
		for l.NBlocks > 2 && uint64(l.NBlocks)*l.Stride > 1<<30 {
			l.NBlocks /= 2
		}
		size += l.Stride + uint64(l.NBlocks)*l.Stride + 4*instr.DepthTableSize
	}
	return l, size
}

// Place puts the layout at addr, where the memory is mapped in the
// program: the areas of the table start at the first multiple of their
// stride after the two blocks (of DepthAreaAlign, where the areas hold
// counters: CountInArea), and the goroutines' books where there are
// some.
func (l *Layout) Place(addr uint64) {
	l.ProgAddr = addr
	if l.Table {
		from := 2 * l.BlockSize
		if l.GoBooks > 0 {
			from = l.GoBooksAt + uint64(l.GoBooks)*l.GoStride
		}
		align := l.Stride
		if l.Kind == instr.CountInArea {
			align = instr.DepthAreaAlign
		}
		areas := (addr + from + align - 1) &^ (align - 1)
		l.AreasAt = areas - addr
		l.TableAt = l.AreasAt + uint64(l.NBlocks)*l.Stride
	}
}

// PerThread reports whether threads have blocks of their own, found
// through their thread base (the first form).
func (l *Layout) PerThread() bool { return l.Kind == instr.CountPerThread }

// OwnParts reports whether a thread has a part of the memory of its own:
// a block, or an area of the table.
func (l *Layout) OwnParts() bool { return l.PerThread() || l.Table }

// KeepsDepth reports whether trampolines keep the call depth.
func (l *Layout) KeepsDepth() bool {
	return l.DepthAt != 0 || (l.Table && !l.Rings && !l.Books && l.DepthSlots > 0)
}

// CountAt is, where threads count in their areas (CountInArea), the
// offset of the counters in an area: after the depth area, where the
// trampolines keep the call depth; 0 otherwise.
func (l *Layout) CountAt() uint64 {
	if l.Kind == instr.CountInArea && l.KeepsDepth() {
		return instr.DepthAreaAlign
	}
	return 0
}

// CounterRef is what a trampoline's count instruction names for item:
// its offset in a thread's block or area, or its address in block 1.
func (l *Layout) CounterRef(item int) uint64 {
	switch l.Kind {
	case instr.CountPerThread:
		return uint64(item) * 8
	case instr.CountInArea:
		return l.CountAt() + uint64(item)*8
	}
	return l.ProgAddr + l.BlockSize + uint64(item)*8
}

// Site is what the count code of item needs (instr.LineSite): its
// counter, and the stack table where threads have areas.
func (l *Layout) Site(item int) instr.LineSite {
	s := instr.LineSite{Counter: l.CounterRef(item)}
	s.Table, s.Areas = l.TableAddrs()
	return s
}

// CountCode is the code of the count of item at the entry of a function
// that is not Go's, as a's trampolines count
// (instr.Instrumenter.EntryCount); nil where they cannot.
func (l *Layout) CountCode(a instr.Instrumenter, item int) []byte {
	d, _ := a.EntryCount(l.Kind, l.Site(item))
	return d.Code
}

// BlockAddr is the address in the program of block b.
func (l *Layout) BlockAddr(b int) uint64 { return l.ProgAddr + uint64(b)*l.BlockSize }

// AreaAddr is the address in the program of area b of the table.
func (l *Layout) AreaAddr(b int) uint64 { return l.ProgAddr + l.AreasAt + uint64(b)*l.Stride }

// BookAddr is the address in the program of the memory BookMem gives
// of block, or area, b.
func (l *Layout) BookAddr(b int) uint64 {
	if l.Table {
		return l.AreaAddr(b)
	}
	return l.BlockAddr(b)
}

// BlockAt returns the block whose address is base (a thread base), none
// for the discard block or an address that is no block's.
func (l *Layout) BlockAt(base uint64) (int, bool) {
	if base < l.ProgAddr || l.BlockSize == 0 || (base-l.ProgAddr)%l.BlockSize != 0 {
		return 0, false
	}
	b := (base - l.ProgAddr) / l.BlockSize
	if b == 0 || b >= uint64(l.NBlocks) {
		return 0, false
	}
	return int(b), true
}

// AreaAt returns the area of the stack table whose address is addr (a
// thread pointer), none for an address that is no area's.
func (l *Layout) AreaAt(addr uint64) (int, bool) {
	first := l.ProgAddr + l.AreasAt
	if !l.Table || addr < first || (addr-first)%l.Stride != 0 || (addr-first)/l.Stride >= uint64(l.NBlocks) {
		return 0, false
	}
	return int((addr - first) / l.Stride), true
}

// Counted is the end of the blocks that hold counts, from block 1
// (FirstCounted): where threads have blocks or areas, every one given so
// far (below next); else block 1 alone.
func (l *Layout) Counted(next int) int {
	if l.Kind == instr.CountShared {
		return 2
	}
	return next
}

// FirstCounted is the first block, or area, that holds counts of the
// program: area 0 where threads count in their areas (CountInArea: the
// threads on a stack no thread owns count there, with the threads beyond
// the areas), else block 1 (block 0 is the discard).
func (l *Layout) FirstCounted() int {
	if l.Kind == instr.CountInArea {
		return 0
	}
	return 1
}

// Count is counter k of block b in mem, or of area b where threads count
// in their areas.
func (l *Layout) Count(mem []byte, b, k int) uint64 {
	if l.Kind == instr.CountInArea {
		return binary.LittleEndian.Uint64(mem[l.AreasAt+uint64(b)*l.Stride+l.CountAt()+uint64(k)*8:])
	}
	return binary.LittleEndian.Uint64(mem[uint64(b)*l.BlockSize+uint64(k)*8:])
}

// goBookAlign is the alignment of the goroutines' books: a page.
const goBookAlign = 4096

// GoBookBase is the base of goroutine book i in the program: the address
// its book's offsets (Book().Offset on) are from, as a block's are from
// its start (instr.BookCurBook).
func (l *Layout) GoBookBase(i int) uint64 {
	return l.ProgAddr + l.GoBooksAt + uint64(i)*l.GoStride - l.BookAt
}

// GoBookMem is, in mem, the memory that holds goroutine book i, at
// Book().Offset in it as in a block.
func (l *Layout) GoBookMem(mem []byte, i int) []byte {
	at := l.GoBooksAt + uint64(i)*l.GoStride
	return mem[at-l.BookAt : at+l.Book().Size()]
}

// GoBookOf returns the goroutine book whose base is base, none for an
// address that is no book's base.
func (l *Layout) GoBookOf(base uint64) (int, bool) {
	first := l.GoBookBase(0)
	if l.GoBooks == 0 || base < first || (base-first)%l.GoStride != 0 || (base-first)/l.GoStride >= uint64(l.GoBooks) {
		return 0, false
	}
	return int((base - first) / l.GoStride), true
}

// Book is the book of each block or area, where they have one (Books).
func (l *Layout) Book() instr.Book {
	b := instr.Book{Offset: l.BookAt, Frames: l.DepthSlots, Funcs: l.BookFuncs, Nodes: l.BookNodes}
	b.Table, b.Areas = l.TableAddrs()
	return b
}

// BookMem is, in mem, the memory that holds the book of block b, or of
// area b of the table (the book at Book().Offset in it).
func (l *Layout) BookMem(mem []byte, b int) []byte {
	if l.Table {
		at := l.AreasAt + uint64(b)*l.Stride
		return mem[at : at+l.Stride]
	}
	return l.Block(mem, b)
}

// Block is block b in mem.
func (l *Layout) Block(mem []byte, b int) []byte {
	return mem[uint64(b)*l.BlockSize : uint64(b+1)*l.BlockSize]
}

// Entered is how many calls of function k block b's thread made so far
// where blocks have books (its calls ended and open), else counter k of
// block b.
func (l *Layout) Entered(mem []byte, b, k int) uint64 {
	if !l.Books {
		return l.Count(mem, b, k)
	}
	book := l.BookMem(mem, b)[l.Book().FigureAt(k):]
	return binary.LittleEndian.Uint64(book[instr.FigureCalls:]) + binary.LittleEndian.Uint64(book[instr.FigureOpen:])
}

// GoEntered is how many calls of function k goroutine book i holds, its
// calls ended and open (Entered).
func (l *Layout) GoEntered(mem []byte, i, k int) uint64 {
	book := l.GoBookMem(mem, i)[l.Book().FigureAt(k):]
	return binary.LittleEndian.Uint64(book[instr.FigureCalls:]) + binary.LittleEndian.Uint64(book[instr.FigureOpen:])
}

// Depth is what DepthCode needs for the trampolines of functions with
// frames of the given kind (goroutine: Go's internal ABI).
func (l *Layout) Depth(goroutine bool) instr.Depth {
	d := instr.Depth{Offset: l.DepthAt, Slots: l.DepthSlots, GoABI: goroutine}
	d.Table, d.Areas = l.TableAddrs()
	return d
}

// TableAddrs returns the addresses in the program of the stack table and
// of its areas, where threads have areas of the table; 0 and 0 else.
func (l *Layout) TableAddrs() (table, areas uint64) {
	if !l.Table {
		return 0, 0
	}
	return l.ProgAddr + l.TableAt, l.ProgAddr + l.AreasAt
}

// Ring is what the record code of item's entry, or exit, needs.
func (l *Layout) Ring() instr.Ring {
	r := instr.Ring{Offset: l.RingAt, Records: l.Records}
	r.Table, r.Areas = l.TableAddrs()
	return r
}

// DepthArea returns, in mem, thread block b's depth area, or area b of
// the table.
func (l *Layout) DepthArea(mem []byte, b int) []byte {
	if l.Table {
		at := l.AreasAt + uint64(b)*l.Stride
		return mem[at : at+instr.DepthAreaAlign]
	}
	at := uint64(b)*l.BlockSize + l.DepthAt
	return mem[at : at+instr.DepthAreaSize(l.DepthSlots)]
}

// RingArea returns, in mem, block b's ring area, or area b of the table.
func (l *Layout) RingArea(mem []byte, b int) []byte {
	at := uint64(b)*l.BlockSize + l.RingAt
	if l.Table {
		at = l.AreasAt + uint64(b)*l.Stride
	}
	return mem[at : at+instr.RingSize(l.Records)]
}

// StackTable returns the stack table in mem.
func (l *Layout) StackTable(mem []byte) []byte {
	return mem[l.TableAt : l.TableAt+4*instr.DepthTableSize]
}

// PointStack points the stack table's entries in mem of the pages from
// lo to hi at area b: all of them, or where from is not -1, those that
// point at area from.
func (l *Layout) PointStack(mem []byte, lo, hi uint64, b, from int) {
	table := l.StackTable(mem)
	off := uint32(uint64(b) * l.Stride)
	for page := lo; page <= hi; page += 1 << instr.DepthTablePage {
		e := table[4*instr.TableIndex(page):]
		if from < 0 || binary.LittleEndian.Uint32(e) == uint32(uint64(from)*l.Stride) {
			binary.LittleEndian.PutUint32(e, off)
		}
	}
}

// TableArea is the area the stack table in mem gives a thread whose
// stack pointer is sp: the discard area where the entry is not one
// PROFILE writes (the table is in the program's memory, which a wild
// write may reach).
func (l *Layout) TableArea(mem []byte, sp uint64) int {
	off := uint64(binary.LittleEndian.Uint32(l.StackTable(mem)[4*instr.TableIndex(sp):]))
	if off%l.Stride != 0 || off/l.Stride >= uint64(l.NBlocks) {
		return 0
	}
	return int(off / l.Stride)
}
