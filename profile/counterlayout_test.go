package profile

import (
	"testing"

	"github.com/sourceprofiler/sprof/instr"
)

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
	defer func(n int) { maxBlocks = n }(maxBlocks)
	maxBlocks = 1 << 20
	for _, c := range []struct {
		kind                    instr.CountKind
		inBlock, byTable, rings bool
	}{{instr.CountPerThread, true, false, false}, {instr.CountPerThread, false, false, true}, {instr.CountShared, false, true, false}, {instr.CountShared, false, true, true}} {
		l, _ := newCounterLayout(c.kind, 3, c.inBlock, c.byTable, c.rings)
		each := l.blockSize
		if l.table {
			each = l.stride
		}
		if all := uint64(l.nBlocks) * each; all > 1<<30 || all <= 1<<29 {
			t.Errorf("%+v: %d blocks or areas of %d bytes", c, l.nBlocks, each)
		}
	}
	maxBlocks = 16
	const (
		addr = 0x7f00_0000_0000
		page = 1 << instr.DepthTablePage
	)
	depthBlock := 64 + (instr.DepthAreaSize(depthSlots)+63)&^63
	ringBlock := 64 + instr.RingSize(ringRecords)
	ringStride := instr.RingStride(ringRecords)
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
			l, size := newCounterLayout(c.kind, 3, c.inBlock, c.byTable, c.rings)
			l.place(addr)
			if l.blockSize != c.blockSize || l.depthAt != c.depthAt || l.ringAt != c.ringAt || l.stride != c.stride ||
				l.table != c.table || l.nBlocks != c.nBlocks {
				t.Fatalf("layout %+v: want blocks of %d bytes, depth at %d, ring at %d, stride %d, table %v, %d blocks",
					l, c.blockSize, c.depthAt, c.ringAt, c.stride, c.table, c.nBlocks)
			}
			if l.keepsDepth() != c.keepsDepth || l.ownParts() != c.ownParts {
				t.Errorf("keeps the depth %v, threads own parts %v; want %v, %v", l.keepsDepth(), l.ownParts(), c.keepsDepth, c.ownParts)
			}
			mem := make([]byte, size)
			if c.kind == instr.CountPerThread {
				if l.counterRef(2) != 16 || l.blockAddr(3) != addr+3*c.blockSize || l.counted(5) != 5 || uint64(len(mem)) != uint64(l.nBlocks)*c.blockSize {
					t.Errorf("counter 2 at %#x, block 3 at %#x, counts in blocks below %d, %d bytes", l.counterRef(2), l.blockAddr(3), l.counted(5), len(mem))
				}
				if b, ok := l.blockAt(l.blockAddr(3)); !ok || b != 3 {
					t.Errorf("block at block 3's address: %d %v", b, ok)
				}
				for _, base := range []uint64{addr, l.blockAddr(3) + 8, addr - c.blockSize, l.blockAddr(l.nBlocks)} {
					if b, ok := l.blockAt(base); ok {
						t.Errorf("block at %#x: %d, want none", base, b)
					}
				}
				if d := l.depth(false); d.Offset != c.depthAt || d.Table != 0 {
					t.Errorf("depth %+v", d)
				}
				if r := l.ring(); r.Offset != c.ringAt || r.Table != 0 {
					t.Errorf("ring %+v", r)
				}
				return
			}
			if l.counterRef(2) != addr+64+16 || l.counted(5) != 2 {
				t.Errorf("counter 2 at %#x, counts in blocks below %d; want %#x, 2", l.counterRef(2), l.counted(5), addr+64+16)
			}
			if !c.table {
				if size != 2*64 {
					t.Errorf("%d bytes, want two blocks", size)
				}
				return
			}
			areas := l.progAddr + l.areasAt
			if areas%c.stride != 0 || areas < addr+2*64 || areas >= addr+2*64+c.stride ||
				l.tableAt != l.areasAt+uint64(l.nBlocks)*c.stride || l.tableAt+4*instr.DepthTableSize > size {
				t.Fatalf("areas at %#x, table at +%#x, in %d bytes", areas, l.tableAt, size)
			}
			if d, r := l.depth(true), l.ring(); d.Table != addr+l.tableAt || d.Areas != areas || !d.GoABI || r.Table != d.Table || r.Areas != areas {
				t.Errorf("depth %+v, ring %+v", d, r)
			}
			if l.areaAddr(3) != areas+3*c.stride {
				t.Errorf("area 3 at %#x", l.areaAddr(3))
			}
			// A stack of three pages given to area 3, its middle page
			// then to area 4 where it was 3's; an entry PROFILE did not
			// write (the program's) is the discard area's.
			const sp = 0x7ffd_0000_2000
			l.pointStack(mem, sp-page, sp+page, 3, -1)
			l.pointStack(mem, sp, sp, 4, 3)
			l.pointStack(mem, sp+page, sp+page, 5, 2)
			for _, w := range []struct {
				sp   uint64
				area int
			}{{sp - page + 8, 3}, {sp + 0x10, 4}, {sp + page, 3}, {sp + 2*page, 0}} {
				if got := l.tableArea(mem, w.sp); got != w.area {
					t.Errorf("the area of stack pointer %#x: %d, want %d", w.sp, got, w.area)
				}
			}
			mem[l.tableAt+4*instr.TableIndex(sp+2*page)] = 1 // (no multiple of the stride)
			if got := l.tableArea(mem, sp+2*page); got != 0 {
				t.Errorf("an entry written over gives area %d, want the discard area", got)
			}
			if len(l.depthArea(mem, 3)) != instr.DepthAreaAlign || &l.ringArea(mem, 3)[0] != &mem[l.areasAt+3*c.stride] {
				t.Error("area 3's shadow stack or ring is not at its place")
			}
		})
	}
}
