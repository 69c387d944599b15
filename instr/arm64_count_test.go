package instr

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The counts of arm64 without LSE, in a thread's area of the stack table
// (arm64_count.go), run by a64Exec on a thread whose stack has an area,
// and on a stack no thread owns.

const (
	acTable   = 0xfff0001000
	acAreas   = 0xfff2000000
	acStride  = 0x8000
	acCounter = DepthAreaAlign + 3*8 // the fourth counter, after a depth area
	// The thread's stack is the pages from 0x7ff000000 to acTop, area
	// 1's; the page below acStray is in no thread's (an alternate signal
	// stack), area 0's.
	acTop   = 0x7ff004000
	acStray = 0x7fe010000
)

// acMem is the memory of the two stacks: the table's entries of their
// pages, the pages (zeros), and the counter in areas 0 and 1 (zero).
// Nothing else is mapped, so that any other load or store fails.
func acMem() *fakeMem {
	m := newMem()
	page := uint64(1) << DepthTablePage
	for sp := uint64(acTop - 0x4000); sp < acTop; sp += page {
		m.poke(acTable+4*TableIndex(sp), binary.LittleEndian.AppendUint32(nil, acStride))
		m.poke(sp, make([]byte, page))
	}
	m.poke(acTable+4*TableIndex(acStray-page), make([]byte, 4))
	m.poke(acStray-page, make([]byte, page))
	return m.poke64(acAreas+acCounter, 0).poke64(acAreas+acStride+acCounter, 0)
}

// acSite is the counter's site.
func acSite(cover bool) LineSite {
	return LineSite{Counter: acCounter, Table: acTable, Areas: acAreas, Cover: cover}
}

// acRegs are the registers of a thread at sp about to run the code at
// pTramp: each register a value of its own, flags set, the thread
// pointer area 1's (a Go program's, where PROFILE sets it).
func acRegs(sp uint64) *fakeRegs {
	r := &fakeRegs{pc: pTramp, flags: psN | psC | psV, tp: acAreas + acStride}
	for i := range r.r {
		r.r[i] = 0x1111 * uint64(i+1)
	}
	r.r[aSPReg] = sp
	return r
}

// acCount is the counter of area b.
func acCount(m *fakeMem, b uint64) uint64 { return m.peek64(acAreas + b*acStride + acCounter) }

// acLookup is the listing of the counter's address found through the
// table: tableLookup with the counter's offset added to the areas'.
var acLookup = append(slices.Clone(tableLookup[:6]),
	"mov x17, #0x4018", "movk x17, #0xf200, lsl #16", "movk x17, #0xff, lsl #32", "add x16, x17, x16")

