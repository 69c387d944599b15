package profile

import (
	"cmp"
	"slices"
	"sort"
)

// room is where the trampolines of one module's planting go
// (instr.Room): the area mapped next to the module, for jumps that reach
// it, and pages mapped where punned jumps land, each page holding every
// trampoline whose window it meets. The pages stay the module's: they
// are unmapped with it (planter.areas).
type room struct {
	e *planter
	p *planting
	// pages are the pages mapped so far, by the 16 MiB region their
	// first byte is in (pageRegion), each region's by address, each page
	// with the ranges taken in it, sorted. (A program of many punned
	// jumps, the go command, maps 32,000 pages, at addresses all over
	// the windows of its jumps: one sorted list of them all took a
	// second to keep in order.)
	pages map[uint64][]*roomPage
	// busy are the process's mappings at the planting, and PROFILE's own,
	// sorted; tried are the pages asked for since, mapped or refused, by
	// address, with their sizes: no page is asked for where either is.
	busy  [][2]uint64
	tried map[uint64]uint64
	// tries counts the pages asked for, mapped or refused: each is a
	// system call in the program.
	tries int
}

// roomPage is memory the room mapped: a page, or two where a
// trampoline's window asked for one that crosses into the next.
type roomPage struct {
	addr, size uint64
	taken      [][2]uint64
	// gap is the longest run of bytes not taken: a page with less than a
	// trampoline's is passed over at once (a window of 16 MiB may hold
	// hundreds of pages, most of them full).
	gap uint64
}

// measure sets pg.gap from its ranges taken.
func (pg *roomPage) measure() {
	pg.gap = 0
	at := pg.addr
	for _, t := range pg.taken {
		pg.gap = max(pg.gap, t[0]-min(at, t[0]))
		at = max(at, t[1])
	}
	pg.gap = max(pg.gap, pg.addr+pg.size-min(at, pg.addr+pg.size))
}

// maxPageTries bounds the pages a planting asks the program to map for
// punned jumps: past it, a site no page already mapped has room for
// keeps a breakpoint.
const maxPageTries = 1 << 15

// newRoom returns the room of planting p.
func newRoom(e *planter, p *planting) *room {
	r := &room{e: e, p: p, pages: map[uint64][]*roomPage{}, tried: map[uint64]uint64{}}
	for _, m := range p.maps {
		r.busy = append(r.busy, [2]uint64{m.Start, m.End})
	}
	for _, a := range e.ownMaps {
		r.busy = append(r.busy, [2]uint64{a[0], a[0] + a[1]})
	}
	slices.SortFunc(r.busy, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	// (Merged where they overlap: PROFILE's own mappings are among the
	// process's, and one may be part of a larger mapping the kernel
	// joined it to. busyAt wants their ends in order too.)
	merged := r.busy[:0]
	for _, b := range r.busy {
		if n := len(merged); n > 0 && b[0] < merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], b[1])
			continue
		}
		merged = append(merged, b)
	}
	r.busy = merged
	return r
}

// Find returns the lowest address in [lo, hi) congruent to phase modulo
// step with n bytes free: in the area, in a page mapped already, or with
// grow in a page it maps (a few tries).
func (r *room) Find(lo, hi uint64, n int, step, phase uint64, grow bool) (uint64, bool) {
	a := r.p.area
	if a.mapped() && step <= 16 {
		// (Not for a trampoline at a far alignment, which would leave
		// the area's room before it unused: a page of its own.)
		if at := align(a.next, step, phase); at >= lo && at < hi && at+(uint64(n)+15)&^15 <= a.base+a.size {
			return at, true
		}
	}
	for region := pageRegion(lo) - min(pageRegion(lo), 1); region <= pageRegion(hi-1); region++ {
		pages := r.pages[region]
		i := sort.Search(len(pages), func(i int) bool { return pages[i].addr+pages[i].size > lo })
		for _, pg := range pages[i:] {
			if pg.addr >= hi {
				break
			}
			if pg.gap < uint64(n)+step-1 {
				continue // (at any alignment: one that would fit aligned is passed over, rarely)
			}
			if at, ok := pg.free(max(lo, pg.addr), min(hi, pg.addr+pg.size), pg.addr+pg.size, n, step, phase); ok {
				return at, true
			}
		}
	}
	if !grow {
		return 0, false
	}
	return r.mapPage(lo, hi, n, step, phase)
}

