package profile

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/layout"
	"github.com/sourceprofiler/sprof/profile/procmaps"
)

// TestEntryTrampolinesEnv: the entries' trampolines over their
// environment alone, no tracer: a planting engine over a fake memory
// holding leafCode, loaded as a PIE program is, with areas mapped, the
// counters, and a breakpoints' planting that notes the entries it is
// handed. f's entry takes a jump to a trampoline that counts into f's
// counter, or, timing in-process, records the entry into the thread's
// ring (a region a signal rolls a thread out of), then runs push %rbp;
// g, whose extent the plan does not hold, is handed to the breakpoints
// with its reason, counted among the fall-backs. A stop is never the
// trampolines' (the rings' ring-full breakpoints are the rings').
func TestEntryTrampolinesEnv(t *testing.T) {
	for _, timed := range []bool{false, true} {
		plan := leafFuncs(datafile.FuncCounting)
		l := layout.Layout{Kind: instr.CountShared, ProgAddr: 0x7f0000000000, BlockSize: 64, NBlocks: 1, Records: ringRecords, DepthSlots: depthSlots}
		if timed {
			plan = leafFuncs(datafile.FuncTiming)
			plan.Funcs[0].Frame = datafile.FrameSP
			l = layout.Layout{Kind: instr.CountPerThread, Rings: true, RingAt: 0x1000, BlockSize: 0x1000 + uint64(instr.RingSize(ringRecords)), NBlocks: 1, Records: ringRecords, DepthSlots: depthSlots}
		}
		plan.Funcs = append(plan.Funcs, datafile.Func{Name: "g", Module: 0, Entry: leafAt + 11})
		mem := &fakeMem{base: pieAt, b: append(slices.Clone(leafCode), bytes.Repeat([]byte{0x90}, 64)...)}
		e, _ := testPlanter(plan, mem, fakeAreas(mem))
		c := &counters{layout: l, blockOf: map[int]int{}}
		var rs *rings
		if timed {
			rs = &rings{ringEnv: ringEnv{arch: instr.AMD64, plan: plan, counters: c}}
		}
		var handed []int
		et := newEntryTrampolines(plan, instr.AMD64, e, func(p *planting, item int, _ bool) error { handed = append(handed, item); return nil })
		et.env.counters = c // (as tracer.choose sets them)
		if rs != nil {
			et.env.timer = rs
		}

		p := plantTwoAtPIE(t, e, et, c, timed)
		if et.patched != 1 || len(et.fellBack) != 1 || et.fellBack[0].item != 1 || !errors.Is(et.fellBack[0].err, errNoExtent) ||
			!slices.Equal(handed, []int{1}) || p.entries != nil {
			t.Fatalf("timed %v: %d patched, fall-backs %+v, handed to the breakpoints %v, left %v; want f patched, g handed over (no extent)",
				timed, et.patched, et.fellBack, handed, p.entries)
		}
		if len(c.tramps) != 1 || len(p.jumps) != 1 || c.tramps[0].patch.Site != pieAt || p.jumps[0].tramp != c.tramps[0] {
			t.Fatalf("timed %v: %d trampolines, %d jumps; want f's, at %#x", timed, len(c.tramps), len(p.jumps), uint64(pieAt))
		}
		if _, err := e.write(p); err != nil {
			t.Fatal(err)
		}
		tp := c.tramps[0]
		if j, err := instr.AMD64.Decode(mem.b, pieAt); err != nil || j.Kind != instr.Jump || j.Target != tp.addr {
			t.Errorf("timed %v: entry % x, want a jump to the trampoline at %#x", timed, mem.b[:5], tp.addr)
		}
		code, _ := mem.span(tp.addr, len(tp.code.Code))
		want := instr.AMD64.CountCode(instr.CountShared, l.CounterRef(0))
		var regions []region
		if timed {
			rc, _ := instr.AMD64.RecordCode(rs.recordRing(&plan.Funcs[0]), instr.RecordTag(0, false))
			want, regions = rc.Code, []region{recordRegion(0, &rc)}
		}
		if !bytes.HasPrefix(code, want) || !bytes.Contains(code, tp.patch.Orig) {
			t.Errorf("timed %v: trampoline % x, want f's code % x, then the moved instructions % x", timed, code, want, tp.patch.Orig)
		}
		if !reflect.DeepEqual(tp.regions, regions) {
			t.Errorf("timed %v: the trampoline's regions %+v, want %+v", timed, tp.regions, regions)
		}
		if ours, err := et.stop(&thread{}, tp.addr); ours || err != nil {
			t.Errorf("timed %v: a stop in the trampoline claimed %v, %v; want not claimed", timed, ours, err)
		}
	}
}

// plantTwoAtPIE plants, with et, the entries of the plan's first two
// functions (items 0 and 1), its program loaded at pieAt (linked at
// leafAt), counted by c, and returns the planting; rings: with the room
// timing's trampolines take (planter.areaCells).
func plantTwoAtPIE(t *testing.T, e *planter, et *entryTrampolines, c *counters, rings bool) *planting {
	t.Helper()
	bias := uint64(pieAt - leafAt)
	in := procmaps.Instance{First: procmaps.Mapping{Start: pieAt}, Lo: pieAt, Hi: pieAt + 0x1000}
	maps := []procmaps.Mapping{{Start: pieAt, End: pieAt + 0x1000, Perms: "r-xp"}}
	items := []int{0, 1}
	p := &planting{bias: bias, in: in, maps: maps, items: items, text: e.readText(items, bias),
		area: e.areaNear(in, maps, e.areaCells(items, bias, 0, rings)), entries: slices.Clone(items), counters: c}
	if err := et.plant(p); err != nil {
		t.Fatal(err)
	}
	return p
}