// TestEntryCountARM64: an entry's count in the thread's area, listed by
// the GNU disassembler and run: one more in the area the stack pointer
// finds, at any depth of the thread's stack, and in area 0 for a stack
// no thread owns; nothing changes but x16, x17 and the counter.
func TestEntryCountARM64(t *testing.T) {
	d, ok := ARM64.EntryCount(CountInArea, acSite(false))
	if !ok {
		t.Fatal("no count")
	}
	want := append(slices.Clone(acLookup), "ldr x17, [x16]", "add x17, x17, #0x1", "str x17, [x16]")
	if got := gnuDisasm(t, d.Code, 0); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("listing:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	m := acMem()
	for n, c := range []struct {
		sp    uint64
		area  uint64
		count uint64
	}{
		{acTop - 0x10, 1, 1}, {acTop - 0x4000, 1, 2}, {acTop - 0x1230, 1, 3}, {acStray - 0x20, 0, 1}, {acTop - 0x2000, 1, 4},
	} {
		r := acRegs(c.sp)
		want, wantMem := r.at(pTramp+uint64(len(d.Code))), m.clone()
		wantMem.poke64(acAreas+c.area*acStride+acCounter, c.count)
		if err := a64Exec(d.Code, pTramp, r, m); err != nil {
			t.Fatalf("count %d, sp %#x: %v", n, c.sp, err)
		}
		want.r[aX16], want.r[aX17] = acAreas+c.area*acStride+acCounter, c.count
		if *r != *want {
			t.Errorf("count %d, sp %#x: registers\n got %+v\nwant %+v", n, c.sp, *r, *want)
		}
		if !equalMem(m, wantMem) {
			t.Errorf("count %d, sp %#x: areas' counts %d and %d, want %d in area %d, and nothing else written", n, c.sp, acCount(m, 0), acCount(m, 1), c.count, c.area)
		}
	}
	acSignals(t, "entry", d, 0)
}

// acSignals stops a thread running d (an entry's count, or a line's
// after pushed bytes of its own) before each of its instructions; a
// signal's handler counts on the thread's stack below it, in the same
// area; the thread is rolled out by d.Rollback as PROFILE would (its
// stop's PC in a range: resumed there) and runs on: two counts, whatever
// the stop, and without the rollback, one where a range holds the stop:
// the ranges are exactly where the handler's count would be lost. A
// line's count (pushed) leaves every register as it was.
func acSignals(t *testing.T, what string, d DepthCode, pushed uint64) {
	t.Helper()
	for _, roll := range []bool{true, false} {
		for k := 0; k <= len(d.Code); k += a64InstLen {
			m := acMem()
			r := acRegs(acTop - 0x100)
			before := r.clone()
			if err := a64Exec(d.Code[:k], pTramp, r, m); err != nil {
				t.Fatalf("%s stopped at %#x: %v", what, k, err)
			}
			h := acRegs(r.r[aSPReg] - 0x200)
			if err := a64Exec(d.Code, pTramp, h, m); err != nil {
				t.Fatalf("%s stopped at %#x: the handler's count: %v", what, k, err)
			}
			in := slices.ContainsFunc(d.Rollback, func(rb Rollback) bool { return k >= rb.From && k < rb.To })
			if roll {
				for _, rb := range d.Rollback {
					if k >= rb.From && k < rb.To && len(rb.Restore) == 0 && !rb.Finish {
						r.pc = pTramp + uint64(rb.Resume)
						break
					}
				}
			}
			if err := a64Exec(d.Code, pTramp, r, m); err != nil {
				t.Fatalf("%s stopped at %#x: %v", what, k, err)
			}
			want := uint64(2)
			if !roll && in {
				want = 1
			}
			if got := acCount(m, 1); got != want || acCount(m, 0) != 0 {
				t.Errorf("%s stopped at %#x, rolled back %v (in a range: %v): counts %d, %d in area 0; want %d",
					what, k, roll, in, got, acCount(m, 0), want)
			}
			before.pc = pTramp + uint64(len(d.Code))
			if pushed == 0 {
				before.r[aX16], before.r[aX17] = r.r[aX16], r.r[aX17]
			}
			if *r != *before {
				t.Errorf("%s stopped at %#x: registers after\n got %+v\nwant %+v", what, k, *r, *before)
			}
		}
	}
}

// TestLineCodeInAreaARM64: a line's count in the thread's area, listed
// and run: x16 and x17 pushed, counted, popped; every register and the
// flags as they were; nothing written but the counter and the pair below
// the stack pointer. A cover stores one, with nothing to roll back.
func TestLineCodeInAreaARM64(t *testing.T) {
	d, ok := ARM64.LineCode(CountInArea, acSite(false))
	if !ok {
		t.Fatal("no line code")
	}
	want := append(append([]string{"stp x16, x17, [sp, #-16]!"}, acLookup...),
		"ldr x17, [x16]", "add x17, x17, #0x1", "str x17, [x16]", "ldp x16, x17, [sp], #16")
	if got := gnuDisasm(t, d.Code, 0); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("listing:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d.Count != 4 || len(d.Rollback) != 1 || d.Rollback[0].Resume != 4 || d.Rollback[0].Restore != nil {
		t.Errorf("count at %d, rollback %+v: want the count after the push, started again there", d.Count, d.Rollback)
	}
	cover, ok := ARM64.LineCode(CountInArea, acSite(true))
	if !ok || cover.Rollback != nil {
		t.Fatalf("cover: %v, rollback %+v", ok, cover.Rollback)
	}
	wantCover := append(append([]string{"stp x16, x17, [sp, #-16]!"}, acLookup...), "mov x17, #0x1", "str x17, [x16]", "ldp x16, x17, [sp], #16")
	if diff := cmp.Diff(wantCover, gnuDisasm(t, cover.Code, 0)); diff != "" {
		t.Errorf("cover listing (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		name        string
		code        DepthCode
		sp, area    uint64
		from, count uint64
	}{
		{"a count", d, acTop - 0x40, 1, 41, 42},
		{"a count at the stack's end", d, acTop - 0x4000 + 16, 1, 0, 1},
		{"a count on a stray stack", d, acStray - 0x30, 0, 7, 8},
		{"a cover", cover, acTop - 0x40, 1, 0, 1},
		{"a cover again", cover, acTop - 0x40, 1, 5, 1},
	} {
		m := acMem()
		m.poke64(acAreas+c.area*acStride+acCounter, c.from)
		r := acRegs(c.sp)
		want, wantMem := r.at(pTramp+uint64(len(c.code.Code))), m.clone()
		wantMem.poke64(acAreas+c.area*acStride+acCounter, c.count)
		wantMem.poke64(c.sp-16, r.r[aX16]).poke64(c.sp-8, r.r[aX17])
		if err := a64Exec(c.code.Code, pTramp, r, m); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if *r != *want {
			t.Errorf("%s: registers\n got %+v\nwant %+v", c.name, *r, *want)
		}
		if !equalMem(m, wantMem) {
			t.Errorf("%s: counts %d and %d, want %d in area %d, and nothing else written but the pair below sp", c.name, acCount(m, 0), acCount(m, 1), c.count, c.area)
		}
	}
	acSignals(t, "line", d, 16)
}

// TestEntryCountThreadPointerARM64: a Go function's entry counts in the
// area the thread pointer holds (TPIDR_EL0, set by PROFILE), whatever its
// stack: a goroutine's, in no table, which the code never reads.
func TestEntryCountThreadPointerARM64(t *testing.T) {
	s := acSite(false)
	s.GoStack, s.ThreadPointer = true, true
	d, ok := ARM64.EntryCount(CountInArea, s)
	if !ok {
		t.Fatal("no count")
	}
	want := []string{"mrs x16, tpidr_el0", "mov x17, #0x4018", "add x16, x16, x17", "ldr x17, [x16]", "add x17, x17, #0x1", "str x17, [x16]"}
	if diff := cmp.Diff(want, gnuDisasm(t, d.Code, 0)); diff != "" {
		t.Errorf("listing (-want +got):\n%s", diff)
	}
	m := acMem()
	for n := range uint64(3) {
		r := acRegs(0xc000_0123_4560) // (a goroutine's stack)
		want := r.at(pTramp + uint64(len(d.Code)))
		if err := a64Exec(d.Code, pTramp, r, m); err != nil {
			t.Fatal(err)
		}
		want.r[aX16], want.r[aX17] = acAreas+acStride+acCounter, n+1
		if *r != *want || acCount(m, 1) != n+1 || acCount(m, 0) != 0 {
			t.Errorf("count %d: area 1's %d, area 0's %d; registers\n got %+v\nwant %+v", n+1, acCount(m, 1), acCount(m, 0), *r, *want)
		}
	}
	acSignals(t, "a Go entry", d, 0)
	// A Go line's count through the thread pointer pushes nothing: its
	// goroutine's stack may end below sp (goLineCode, in x18 and x27).
	if l, ok := ARM64.LineCode(CountInArea, s); !ok || slices.Contains(gnuDisasm(t, l.Code, 0), "stp x16, x17, [sp, #-16]!") {
		t.Errorf("a Go line's count through the thread pointer: %v, %q", ok, gnuDisasm(t, l.Code, 0))
	}
}

// TestCountInAreaRefused: no count in an area without a table, for an
// unaligned counter, one whose address overflows, or a Go function's
// (its goroutine's stack in no table), nor of another kind; an entry's
// atomic count is CountCode's.
func TestCountInAreaRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		s    LineSite
	}{
		{"no table", LineSite{Counter: 8, Areas: acAreas}},
		{"an unaligned table", LineSite{Counter: 8, Table: acTable + 2, Areas: acAreas}},
		{"no areas", LineSite{Counter: 8, Table: acTable}},
		{"an unaligned counter", LineSite{Counter: 12, Table: acTable, Areas: acAreas}},
		{"past the address space", LineSite{Counter: ^uint64(0) - 7, Table: acTable, Areas: acAreas}},
		{"a goroutine's stack", LineSite{Counter: 8, Table: acTable, Areas: acAreas, GoStack: true}},
	} {
		if d, ok := ARM64.EntryCount(CountInArea, c.s); ok {
			t.Errorf("%s: an entry's count % x", c.name, d.Code)
		}
		if d, ok := ARM64.LineCode(CountInArea, c.s); ok {
			t.Errorf("%s: a line's count % x", c.name, d.Code)
		}
	}
	for _, kind := range []CountKind{0, CountPerThread, CountInArea + 1} {
		if _, ok := ARM64.EntryCount(kind, acSite(false)); ok {
			t.Errorf("an entry's count of kind %d", kind)
		}
		if _, ok := ARM64.LineCode(kind, acSite(false)); ok {
			t.Errorf("a line's count of kind %d", kind)
		}
		if code := ARM64.CountCode(kind, acCounter); code != nil {
			t.Errorf("CountCode(%d) = % x", kind, code)
		}
	}
	if code := ARM64.CountCode(CountInArea, acCounter); code != nil {
		t.Errorf("CountCode(CountInArea) = % x: it needs the table", code)
	}
	const counter = 0x7f00_0000_1000
	d, ok := ARM64.EntryCount(CountShared, LineSite{Counter: counter})
	if !ok || !bytes.Equal(d.Code, ARM64.CountCode(CountShared, counter)) || d.Rollback != nil {
		t.Errorf("an atomic entry count: %v, % x, %+v; want CountCode's, nothing to roll back", ok, d.Code, d.Rollback)
	}
	if d, ok := AMD64.EntryCount(CountPerThread, LineSite{Counter: 24}); !ok || !bytes.Equal(d.Code, AMD64.CountCode(CountPerThread, 24)) {
		t.Errorf("amd64's entry count: %v, % x", ok, d.Code)
	}
	if _, ok := AMD64.EntryCount(CountInArea, acSite(false)); ok {
		t.Error("amd64 counting in an area")
	}
}

