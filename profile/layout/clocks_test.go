package layout

import (
	"testing"

	"github.com/sourceprofiler/sprof/instr"
)

// TestClocks lays out the books of both forms with a page for each
// thread's clock (Spec.ClockPage), 4 KiB and 16 KiB pages: each block,
// or area, a whole number of pages; the region below the memory where
// there is room, else above; each block's page at the same distance from
// it (modulo 2^64: the region below), page-aligned, in the region, and
// the next block's next; and no region for a layout without books of
// the threads' own.
func TestClocks(t *testing.T) {
	for _, page := range []uint64{4096, 16384} {
		for _, c := range []struct {
			kind    instr.CountKind
			byTable bool
		}{{instr.CountPerThread, false}, {instr.CountShared, true}} {
			s := Spec{Kind: c.kind, Items: 3, ByTable: c.byTable, Books: true, BookFuncs: 5, MaxBlocks: 64, DepthSlots: 16, ClockPage: page}
			l, size := New(s)
			const addr = 0x7f0000000000
			l.Place(addr)
			stride := l.BlockSize
			if l.Table {
				stride = l.Stride
			}
			if stride%page != 0 {
				t.Errorf("page %d, %v: blocks of %d bytes, not whole pages", page, c.kind, stride)
			}
			at := l.ClockCandidates(addr, addr+size, page)
			if len(at) != 2 || at[0]+uint64(l.NBlocks)*stride > addr || at[1] < addr+size || at[0]%page != 0 || at[1]%page != 0 {
				t.Fatalf("page %d, %v: candidates %#x for memory [%#x, %#x)", page, c.kind, at, uint64(addr), addr+size)
			}
			for _, where := range at {
				r := l.PlaceClocks(where, page)
				lo, n := r.Region(&l)
				d := r.Distance(&l)
				for b := range l.NBlocks {
					base := l.BlockAddr(b)
					if l.Table {
						base = l.AreaAddr(b)
					}
					p := r.Page(&l, b)
					if base+d != p || p%page != 0 || p < lo || p+page > lo+n {
						t.Fatalf("page %d, %v, region at %#x: block %d at %#x, its page at %#x, distance %#x, region [%#x, %#x)", page, c.kind, where, b, base, p, d, lo, lo+n)
					}
				}
			}
			if (l.PlaceClocks(at[0], 0) != Clocks{}) {
				t.Errorf("a region with no page size")
			}
		}
	}
	l, _ := New(Spec{Kind: instr.CountShared, Items: 3, MaxBlocks: 64})
	if (l.PlaceClocks(0x10000, 4096) != Clocks{}) {
		t.Error("a region for counters shared, with no books")
	}
}
