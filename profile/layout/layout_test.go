package layout

import (
	"encoding/binary"
	"testing"

	"github.com/sourceprofiler/sprof/instr"
)

// The sizes of profile's runs: rings of 8192 records, shadow stacks of
// 1024 frames.
const records, depthSlots = 8192, 1024

// spec is the layout of 3 counters a block, as kind counts, at most
// maxBlocks blocks.
func spec(kind instr.CountKind, inBlock, byTable, rings bool, maxBlocks int) Spec {
	return Spec{Kind: kind, Items: 3, InBlock: inBlock, ByTable: byTable, Rings: rings, Records: records, MaxBlocks: maxBlocks, DepthSlots: depthSlots}
}

// TestCounterLayout checks the two forms of the counters' memory, as
// each run lays them out for 3 counters a block, placed at a page:
// per-thread blocks (x86-64), where a count names an offset in the
// thread's block and its shadow stack, or its ring, follows its counters
// there; and shared counters (arm64), in block 1, a count naming an
// address, with the threads' shadow stacks, or rings, in areas of their
// own found through the stack table by the stack pointer's page, and
// none where the run keeps neither (sampling). The blocks, or the
// areas, are as many as take a GiB at most.
func TestCounterLayout(t *testing.T) {
	for _, c := range []struct {
		kind                    instr.CountKind
		inBlock, byTable, rings bool
	}{{instr.CountPerThread, true, false, false}, {instr.CountPerThread, false, false, true}, {instr.CountShared, false, true, false}, {instr.CountShared, false, true, true}} {
		l, _ := New(spec(c.kind, c.inBlock, c.byTable, c.rings, 1<<20))
		each := l.BlockSize
		if l.Table {
			each = l.Stride
		}
		if all := uint64(l.NBlocks) * each; all > 1<<30 || all <= 1<<29 {
			t.Errorf("%+v: %d blocks or areas of %d bytes", c, l.NBlocks, each)
		}
	}
	const (
		addr = 0x7f00_0000_0000
		page = 1 << instr.DepthTablePage
	)
	depthBlock := 64 + (instr.DepthAreaSize(depthSlots)+63)&^63
	ringBlock := 64 + instr.RingSize(records)
	ringStride := instr.RingStride(records)
	for _, c := range []struct {
		name                    string
		kind                    instr.CountKind
		inBlock, byTable, rings bool
		blockSize, depthAt      uint64
		ringAt, stride          uint64
		table, keepsDepth       bool
		ownParts                bool
		nBlocks                 int
	}{
		{"per-thread counting", instr.CountPerThread, true, false, false, depthBlock, 64, 0, instr.DepthAreaAlign, false, true, true, 16},
		{"per-thread timing", instr.CountPerThread, true, false, true, ringBlock, 0, 64, instr.DepthAreaAlign, false, false, true, 16},
		{"per-thread sampling", instr.CountPerThread, false, false, false, 64, 0, 0, instr.DepthAreaAlign, false, false, true, 16},
		{"shared counting", instr.CountShared, false, true, false, 64, 0, 0, instr.DepthAreaAlign, true, true, true, 16},
		{"shared timing", instr.CountShared, false, true, true, 64, 0, 0, ringStride, true, false, true, 16},
		{"shared sampling", instr.CountShared, false, false, false, 64, 0, 0, instr.DepthAreaAlign, false, false, false, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, size := New(spec(c.kind, c.inBlock, c.byTable, c.rings, 16))
			l.Place(addr)
			if l.BlockSize != c.blockSize || l.DepthAt != c.depthAt || l.RingAt != c.ringAt || l.Stride != c.stride ||
				l.Table != c.table || l.NBlocks != c.nBlocks {
				t.Fatalf("layout %+v: want blocks of %d bytes, depth at %d, ring at %d, stride %d, table %v, %d blocks",
					l, c.blockSize, c.depthAt, c.ringAt, c.stride, c.table, c.nBlocks)
			}
			if l.KeepsDepth() != c.keepsDepth || l.OwnParts() != c.ownParts {
				t.Errorf("keeps the depth %v, threads own parts %v; want %v, %v", l.KeepsDepth(), l.OwnParts(), c.keepsDepth, c.ownParts)
			}
			mem := make([]byte, size)
			if c.kind == instr.CountPerThread {
				if l.CounterRef(2) != 16 || l.BlockAddr(3) != addr+3*c.blockSize || l.Counted(5) != 5 || uint64(len(mem)) != uint64(l.NBlocks)*c.blockSize {
					t.Errorf("counter 2 at %#x, block 3 at %#x, counts in blocks below %d, %d bytes", l.CounterRef(2), l.BlockAddr(3), l.Counted(5), len(mem))
				}
				if b, ok := l.BlockAt(l.BlockAddr(3)); !ok || b != 3 {
					t.Errorf("block at block 3's address: %d %v", b, ok)
				}
				for _, base := range []uint64{addr, l.BlockAddr(3) + 8, addr - c.blockSize, l.BlockAddr(l.NBlocks)} {
					if b, ok := l.BlockAt(base); ok {
						t.Errorf("block at %#x: %d, want none", base, b)
					}
				}
				if d := l.Depth(false); d.Offset != c.depthAt || d.Table != 0 {
					t.Errorf("depth %+v", d)
				}
				if r := l.Ring(); r.Offset != c.ringAt || r.Table != 0 {
					t.Errorf("ring %+v", r)
				}
				return
			}
			if l.CounterRef(2) != addr+64+16 || l.Counted(5) != 2 {
				t.Errorf("counter 2 at %#x, counts in blocks below %d; want %#x, 2", l.CounterRef(2), l.Counted(5), addr+64+16)
			}
			if !c.table {
				if size != 2*64 {
					t.Errorf("%d bytes, want two blocks", size)
				}
				return
			}
			areas := l.ProgAddr + l.AreasAt
			if areas%c.stride != 0 || areas < addr+2*64 || areas >= addr+2*64+c.stride ||
				l.TableAt != l.AreasAt+uint64(l.NBlocks)*c.stride || l.TableAt+4*instr.DepthTableSize > size {
				t.Fatalf("areas at %#x, table at +%#x, in %d bytes", areas, l.TableAt, size)
			}
			if d, r := l.Depth(true), l.Ring(); d.Table != addr+l.TableAt || d.Areas != areas || !d.GoABI || r.Table != d.Table || r.Areas != areas {
				t.Errorf("depth %+v, ring %+v", d, r)
			}
			if l.AreaAddr(3) != areas+3*c.stride {
				t.Errorf("area 3 at %#x", l.AreaAddr(3))
			}
			// A stack of three pages given to area 3, its middle page
			// then to area 4 where it was 3's; an entry PROFILE did not
			// write (the program's) is the discard area's.
			const sp = 0x7ffd_0000_2000
			l.PointStack(mem, sp-page, sp+page, 3, -1)
			l.PointStack(mem, sp, sp, 4, 3)
			l.PointStack(mem, sp+page, sp+page, 5, 2)
			for _, w := range []struct {
				sp   uint64
				area int
			}{{sp - page + 8, 3}, {sp + 0x10, 4}, {sp + page, 3}, {sp + 2*page, 0}} {
				if got := l.TableArea(mem, w.sp); got != w.area {
					t.Errorf("the area of stack pointer %#x: %d, want %d", w.sp, got, w.area)
				}
			}
			mem[l.TableAt+4*instr.TableIndex(sp+2*page)] = 1 // (no multiple of the stride)
			if got := l.TableArea(mem, sp+2*page); got != 0 {
				t.Errorf("an entry written over gives area %d, want the discard area", got)
			}
			if len(l.DepthArea(mem, 3)) != instr.DepthAreaAlign || &l.RingArea(mem, 3)[0] != &mem[l.AreasAt+3*c.stride] {
				t.Error("area 3's shadow stack or ring is not at its place")
			}
		})
	}
}