// mapPage maps a page where n bytes at an address in [lo, hi)
// congruent to phase modulo step fit (two, where they cross into the
// next), a few tries: none where another mapping is.
func (r *room) mapPage(lo, hi uint64, n int, step, phase uint64) (uint64, bool) {
	ps := r.e.pageSize
	for try, page := 0, lo&^(ps-1); try < 4 && page < hi && r.tries < maxPageTries; page += ps {
		at := align(max(lo, page), step, phase)
		if at >= hi || at >= page+ps {
			continue
		}
		size := (at + uint64(n) + ps - 1 - page) &^ (ps - 1)
		if r.busyAt(page, page+size) {
			continue
		}
		try++
		r.tries++
		r.tried[page] = size
		if _, err := r.e.mapArea(page, size); err != nil {
			continue
		}
		r.e.areas[r.p.in.First.Start] = append(r.e.areas[r.p.in.First.Start], [2]uint64{page, size})
		r.addPage(page, size)
		return at, true
	}
	return 0, false
}

// pageRegion is the 16 MiB region of addr, by which the room keeps its
// pages: a window of a punned jump meets one or two.
func pageRegion(addr uint64) uint64 { return addr >> 24 }

// addPage notes the page of size bytes at page as mapped.
func (r *room) addPage(page, size uint64) {
	region := r.pages[pageRegion(page)]
	k := sort.Search(len(region), func(i int) bool { return region[i].addr > page })
	r.pages[pageRegion(page)] = slices.Insert(region, k, &roomPage{addr: page, size: size, gap: size})
}

// busyAt reports whether [lo, hi), at most two pages, meets a mapping
// of the process or a page asked for.
func (r *room) busyAt(lo, hi uint64) bool {
	// (The mappings do not overlap, merged in newRoom: their ends are in
	// order too, and the first that ends above lo is the one to meet
	// [lo, hi) if any does.)
	i := sort.Search(len(r.busy), func(i int) bool { return r.busy[i][1] > lo })
	if i < len(r.busy) && r.busy[i][0] < hi {
		return true
	}
	ps := r.e.pageSize
	for page := lo&^(ps-1) - min(lo&^(ps-1), ps); page < hi; page += ps {
		if size, ok := r.tried[page]; ok && page+size > lo {
			return true
		}
	}
	return false
}

// Take takes n bytes at addr, which Find returned.
func (r *room) Take(addr uint64, n int) {
	a := r.p.area
	if a.mapped() && addr >= a.base && addr < a.base+a.size {
		a.next = addr
		a.alloc(n)
		return
	}
	if pg := r.page(addr); pg != nil {
		k, _ := slices.BinarySearchFunc(pg.taken, addr, func(t [2]uint64, a uint64) int { return cmp.Compare(t[0], a) })
		pg.taken = slices.Insert(pg.taken, k, [2]uint64{addr, addr + uint64(n)})
		pg.measure()
	}
}

// Release gives back the n bytes at addr: in a page, for another
// trampoline; in the area only when they were the last taken.
func (r *room) Release(addr uint64, n int) {
	a := r.p.area
	if a.mapped() && addr >= a.base && addr < a.base+a.size {
		if a.next == addr+(uint64(n)+15)&^15 {
			a.next = addr
		}
		return
	}
	if pg := r.page(addr); pg != nil {
		pg.taken = slices.DeleteFunc(pg.taken, func(t [2]uint64) bool { return t[0] == addr })
		pg.measure()
	}
}

// page returns the page holding addr, or nil.
func (r *room) page(addr uint64) *roomPage {
	for region := pageRegion(addr) - min(pageRegion(addr), 1); region <= pageRegion(addr); region++ {
		pages := r.pages[region]
		i := sort.Search(len(pages), func(i int) bool { return pages[i].addr+pages[i].size > addr })
		if i < len(pages) && pages[i].addr <= addr {
			return pages[i]
		}
	}
	return nil
}

// inPage reports whether addr is in a page of the room (not the area).
func (r *room) inPage(addr uint64) bool { return r.page(addr) != nil }

// free returns the lowest address in [lo, hi), congruent to phase
// modulo step, where n bytes up to end (the page's) are not taken.
func (pg *roomPage) free(lo, hi, end uint64, n int, step, phase uint64) (uint64, bool) {
	at := align(lo, step, phase)
	// (The ranges taken do not overlap: their ends are in order too.)
	i := sort.Search(len(pg.taken), func(i int) bool { return pg.taken[i][1] > at })
	for _, t := range pg.taken[i:] {
		if at+uint64(n) <= t[0] || at >= hi {
			break
		}
		at = max(at, align(t[1], step, phase))
	}
	return at, at < hi && at+uint64(n) <= end
}

// align returns the lowest address at or above at congruent to phase
// modulo step.
func align(at, step, phase uint64) uint64 {
	if step <= 1 {
		return at
	}
	return at + (phase-at%step+step)%step
}
