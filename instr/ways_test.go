package instr

import (
	"fmt"
	"strings"
	"testing"
)

// TestTrampolineWaysARM64 runs the trampoline of every conditional
// branch of a64TrampCases (B.cond under every NZCV, CBZ, CBNZ, TBZ,
// TBNZ), with each way's mark a line site's cover (LineCode: x16 and x17
// pushed, STADD, popped), and compares it with Displace's emulation of
// the branch in place: the same registers and memory but the marks, and
// the mark of the way the emulation went set, the other not.
func TestTrampolineWaysARM64(t *testing.T) {
	const taken, on = 0x5555_0000_1000, 0x5555_0000_1008
	mark := func(counter uint64) []byte {
		d, ok := ARM64.LineCode(CountShared, LineSite{Counter: counter, Cover: true})
		if !ok {
			t.Fatalf("no cover code for %#x", counter)
		}
		return d.Code
	}
	ways := [2][]byte{mark(taken), mark(on)}
	n := 0
	for _, c := range a64TrampCases() {
		word := a64Words(c.word)
		x, err := decodeARM64(word, pSite)
		if err != nil || x.Kind != CondJump || x.op == a64BCond && x.cond >= 14 {
			continue
		}
		n++
		t.Run(c.name, func(t *testing.T) {
			p, err := ARM64.PlanPatch(word, pSite, pSite)
			if err != nil {
				t.Fatalf("PlanPatch: %v", err)
			}
			p.Ways = [][2][]byte{ways}
			tr, err := ARM64.Trampoline(&p, pTramp, nil)
			if err != nil {
				t.Fatalf("Trampoline: %v", err)
			}
			d, err := ARM64.Displace(word, pSite, aSlot)
			if err != nil || d.Emulate == nil {
				t.Fatalf("Displace = %+v, %v; want an emulation", d, err)
			}
			want, wantMem := c.in.at(pSite), newMem()
			want.r[aSPReg] = aSP
			if err := d.Emulate(want, wantMem); err != nil {
				t.Fatalf("Emulate: %v", err)
			}
			got, gotMem := c.in.at(pTramp), newMem()
			got.r[aSPReg], gotMem.lenient = aSP, true
			if err := a64Exec(tr.Code, pTramp, got, gotMem); err != nil {
				t.Fatalf("trampoline: %v\n% x", err, tr.Code)
			}
			wentTaken := want.pc == x.Target
			if gotTaken, gotOn := gotMem.peek64(taken), gotMem.peek64(on); gotTaken != boolU64(wentTaken) || gotOn != boolU64(!wentTaken) {
				t.Errorf("marks: taken %d, on %d; the branch went to its target: %v", gotTaken, gotOn, wentTaken)
			}
			for a := range uint64(16) {
				delete(gotMem.b, taken+a)
				delete(gotMem.b, aSP-16+a) // (the pushed pair, below sp)
			}
			if *got != *want {
				t.Errorf("registers after the trampoline:\n got %+v\nwant %+v", *got, *want)
			}
			if !equalMem(gotMem, wantMem) {
				t.Errorf("memory after the trampoline differs from the emulation's")
			}
			// A thread at the start of a way's mark has gone that way.
			mapped := map[uint64]uint64{}
			for _, m := range tr.PCs {
				mapped[m.Tramp] = m.Orig
			}
			if mapped[pTramp] != pSite || mapped[pTramp+4] != x.Target || mapped[pTramp+4+uint64(len(ways[0]))+4] != pSite+4 {
				t.Errorf("PCs %x: want the branch, its target after the branch, and the next instruction at the second mark", tr.PCs)
			}
		})
	}
	if n < 14*16 {
		t.Fatalf("%d conditional branches run, want every B.cond's at least (but AL's and NV's)", n)
	}
}

// boolU64 is 1 for true.
func boolU64(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// TestTrampolineWaysAMD64 lays out the trampoline of a patch of test and
// je rel8 with each way's mark a cover (LineCode): the branch negated
// over the first mark and a jump to the target, then the second mark and
// the next instruction; a thread at the start of a mark has gone its way
// (PCs). A jcc with no negated form (jrcxz) is refused.
func TestTrampolineWaysAMD64(t *testing.T) {
	need(t, "objdump")
	const (
		start = 0x401000
		tramp = 0x400000
	)
	fn := hexs(t, "85ff 740a 488b0510000000 31c0 c3 b801000000 c3")
	p, err := AMD64.PlanPatch(fn, start, start)
	if err != nil {
		t.Fatal(err)
	}
	mark := func(counter uint64) []byte {
		d, ok := AMD64.LineCode(CountPerThread, LineSite{Counter: counter, Save: 0x800, Cover: true})
		if !ok {
			t.Fatalf("no cover code for %#x", counter)
		}
		return d.Code
	}
	p.Ways = [][2][]byte{{}, {mark(0x100), mark(0x108)}}
	tr, err := AMD64.Trampoline(&p, tramp, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := disassemble(t, tr.Code, tramp)
	want := []string{
		"test   %edi,%edi",
		"jne    0x40001a",
		"movq   $0x1,%gs:0x100",
		"jmp    0x40100e", // the je's target
		"movq   $0x1,%gs:0x108",
		"mov    0xfed(%rip),%rax        # 0x40101b", // the same address as the original's
		"jmp    0x40100b",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("trampoline:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantPCs := []PCMap{{tramp, start}, {tramp + 2, start + 2}, {tramp + 8, start + 14}, {tramp + 26, start + 4}, {tramp + 39, start + 4}}
	if fmt.Sprint(tr.PCs) != fmt.Sprint(wantPCs) {
		t.Errorf("PCs %x, want %x", tr.PCs, wantPCs)
	}
	for _, c := range []struct{ pc, want uint64 }{{tramp + 8, start + 14}, {tramp + 20, start + 14}, {tramp + 26, start + 4}} {
		if got := tr.OrigPC(tramp, p.End(), c.pc); got != c.want {
			t.Errorf("OrigPC(%#x) = %#x, want %#x", c.pc, got, c.want)
		}
	}
	jrcxz := hexs(t, "e3fe 90909090 c3")
	q, err := AMD64.PlanPatch(jrcxz, start, start)
	if err == nil {
		q.Ways = [][2][]byte{{mark(0x100), mark(0x108)}}
		if _, err := AMD64.Trampoline(&q, tramp, nil); err == nil {
			t.Errorf("jrcxz with ways: no error")
		}
	}
}