// TestBookLayout: where the run keeps its books in the program, each
// per-thread block has its counters, then its book (instr.Book): its
// header, a frame for each of DepthSlots, and a figure for each of
// BookFuncs functions; no shadow stack of the call depth, no ring. A
// function's figures and the first frame are where the book code finds
// them from the thread base, and Entered reads a function's calls from
// them; a table form has no book.
func TestBookLayout(t *testing.T) {
	l, size := New(Spec{Kind: instr.CountPerThread, Items: 3, InBlock: true, Books: true, BookFuncs: 5,
		MaxBlocks: 16, DepthSlots: depthSlots})
	book := instr.BookSize(depthSlots, 5)
	if l.BookAt != 64 || l.BlockSize != 64+(book+63)&^63 || l.DepthAt != 0 || l.RingAt != 0 || l.KeepsDepth() {
		t.Errorf("layout %+v: want the book at 64, after the counters, in place of the shadow stack", l)
	}
	if size != uint64(l.NBlocks)*l.BlockSize {
		t.Errorf("size %d, want %d blocks of %d", size, l.NBlocks, l.BlockSize)
	}
	b := l.Book()
	if b.Offset != 64 || b.Frames != depthSlots || b.Funcs != 5 || b.FigureAt(4)+instr.BookFigureSize > l.BlockSize {
		t.Errorf("book %+v in a block of %d", b, l.BlockSize)
	}
	mem := make([]byte, size)
	fig := uint64(2)*l.BlockSize + b.FigureAt(3)
	binary.LittleEndian.PutUint64(mem[fig+instr.FigureCalls:], 7)
	binary.LittleEndian.PutUint64(mem[fig+instr.FigureOpen:], 2)
	if n := l.Entered(mem, 2, 3); n != 9 {
		t.Errorf("block 2's function 3 entered %d times, want 9: 7 calls ended, 2 open", n)
	}
	if len(l.Block(mem, 2)) != int(l.BlockSize) || &l.Block(mem, 2)[0] != &mem[2*l.BlockSize] {
		t.Error("block 2 is not where it is")
	}
	if tl, _ := New(Spec{Kind: instr.CountShared, Items: 3, ByTable: true, Books: true, BookFuncs: 5, MaxBlocks: 16, DepthSlots: depthSlots}); tl.BookAt != 0 {
		t.Errorf("the table form has a book at %d", tl.BookAt)
	}
}

