package layout

import (
	"encoding/binary"
	"testing"

	"github.com/sourceprofiler/sprof/instr"
)

// TestLayoutGoBooks checks the table of goroutines' books (Spec.GoBooks)
// of per-thread blocks with books: 3 books after the blocks, each at a
// page of its own and in whole pages, within the memory's size; a book's
// base less its offset is its address, and its memory holds it at the
// offset a block's book has; the base of each book gives it back, and
// nothing else does. Without GoBooks there is no table.
func TestLayoutGoBooks(t *testing.T) {
	const (
		addr  = 0x7f00_0000_0000
		n     = 3
		align = 4096
	)
	s := Spec{Kind: instr.CountPerThread, Items: 2, Books: true, BookFuncs: 4, DepthSlots: 8, MaxBlocks: 4, GoBooks: n}
	l, size := New(s)
	l.Place(addr)
	b := l.Book()
	if l.GoBooks != n {
		t.Fatalf("%d goroutines' books, want %d", l.GoBooks, n)
	}
	if blocksEnd := uint64(l.NBlocks) * l.BlockSize; l.GoBooksAt%align != 0 || l.GoBooksAt < blocksEnd {
		t.Errorf("the books at %#x, want a page at or past the blocks' end %#x", l.GoBooksAt, blocksEnd)
	}
	if l.GoStride < b.Size() || l.GoStride%align != 0 {
		t.Errorf("the books %#x bytes apart, want whole pages, at least a book's %#x", l.GoStride, b.Size())
	}
	if end := l.GoBooksAt + n*l.GoStride; end > size {
		t.Errorf("the memory is %#x bytes, want the last book's end %#x within it", size, end)
	}
	mem := make([]byte, size)
	for i := range n {
		at := l.GoBooksAt + uint64(i)*l.GoStride // the book's start, in mem
		if got := l.GoBookBase(i) + b.Offset; got != addr+at {
			t.Errorf("book %d: its base and offset at %#x, want its start %#x", i, got, addr+at)
		}
		m := l.GoBookMem(mem, i)
		if uint64(len(m)) != b.Offset+b.Size() || &m[b.Offset] != &mem[at] {
			t.Errorf("book %d: %d bytes, want %d, the book at %d in them", i, len(m), b.Offset+b.Size(), b.Offset)
		}
		if i > 0 {
			if prev := l.GoBooksAt + uint64(i-1)*l.GoStride; prev+b.Size() > at {
				t.Errorf("book %d starts at %#x, inside book %d (%#x to %#x)", i, at, i-1, prev, prev+b.Size())
			}
		}
		if j, ok := l.GoBookOf(l.GoBookBase(i)); !ok || j != i {
			t.Errorf("the base of book %d gives %d, %v", i, j, ok)
		}
		if j, ok := l.GoBookOf(l.GoBookBase(i) + 1); ok {
			t.Errorf("the base of book %d plus 1 gives book %d", i, j)
		}
	}
	// A goroutine's calls of function 2, in book 1: 5 ended, 2 open.
	fig := l.GoBookMem(mem, 1)[b.FigureAt(2):]
	binary.LittleEndian.PutUint64(fig[instr.FigureCalls:], 5)
	binary.LittleEndian.PutUint64(fig[instr.FigureOpen:], 2)
	if got, other := l.GoEntered(mem, 1, 2), l.GoEntered(mem, 0, 2)+l.GoEntered(mem, 1, 1); got != 7 || other != 0 {
		t.Errorf("book 1 entered function 2 %d times, want 7; and the others %d, want 0", got, other)
	}
	for _, base := range []uint64{l.GoBookBase(n), l.GoBookBase(0) - l.GoStride, l.GoBookBase(0) - 1, 0} {
		if j, ok := l.GoBookOf(base); ok {
			t.Errorf("%#x, no book's base, gives book %d", base, j)
		}
	}

	s.GoBooks = 0
	l, size0 := New(s)
	l.Place(addr)
	if l.GoBooks != 0 || size0 != uint64(l.NBlocks)*l.BlockSize {
		t.Errorf("without goroutines' books: %d of them, %#x bytes, want none, the blocks' %#x", l.GoBooks, size0, uint64(l.NBlocks)*l.BlockSize)
	}
	if j, ok := l.GoBookOf(l.GoBookBase(0)); ok {
		t.Errorf("without goroutines' books, book %d found", j)
	}

	testTableGoBooks(t, addr, n)
}

// testTableGoBooks: the books of the stack table's areas (arm64) have n
// goroutines' books too, after the two blocks, and the areas after them,
// all within the memory's size; an area's start names it (AreaAt), no other
// address does.
func testTableGoBooks(t *testing.T, addr uint64, n int) {
	t.Helper()
	shared := Spec{Kind: instr.CountShared, Items: 2, ByTable: true, Books: true, BookFuncs: 4, DepthSlots: 8, MaxBlocks: 4}
	_, without := New(shared)
	shared.GoBooks = n
	l, size := New(shared)
	l.Place(addr)
	booksEnd := l.GoBooksAt + uint64(n)*l.GoStride
	if l.GoBooks != n || l.GoBooksAt < 2*l.BlockSize || size < without+booksEnd-l.GoBooksAt {
		t.Errorf("the table's books: %d goroutines' books at %#x, %#x bytes in all; want %d after the two blocks (%#x), and room for them", l.GoBooks, l.GoBooksAt, size, n, 2*l.BlockSize)
	}
	if l.AreasAt < booksEnd || l.AreasAt%l.Stride != 0 {
		t.Errorf("the areas at %#x, want a multiple of %#x at or past the books' end %#x", l.AreasAt, l.Stride, booksEnd)
	}
	if end := l.TableAt + 4*instr.DepthTableSize; end > size {
		t.Errorf("the table ends at %#x, past the memory's %#x bytes", end, size)
	}
	if got := l.GoBookBase(n-1) + l.Book().Offset + l.GoStride; got != addr+booksEnd {
		t.Errorf("the last book ends at %#x, want %#x", got, addr+booksEnd)
	}
	// A thread pointer names an area by its start, and nothing else
	// (a Go function's book code saves its registers there).
	for _, b := range []int{0, 1, l.NBlocks - 1} {
		if got, ok := l.AreaAt(l.AreaAddr(b)); !ok || got != b {
			t.Errorf("the start of area %d gives %d, %v", b, got, ok)
		}
	}
	for _, bad := range []uint64{0, l.AreaAddr(0) - l.Stride, l.AreaAddr(1) + 8, l.AreaAddr(l.NBlocks), addr + l.GoBooksAt, ^uint64(0)} {
		if got, ok := l.AreaAt(bad); ok {
			t.Errorf("%#x, no area's start, gives area %d", bad, got)
		}
	}
	blocks, _ := New(Spec{Kind: instr.CountPerThread, Items: 2, Books: true, BookFuncs: 4, DepthSlots: 8, MaxBlocks: 4})
	blocks.Place(addr)
	if got, ok := blocks.AreaAt(addr + blocks.BlockSize); ok {
		t.Errorf("blocks, no table: a block's address gives area %d", got)
	}
}
