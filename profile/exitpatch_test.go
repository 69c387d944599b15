package profile

import (
	"slices"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/layout"
)

// TestExitTrampolines: the exits' patches over an environment of their
// own, not a tracer's: each exit of twoExits is patched with a jump to a
// trampoline that records the leave, built in the area and registered
// with the rings' counters; an exit a breakpoint planted before covers
// keeps it, and is told why.
func TestExitTrampolines(t *testing.T) {
	hi := leafAt + uint64(len(twoExits))
	plan := &datafile.Plan{Method: datafile.FuncTiming, Funcs: []datafile.Func{{Name: "f", Low: leafAt, High: hi, Entry: leafAt, Frame: datafile.FrameSP}}}
	plans, err := instr.AMD64.PlanExits(twoExits, leafAt, hi, false)
	if err != nil || len(plans) != 2 {
		t.Fatalf("the exits of twoExits: %d (%v), want 2", len(plans), err)
	}
	var exits []instr.Exit
	for _, p := range plans {
		exits = append(exits, p.Exit)
	}
	for _, c := range []struct {
		name    string
		sites   map[uint64]*site // the breakpoints planted before
		patched int
		left    []uint64
	}{
		{"both patched", map[uint64]*site{}, 2, nil},
		{"a breakpoint in the second's window", map[uint64]*site{leafAt + 0x3b: {addr: leafAt + 0x3b, orig: []byte{0x5d}}}, 1, []uint64{leafAt + 0x3e}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &rings{ringEnv: ringEnv{arch: instr.AMD64, plan: plan,
				counters: &counters{layout: layout.Layout{Kind: instr.CountPerThread, Rings: true, RingAt: 0x1000, Records: ringRecords, DepthSlots: depthSlots}}}}
			x := &exitPatches{arch: instr.AMD64, plan: plan, timer: r, counters: func() *counters { return r.counters },
				scan: &codeScan{code: codeMaps{instr.MapCode(instr.AMD64, twoExits, leafAt, nil)}},
				bp:   &breakpoints{sites: c.sites}, warn: func(*prf.Diagnostic) {},
				padding: func(*planting) *hopSpace { return &hopSpace{} }}
			const areaAt = 0x7f0000
			p := &planting{text: moduleText{start: leafAt, b: twoExits}, area: newCodeArea(areaAt, 4*trampCell)}
			jumps, left := x.exitTrampolines(p, map[int][]instr.Exit{0: exits})
			if x.patched != c.patched || len(jumps) != c.patched || len(r.counters.tramps) != c.patched {
				t.Errorf("%d exits patched, %d jumps, %d trampolines registered; want %d", x.patched, len(jumps), len(r.counters.tramps), c.patched)
			}
			for _, j := range jumps {
				if in, err := instr.AMD64.Decode(j.jump, j.addr); err != nil || in.Kind != instr.Jump || in.Target != j.tramp.addr || j.tramp.addr < areaAt {
					t.Errorf("patch at %#x: % x, want a jump to its trampoline in the area", j.addr, j.jump)
				}
				if len(j.tramp.regions) != 1 || j.tramp.regions[0].full == 0 {
					t.Errorf("trampoline at %#x: regions %+v, want its record's, with a ring-full breakpoint", j.tramp.addr, j.tramp.regions)
				}
			}
			var leftPCs []uint64
			for _, e := range left[0] {
				leftPCs = append(leftPCs, e.PC)
			}
			if !slices.Equal(leftPCs, c.left) || len(x.left) != len(c.left) {
				t.Errorf("exits left %#x (told %d), want %#x", leftPCs, len(x.left), c.left)
			}
		})
	}
}