// TestCountInAreaLayout: where threads count in their areas (arm64
// without LSE), each area of the stack table has the thread's shadow
// stack, then its counters (no stack without the depth: sampling), a count
// naming its counter by its offset in the area; the areas are aligned
// for the depth code, a stride that is no power of two included, as
// many as take a GiB at most; area 0's counts are the program's too.
func TestCountInAreaLayout(t *testing.T) {
	const addr = 0x7f00_0000_3000
	for _, c := range []struct {
		name    string
		items   int
		byTable bool
		countAt uint64
		stride  uint64
	}{
		{"counting", 3, true, instr.DepthAreaAlign, 2 * instr.DepthAreaAlign},
		{"sampling", 3, false, 0, instr.DepthAreaAlign},
		{"many lines", 5000, true, instr.DepthAreaAlign, 4 * instr.DepthAreaAlign},
		{"very many lines", 1 << 18, true, instr.DepthAreaAlign, instr.DepthAreaAlign + 2<<20},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := Spec{Kind: instr.CountInArea, Items: c.items, ByTable: c.byTable, MaxBlocks: 1 << 20, DepthSlots: depthSlots}
			if l, _ := New(spec); uint64(l.NBlocks)*l.Stride > 1<<30 || uint64(l.NBlocks)*l.Stride <= 1<<29 {
				t.Errorf("%d areas of %#x bytes", l.NBlocks, l.Stride)
			}
			spec.MaxBlocks = 16
			l, size := New(spec)
			l.Place(addr)
			if !l.Table || l.KeepsDepth() != c.byTable || l.CountAt() != c.countAt || l.Stride != c.stride || l.Rings || l.Books || l.NBlocks != 16 {
				t.Fatalf("layout %+v: want 16 areas of %#x bytes, counters at %#x, depth kept %v", l, c.stride, c.countAt, c.byTable)
			}
			areas := l.ProgAddr + l.AreasAt
			if areas%instr.DepthAreaAlign != 0 || areas < addr+2*l.BlockSize || l.TableAt+4*instr.DepthTableSize > size ||
				l.TableAt != l.AreasAt+uint64(l.NBlocks)*l.Stride {
				t.Fatalf("areas at %#x, table at +%#x, in %#x bytes", areas, l.TableAt, size)
			}
			k := c.items - 1
			if l.CounterRef(k) != c.countAt+uint64(k)*8 || l.FirstCounted() != 0 || l.Counted(7) != 7 {
				t.Errorf("counter %d at %#x, counted from area %d to %d", k, l.CounterRef(k), l.FirstCounted(), l.Counted(7))
			}
			if s := l.Site(k); s.Table != addr+l.TableAt || s.Areas != areas || s.Counter != l.CounterRef(k) {
				t.Errorf("site %+v", s)
			}
			mem := make([]byte, size)
			at := l.AreaAddr(3) + l.CounterRef(k) - addr
			binary.LittleEndian.PutUint64(mem[at:], 42)
			if got := l.Count(mem, 3, k); got != 42 || l.Count(mem, 2, k) != 0 || l.Entered(mem, 3, k) != 42 {
				t.Errorf("area 3's counter %d reads %d, want 42", k, got)
			}
		})
	}
}
