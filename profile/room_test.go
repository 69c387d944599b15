package profile

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRoomPageFree: a page's free space is found past the ranges taken,
// aligned, within the window asked for; the longest gap, which Find
// passes full pages over with, follows every take and release.
func TestRoomPageFree(t *testing.T) {
	pg := &roomPage{addr: 0x10000, size: 0x1000, gap: 0x1000}
	take := func(lo, hi uint64) {
		pg.taken = append(pg.taken, [2]uint64{lo, hi})
		pg.measure()
	}
	take(0x10000, 0x10030)
	take(0x10040, 0x10f00)
	if pg.gap != 0x100 {
		t.Errorf("gap %#x, want 0x100 (the end of the page)", pg.gap)
	}
	for _, c := range []struct {
		lo, hi uint64
		n      int
		step   uint64
		at     uint64
		ok     bool
	}{
		{0x10000, 0x11000, 16, 1, 0x10030, true},   // the hole between the two
		{0x10000, 0x11000, 16, 16, 0x10030, true},  // aligned already
		{0x10000, 0x11000, 17, 16, 0x10f00, true},  // too long for the hole
		{0x10000, 0x10f00, 17, 16, 0x10f00, false}, // nor in the window
		{0x10f80, 0x11000, 0x80, 1, 0x10f80, true},
		{0x10f81, 0x11000, 0x80, 1, 0x10f81, false}, // past the page's end
	} {
		at, ok := pg.free(c.lo, c.hi, pg.addr+pg.size, c.n, c.step, 0)
		if ok != c.ok || ok && at != c.at {
			t.Errorf("free(%#x, %#x, %d, step %d) = %#x, %v; want %#x, %v", c.lo, c.hi, c.n, c.step, at, ok, c.at, c.ok)
		}
	}
	pg.taken = pg.taken[:1]
	pg.measure()
	if pg.gap != 0x1000-0x30 {
		t.Errorf("gap %#x after a release, want %#x", pg.gap, 0x1000-0x30)
	}
}

// TestBorrowedMem: while a thread is borrowed for a run of system
// calls, the code read at its PC is the program's own, not the system
// call written over it, wherever a read begins or ends.
func TestBorrowedMem(t *testing.T) {
	mem := &fakeMem{base: 0x1000, b: []byte{1, 2, 3, 0x0f, 0x05, 6, 7}}
	m := borrowedMem{Memory: mem, pc: 0x1003, orig: []byte{4, 5}}
	for _, c := range []struct {
		addr uint64
		n    int
		want []byte
	}{
		{0x1000, 7, []byte{1, 2, 3, 4, 5, 6, 7}},
		{0x1004, 2, []byte{5, 6}},
		{0x1002, 2, []byte{3, 4}},
		{0x1005, 2, []byte{6, 7}},
	} {
		b := make([]byte, c.n)
		if err := m.ReadMem(c.addr, b); err != nil || !bytes.Equal(b, c.want) {
			t.Errorf("ReadMem(%#x, %d) = % x, %v; want % x", c.addr, c.n, b, err, c.want)
		}
	}
}

// TestRoomOrder: pages noted in any order, some across the end of a
// region, the room finds the lowest free place in a window, the page
// holding an address and whether a range meets a page asked for as a
// search of them all would.
func TestRoomOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 6))
	const ps = 0x1000
	const base = 1<<24 - 41*ps // (around a region's end: the page just below it, when two pages long, crosses it)
	for round := range 50 {
		r := &room{e: &planter{pageSize: ps}, p: &planting{area: newCodeArea(0, 0)}, pages: map[uint64][]*roomPage{}, tried: map[uint64]uint64{}}
		var pages, taken [][2]uint64 // the model the room is held to
		for _, k := range rng.Perm(40) {
			if rng.IntN(3) == 0 {
				continue
			}
			// (Some across a region's end.)
			page, size := uint64(base+k*2*ps), uint64(ps*(1+rng.IntN(2)))
			r.addPage(page, size)
			r.tried[page] = size
			pages = append(pages, [2]uint64{page, page + size})
			if rng.IntN(2) == 0 {
				at, n := page+uint64(rng.IntN(ps/2)), 16+rng.IntN(ps/2-16) // (within the page)
				r.Take(at, n)
				taken = append(taken, [2]uint64{at, at + uint64(n)})
			}
		}
		for range 200 {
			lo := uint64(base + rng.IntN(82*ps))
			hi := lo + uint64(1+rng.IntN(2*ps))
			n := 1 + rng.IntN(64)
			// The lowest place of the brute force: every address, in a
			// page of the model and clear of what it took.
			want, found := uint64(0), false
			for at := lo; at < hi && !found; at++ {
				end := at + uint64(n)
				inPage := slices.ContainsFunc(pages, func(p [2]uint64) bool { return p[0] <= at && end <= p[1] })
				free := !slices.ContainsFunc(taken, func(t [2]uint64) bool { return t[0] < end && at < t[1] })
				want, found = at, inPage && free
			}
			if at, ok := r.Find(lo, hi, n, 1, 0, false); ok != found || ok && at != want {
				t.Fatalf("round %d: Find(%#x, %#x, %d) = %#x, %v; want %#x, %v", round, lo, hi, n, at, ok, want, found)
			}
			meets := slices.ContainsFunc(pages, func(p [2]uint64) bool { return p[0] < hi && p[1] > lo })
			if got := r.busyAt(lo, hi); got != meets {
				t.Fatalf("round %d: busyAt(%#x, %#x) = %v, want %v", round, lo, hi, got, meets)
			}
			in := slices.IndexFunc(pages, func(p [2]uint64) bool { return p[0] <= lo && lo < p[1] })
			if pg := r.page(lo); (pg != nil) != (in >= 0) || pg != nil && pg.addr != pages[in][0] {
				t.Fatalf("round %d: page(%#x) = %v, want %v", round, lo, pg, in >= 0)
			}
		}
	}
}