// TestCountInAreaFarCounter: a counter far into an area (a plan of many
// lines) is reached the same way, its offset folded into the areas'
// address.
func TestCountInAreaFarCounter(t *testing.T) {
	for _, counter := range []uint64{0, 8, 1<<15 - 8, 1 << 15, 1<<24 + 8, 1<<30 + 0x1238} {
		s := LineSite{Counter: counter, Table: acTable, Areas: acAreas}
		d, ok := ARM64.EntryCount(CountInArea, s)
		if !ok {
			t.Fatalf("counter %#x: no count", counter)
		}
		m := acMem().poke64(acAreas+acStride+counter, 1<<40)
		r := acRegs(acTop - 0x80)
		if err := a64Exec(d.Code, pTramp, r, m); err != nil {
			t.Fatalf("counter %#x: %v", counter, err)
		}
		if got := m.peek64(acAreas + acStride + counter); got != 1<<40+1 {
			t.Errorf("counter %#x: %#x, want %#x", counter, got, uint64(1<<40+1))
		}
	}
	// (Table and areas too are any address.)
	s := fmt.Sprint(ARM64.EntryCount(CountInArea, LineSite{Counter: 8, Table: 0x0123_4567_89ab_cde0, Areas: 0x0fed_cba9_8765_4000}))
	if !strings.HasSuffix(s, "true") {
		t.Errorf("any table: %s", s)
	}
}
