package profile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/layout"
	"github.com/sourceprofiler/sprof/profile/procmaps"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// The mechanisms without a process: a plan, a module's code in a fake
// memory, and the tracer's planting, stops and forgetting as pure
// functions of them. Unless a test maps areas (mapAreas), the area next
// to the module cannot be mapped, and the test also shows what planting
// does then (PRF4644).

// fakeMem is a program's memory: code at base, and the areas mapped.
type fakeMem struct {
	base  uint64
	b     []byte
	areas map[uint64][]byte
}

func (m *fakeMem) span(addr uint64, n int) ([]byte, error) {
	if addr >= m.base && addr+uint64(n) <= m.base+uint64(len(m.b)) {
		return m.b[addr-m.base : addr-m.base+uint64(n)], nil
	}
	for at, b := range m.areas {
		if addr >= at && addr+uint64(n) <= at+uint64(len(b)) {
			return b[addr-at : addr-at+uint64(n)], nil
		}
	}
	return nil, fmt.Errorf("%#x: not mapped", addr)
}

// mapAreas lets tr map areas in mem (fakeAreas).
func mapAreas(tr *tracer, mem *fakeMem) { tr.parts.plant.mapArea = fakeAreas(mem) }

// fakeAreas maps areas in mem, each at the address asked for, where
// nothing is mapped yet (as MAP_FIXED_NOREPLACE does).
func fakeAreas(mem *fakeMem) func(hint, size uint64) (uint64, error) {
	mem.areas = map[uint64][]byte{}
	return func(hint, size uint64) (uint64, error) {
		if hint == 0 {
			return 0, errors.New("no address asked for")
		}
		if hint < mem.base+uint64(len(mem.b)) && mem.base < hint+size {
			return 0, errors.New("the code is mapped there")
		}
		for at, b := range mem.areas {
			if hint < at+uint64(len(b)) && at < hint+size {
				return 0, fmt.Errorf("%#x is mapped already", at)
			}
		}
		mem.areas[hint] = make([]byte, size)
		return hint, nil
	}
}

func (m *fakeMem) ReadMem(addr uint64, b []byte) error {
	s, err := m.span(addr, len(b))
	if err == nil {
		copy(b, s)
	}
	return err
}

func (m *fakeMem) WriteMem(addr uint64, b []byte) error {
	s, err := m.span(addr, len(b))
	if err == nil {
		copy(s, b)
	}
	return err
}

// leafCode is a function at 0x401000, x86-64:
//
//	401000 push %rbp
//	401001 mov  %rsp,%rbp
//	401004 mov  %edi,-4(%rbp)
//	401007 mov  -4(%rbp),%eax
//	40100a pop  %rbp
//	40100b ret
var leafCode = []byte{0x55, 0x48, 0x89, 0xe5, 0x89, 0x7d, 0xfc, 0x8b, 0x45, 0xfc, 0x5d, 0xc3}

const leafAt = 0x401000

// fakeTracer returns a tracer of plan over a fake memory holding
// leafCode, decoded as the module scan decodes it, with its warnings.
func fakeTracer(plan *datafile.Plan) (*tracer, *fakeMem, *[]string) {
	return fakeTracerOf(plan, leafCode)
}

// fakeTracerOf is fakeTracer with code at leafAt instead.
func fakeTracerOf(plan *datafile.Plan, code []byte) (*tracer, *fakeMem, *[]string) {
	return fakeTracerAt(plan, code, leafAt)
}

// fakeTracerAt is fakeTracerOf with the code loaded at base (the plan's
// addresses are leafAt's: plant with bias base-leafAt).
func fakeTracerAt(plan *datafile.Plan, code []byte, base uint64) (*tracer, *fakeMem, *[]string) {
	warnings := &[]string{}
	// (Then padding, as a function is followed in a module.)
	mem := &fakeMem{base: base, b: append(slices.Clone(code), bytes.Repeat([]byte{0x90}, 64)...)}
	t := &tracer{
		cfg:     Config{Warn: func(d *prf.Diagnostic) { *warnings = append(*warnings, fmt.Sprintf("PRF%d %v", d.Code, d)) }},
		plan:    plan,
		arch:    instr.AMD64,
		mem:     mem,
		counted: counted{hits: make([]uint64, plan.NumItems())},
		timed:   plan.Method.IsTiming(),
	}
	t.proc = newFakeProcess(t.arch, mem) // (no thread: fakeRun makes one)
	t.parts.calls = newInjector(t)
	t.parts.plant = newPlanter(t, 4096)
	t.parts.plant.mapArea = func(uint64, uint64) (uint64, error) { return 0, errors.New("no room") }
	t.parts.plant.scan = codeScan{code: codeMaps{instr.MapCode(instr.AMD64, code, base, nil)}}
	t.parts.bp = newBreakpoints(t)
	t.parts.modules = newModules(t)
	t.choose()
	return t, mem, warnings
}

func leafInstance() procmaps.Instance {
	return procmaps.Instance{First: procmaps.Mapping{Start: leafAt}, Lo: leafAt, Hi: leafAt + 0x1000}
}

// leafLines has four lines of leafCode: the first at its entry, two that
// share a site, and one whose address is inside an instruction.
func leafLines(m datafile.Method) *datafile.Plan {
	return &datafile.Plan{
		Method:  m,
		Modules: []datafile.Module{{Name: "prog", Arch: "amd64", Files: []string{"leaf.c"}}},
		Lines: []datafile.Line{
			{File: 0, Line: 1, Addrs: []uint64{leafAt}},
			{File: 0, Line: 2, Addrs: []uint64{leafAt + 4}},
			{File: 0, Line: 3, Addrs: []uint64{leafAt + 4}},
			{File: 0, Line: 4, Addrs: []uint64{leafAt + 5}},
		},
	}
}

// TestBreakpointsPlantLines: line sites are planted where the plan puts
// them, two lines at one address share a site, an address inside an
// instruction is refused (PRF4624); with no area for slots, each site is
// still planted, its displacement left to its first hit. Forgetting a
// range drops its sites only, and taking the breakpoints out gives the
// code back as it was.
func TestBreakpointsPlantLines(t *testing.T) {
	tr, mem, warnings := fakeTracer(leafLines(datafile.LineCounting))
	if err := tr.plantModule(0, 0, leafInstance(), nil); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(leafCode)
	want[0], want[4] = 0xcc, 0xcc
	if !bytes.Equal(mem.b[:len(want)], want) {
		t.Errorf("code after planting % x, want % x", mem.b[:len(want)], want)
	}
	if len(tr.parts.bp.sites) != 2 {
		t.Fatalf("%d sites, want 2", len(tr.parts.bp.sites))
	}
	if s := tr.parts.bp.sites[leafAt+4]; s.item != 1 || !slices.Equal(s.more, []int{2}) || !s.pending || s.slot != 0 {
		t.Errorf("shared site: lines %d and %v, pending %v, slot %#x; want 1 and [2], pending, no slot", s.item, s.more, s.pending, s.slot)
	}
	got := strings.Join(*warnings, "\n")
	if !strings.Contains(got, "PRF4644") || !strings.Contains(got, "PRF4624") || !strings.Contains(got, "line 4 of leaf.c") {
		t.Errorf("warnings:\n%s\nwant PRF4644 (no slots) and PRF4624 naming line 4 of leaf.c", got)
	}
	if ours, err := tr.parts.bp.stop(&thread{}, leafAt+1); ours || err != nil {
		t.Errorf("a stop at no site: claimed %v, %v; want not claimed", ours, err)
	}

	tr.parts.bp.forget(leafAt, leafAt+4)
	if _, ok := tr.parts.bp.sites[leafAt]; ok || tr.parts.bp.sites[leafAt+4] == nil {
		t.Errorf("after forgetting [%#x, %#x): sites at %#x, want only %#x", leafAt, leafAt+4, slices.Sorted(maps.Keys(tr.parts.bp.sites)), leafAt+4)
	}
	tr.parts.bp.takeOut(mem, false)
	want[4] = leafCode[4]
	if !bytes.Equal(mem.b[:len(want)], want) {
		t.Errorf("code after taking out % x, want % x (the forgotten site's breakpoint is its module's)", mem.b[:len(want)], want)
	}
}

// TestBreakpointsCoverLines: line coverage plants each line once; the
// first hit at a site covers its lines and takes out the other sites of
// those lines, retired so that a thread stopped at one still finds it.
func TestBreakpointsCoverLines(t *testing.T) {
	plan := leafLines(datafile.LineCoverage)
	plan.Lines[0].Addrs = []uint64{leafAt, leafAt + 7} // line 1 at two sites
	tr, mem, _ := fakeTracer(plan)
	tr.counted.hits[2] = 1 // line 3 covered by an earlier load: not planted again
	if err := tr.plantModule(0, 0, leafInstance(), nil); err != nil {
		t.Fatal(err)
	}
	if s := tr.parts.bp.sites[leafAt+4]; s == nil || s.item != 1 || len(s.more) != 0 {
		t.Fatalf("site at %#x: %+v, want line 2 only", leafAt+4, s)
	}
	if err := tr.parts.bp.cover(tr.parts.bp.sites[leafAt]); err != nil {
		t.Fatal(err)
	}
	if tr.counted.hits[0] != 1 || tr.counted.hits[1] != 0 {
		t.Errorf("hits %v, want line 1 covered, line 2 not", tr.counted.hits)
	}
	if tr.parts.bp.sites[leafAt+7] != nil || tr.parts.bp.retired[leafAt+7] == nil || mem.b[7] != leafCode[7] {
		t.Errorf("line 1's other site: in place %v, retired %v, code %#x; want retired and taken out",
			tr.parts.bp.sites[leafAt+7] != nil, tr.parts.bp.retired[leafAt+7] != nil, mem.b[7])
	}
	if tr.parts.bp.sites[leafAt] == nil {
		t.Errorf("the site hit was taken out by cover: it is the stop's to retire")
	}
}

// leafFuncs has leafCode as function f, counted or covered.
func leafFuncs(m datafile.Method) *datafile.Plan {
	return &datafile.Plan{
		Method:  m,
		Modules: []datafile.Module{{Name: "prog", Arch: "amd64"}},
		Funcs:   []datafile.Func{{Name: "f", Module: 0, Entry: leafAt, Low: leafAt, High: leafAt + uint64(len(leafCode))}},
	}
}

// TestBreakpointsPlantEntries: with no in-process counting, an entry
// takes a breakpoint; with no area for slots it is planted when its
// instruction can be emulated (ret) and, for counting, refused
// when it cannot (PRF4525), while coverage, which removes it at its
// first hit, plants it anyway.
func TestBreakpointsPlantEntries(t *testing.T) {
	for _, c := range []struct {
		name    string
		method  datafile.Method
		entry   uint64
		planted bool
	}{
		{"counting, emulated", datafile.FuncCounting, leafAt + 11, true},
		{"counting, needs a slot", datafile.FuncCounting, leafAt + 4, false},
		{"coverage, needs a slot", datafile.FuncCoverage, leafAt + 4, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan := leafFuncs(c.method)
			plan.Funcs[0].Entry, plan.Funcs[0].Low = c.entry, c.entry
			tr, mem, warnings := fakeTracer(plan)
			tr.parts.bp.removeAtHit = c.method.IsCoverage()
			if err := tr.plantModule(0, 0, leafInstance(), nil); err != nil {
				t.Fatal(err)
			}
			s := tr.parts.bp.sites[c.entry]
			if (s != nil) != c.planted || (mem.b[c.entry-leafAt] == 0xcc) != c.planted {
				t.Fatalf("site %v, code %#x; want planted %v", s != nil, mem.b[c.entry-leafAt], c.planted)
			}
			if !c.planted && !strings.Contains(strings.Join(*warnings, "\n"), "PRF4525") {
				t.Errorf("warnings %q, want PRF4525 naming f", *warnings)
			}
			if c.planted && (s.item != 0 || s.exit != -1 || s.slot != 0) {
				t.Errorf("site %+v, want f's entry, no exit, no slot", s)
			}
		})
	}
}

// TestEntryTrampolinesPlant: counting in-process, the entry, push %rbp
// (1 byte), takes a jump whose last bytes are those after it, left as
// they are, to its trampoline where those bytes make it land (leafCode
// loaded as a PIE program is); the trampoline counts into f's counter
// and runs push %rbp alone. Loaded low (a program not PIE, whose jumps
// cannot land below address 0), the jump ends instead with the prefix of
// the jump that moves out the instruction under its last byte, and its
// trampoline carries the instructions up to it: every instruction of
// leafCode keeps its bytes or begins a jump to a trampoline that runs it
// (instr.VerifyPatched). The breakpoints plant nothing. With no area,
// the entry falls back to the breakpoints, with the reason counted
// (PRF4646), which cannot plant it either: push %rbp needs a slot
// (PRF4525).
func TestEntryTrampolinesPlant(t *testing.T) {
	const countersAt = 0x7f0000000000
	for _, c := range []struct {
		name   string
		base   uint64
		mapped bool
		tramps int
	}{{"pie", pieAt, true, 1}, {"low", leafAt, true, 2}, {"no area", leafAt, false, 0}} {
		t.Run(c.name, func(t *testing.T) {
			tr, mem, warnings := fakeTracerAt(leafFuncs(datafile.FuncCounting), leafCode, c.base)
			if c.mapped {
				mapAreas(tr, mem)
			}
			tr.parts.counters = &counters{env: tr.counterEnv(), layout: layout.Layout{Kind: instr.CountShared, ProgAddr: countersAt, BlockSize: 64, NBlocks: 1, Records: ringRecords, DepthSlots: depthSlots}, blockOf: map[int]int{}}
			tr.parts.entries = newEntryTrampolines(tr.plan, tr.arch, tr.parts.plant, tr.parts.bp.plantEntry)
			tr.choose()
			maps := []procmaps.Mapping{{Start: c.base, End: c.base + 0x1000, Perms: "r-xp"}}
			in := procmaps.Instance{First: procmaps.Mapping{Start: c.base}, Lo: c.base, Hi: c.base + 0x1000}
			if err := tr.plantModule(0, c.base-leafAt, in, maps); err != nil {
				t.Fatal(err)
			}
			tc := tr.parts.counters
			if !c.mapped {
				if len(tc.tramps) != 0 || len(tr.parts.entries.fellBack) != 1 || len(tr.parts.bp.sites) != 0 || !strings.Contains(strings.Join(*warnings, "\n"), "PRF4525") {
					t.Errorf("no area: %d trampolines, %d fall-backs, %d breakpoints, warnings %q; want the fall-back counted and PRF4525",
						len(tc.tramps), len(tr.parts.entries.fellBack), len(tr.parts.bp.sites), *warnings)
				}
				return
			}
			if len(tc.tramps) != c.tramps || len(tr.parts.entries.fellBack) != 0 || len(tr.parts.bp.sites) != 0 {
				t.Fatalf("%d trampolines, %d fall-backs, %d breakpoints; want %d trampolines", len(tc.tramps), len(tr.parts.entries.fellBack), len(tr.parts.bp.sites), c.tramps)
			}
			entry := tc.tramps[slices.IndexFunc(tc.tramps, func(x *tramp) bool { return x.patch.Site == c.base })]
			if j, err := tr.arch.Decode(mem.b, c.base); err != nil || j.Kind != instr.Jump || j.Target != entry.addr || mem.b[0] != 0xe9 {
				t.Errorf("entry % x: want a jump to the trampoline at %#x", mem.b[:5], entry.addr)
			}
			area, _ := mem.span(entry.addr, len(entry.code.Code))
			count := tr.arch.CountCode(instr.CountShared, tc.layout.CounterRef(0))
			if !bytes.HasPrefix(area, count) || !bytes.Contains(area, entry.patch.Orig) {
				t.Errorf("trampoline % x: want f's counting code % x, then the moved instructions % x", area, count, entry.patch.Orig)
			}
			verifyFake(t, tr, mem, leafCode)
		})
	}
}

// verifyFake checks the code of mem, once orig at its base, against the
// rule of instr.Layout (instr.VerifyPatched).
func verifyFake(t *testing.T, tr *tracer, mem *fakeMem, orig []byte) {
	t.Helper()
	errs := instr.VerifyPatched(tr.arch, instr.Patched{Start: mem.base, Orig: orig, Final: mem.b[:len(orig)],
		Funcs: [][2]uint64{{mem.base, mem.base + uint64(len(orig))}}, Code: func(uint64) bool { return false },
		Read: func(addr uint64, n int) ([]byte, bool) {
			for n > 0 {
				if b, err := mem.span(addr, n); err == nil {
					return b, true
				}
				n--
			}
			return nil, false
		}})
	for _, err := range errs {
		t.Error(err)
	}
}

// twoExits is a function at 0x401000 with two exits, gcc -O2's of
//
//	int f(int x) {
//		if (x > 10)
//			return g(x) + 1;
//		int s = 0;
//		for (int i = 0; i < x; i++)
//			s += g(i);
//		return s;
//	}
var twoExits = []byte{
	0x41, 0x54, 0x41, 0x89, 0xfc, 0x55, 0x53, 0x83, 0xff, 0x0a, 0x7f, 0x24, 0x31, 0xdb, 0x31, 0xed, // 0x00
	0x85, 0xff, 0x7e, 0x15, 0x0f, 0x1f, 0x40, 0x00, 0x89, 0xdf, 0x83, 0xc3, 0x01, 0xe8, 0x00, 0x00, // 0x10
	0x00, 0x00, 0x01, 0xc5, 0x41, 0x39, 0xdc, 0x75, 0xef, 0x89, 0xe8, 0x5b, 0x5d, 0x41, 0x5c, 0xc3, // 0x20: ret at 0x2f
	0xe8, 0x00, 0x00, 0x00, 0x00, 0x5b, 0x8d, 0x68, 0x01, 0x89, 0xe8, 0x5d, 0x41, 0x5c, 0xc3, //       0x30: ret at 0x3e
}

// TestExitPatchesPlant: timing in-process, the entry takes a jump to a
// trampoline that records it, and each exit one to a trampoline that
// records the leave, the exits' patches planted after the entry's and
// none of them left to the breakpoints.
func TestExitPatchesPlant(t *testing.T) {
	plan := leafFuncs(datafile.FuncTiming)
	plan.Funcs[0].High = leafAt + uint64(len(twoExits))
	plan.Funcs[0].Frame = datafile.FrameSP
	tr, mem, warnings := fakeTracerOf(plan, twoExits)
	mapAreas(tr, mem)
	tr.parts.entries = newEntryTrampolines(tr.plan, tr.arch, tr.parts.plant, tr.parts.bp.plantEntry)
	tr.parts.counters = &counters{env: tr.counterEnv(), layout: layout.Layout{Kind: instr.CountPerThread, Rings: true, RingAt: 0x1000, BlockSize: 0x1000 + uint64(instr.RingSize(ringRecords)), NBlocks: 1, Records: ringRecords, DepthSlots: depthSlots}, blockOf: map[int]int{}}
	tr.parts.rings = newRings(tr)
	tr.parts.exits = newExitPatches(tr, tr.parts.rings)
	tr.choose()
	maps := []procmaps.Mapping{{Start: leafAt, End: leafAt + 0x1000, Perms: "r-xp"}}
	if err := tr.plantModule(0, 0, leafInstance(), maps); err != nil {
		t.Fatal(err)
	}
	if tr.parts.exits.patched != 2 || len(tr.parts.exits.left) != 0 || len(tr.parts.bp.sites) != 0 {
		t.Fatalf("%d exits patched, %d left, %d breakpoints (warnings %q); want both exits patched",
			tr.parts.exits.patched, len(tr.parts.exits.left), len(tr.parts.bp.sites), *warnings)
	}
	var covered []uint64 // the rets the exits' patches cover
	for _, tramp := range tr.parts.counters.tramps {
		site := tramp.patch.Site
		if j, err := tr.arch.Decode(mem.b[site-leafAt:], site); err != nil || j.Kind != instr.Jump || j.Target != tramp.addr {
			t.Errorf("patch at %#x: % x, want a jump to its trampoline at %#x", site, mem.b[site-leafAt:site-leafAt+5], tramp.addr)
		}
		for _, ret := range []uint64{leafAt + 0x2f, leafAt + 0x3e} {
			if site != leafAt && site <= ret && ret < tramp.patch.End() {
				covered = append(covered, ret)
			}
		}
	}
	if len(tr.parts.counters.tramps) != 3 || !slices.Equal(covered, []uint64{leafAt + 0x2f, leafAt + 0x3e}) {
		t.Errorf("%d trampolines, the exits' patches covering the rets at %#x; want 3, covering 0x40102f and 0x40103e",
			len(tr.parts.counters.tramps), covered)
	}
}

// TestBreakpointsPlantExits: timing with breakpoints (no in-process
// timing), the entry and each exit take a breakpoint, an exit's hit
// meaning the function left.
func TestBreakpointsPlantExits(t *testing.T) {
	plan := leafFuncs(datafile.FuncTiming)
	plan.Funcs[0].High = leafAt + uint64(len(twoExits))
	tr, mem, _ := fakeTracerOf(plan, twoExits)
	mapAreas(tr, mem)
	maps := []procmaps.Mapping{{Start: leafAt, End: leafAt + 0x1000, Perms: "r-xp"}}
	if err := tr.plantModule(0, 0, leafInstance(), maps); err != nil {
		t.Fatal(err)
	}
	want := map[uint64][2]int{leafAt: {0, -1}, leafAt + 0x2f: {-1, 0}, leafAt + 0x3e: {-1, 0}} // item, exit
	for addr, s := range tr.parts.bp.sites {
		if w, ok := want[addr]; !ok || s.item != w[0] || s.exit != w[1] || mem.b[addr-leafAt] != 0xcc {
			t.Errorf("site at %#x: item %d, exit %d, code %#x; want one of %v, planted", addr, s.item, s.exit, mem.b[addr-leafAt], want)
		}
	}
	if len(tr.parts.bp.sites) != len(want) {
		t.Errorf("%d sites, want %d", len(tr.parts.bp.sites), len(want))
	}
}

// TestMechanismsOfARun: every run has breakpoints, last, to plant what
// the others leave; counting in-process adds the counters, timing
// in-process the exits' patches and the rings too. The parts that are no
// mechanism take part in the moments they have hooks for, after the
// mechanisms, and a part given up leaves every list (choose).
func TestMechanismsOfARun(t *testing.T) {
	tr := &tracer{plan: &datafile.Plan{Method: datafile.FuncTiming}, cfg: Config{Warn: func(*prf.Diagnostic) {}}}
	tr.parts.bp = newBreakpoints(tr)
	tr.parts.plant = newPlanter(tr, 4096)
	tr.choose()
	if ms := tr.parts.mechs; !slices.Equal(ms, []mechanism{tr.parts.bp}) {
		t.Errorf("breakpoints only: %v", ms)
	}
	if p := tr.parts; len(p.threads) != 0 || !slices.Equal(p.execs, []execHook{tr.parts.bp, &tr.parts.watch}) || !slices.Equal(p.ends, []endHook{tr.parts.bp}) {
		t.Errorf("breakpoints only: the hooks are %+v", p)
	}
	tr.parts.entries = newEntryTrampolines(tr.plan, tr.arch, tr.parts.plant, tr.parts.bp.plantEntry)
	tr.parts.counters = &counters{env: tr.counterEnv()}
	tr.choose()
	if ms := tr.parts.mechs; !slices.Equal(ms, []mechanism{tr.parts.entries, tr.parts.bp}) {
		t.Errorf("counting in-process: %v", ms)
	}
	if p := tr.parts; !slices.Equal(p.threads, []threadHook{tr.parts.counters}) || !slices.Equal(p.execs, []execHook{tr.parts.bp, tr.parts.counters, &tr.parts.watch}) || !slices.Equal(p.ends, []endHook{tr.parts.bp, tr.parts.counters}) {
		t.Errorf("counting in-process: the hooks are %+v", p)
	}
	tr.parts.rings = newRings(tr)
	tr.parts.exits = newExitPatches(tr, tr.parts.rings)
	tr.parts.sampling = &sampler{}
	tr.choose()
	if ms := tr.parts.mechs; !slices.Equal(ms, []mechanism{tr.parts.entries, tr.parts.exits, tr.parts.rings, tr.parts.bp}) {
		t.Errorf("timing in-process: %v", ms)
	}
	if p := tr.parts; !slices.Equal(p.threads, []threadHook{tr.parts.counters, tr.parts.sampling}) || !slices.Equal(p.ends, []endHook{tr.parts.bp, tr.parts.counters, tr.parts.sampling}) ||
		!slices.Equal(p.execs, []execHook{tr.parts.rings, tr.parts.bp, tr.parts.counters, tr.parts.sampling, &tr.parts.watch}) || !slices.Equal(p.seen, []seenHook{tr.parts.rings}) || !slices.Equal(p.vforks, []vforkHook{tr.parts.rings}) {
		t.Errorf("with the sampler: the hooks are %+v", p)
	}
	// Timed: the books' clocks after the counters (a thread's books open
	// once it has its block; their figures after the counters' and before
	// the sampler's), after the rings at a stop.
	tr.parts.books = testBooks(-1, "", false, 0)
	tr.choose()
	kinds := func(hs ...any) (s []string) {
		for _, h := range hs {
			s = append(s, fmt.Sprintf("%T", h))
		}
		return s
	}
	p := tr.parts
	for _, c := range []struct {
		hook string
		got  []string
		want []string
	}{
		{"threads", kinds(anys(p.threads)...), []string{"*profile.counters", "*profile.timedRun", "*profile.sampler"}},
		{"seen", kinds(anys(p.seen)...), []string{"*profile.rings", "*profile.timedRun"}},
		{"handled", kinds(anys(p.handled)...), []string{"*profile.timedRun"}},
		{"exiting", kinds(anys(p.exiting)...), []string{"*profile.timedRun"}},
		{"stats", kinds(anys(p.stats)...), []string{"*profile.counters", "*profile.timedRun", "*profile.sampler"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("timed: the %s hooks are %v, want %v", c.hook, c.got, c.want)
		}
	}
	// The books kept in the program in place of the rings: the ledgers
	// after the books' clocks, where a thread's book is read before they
	// close its clock, and the code's cost known; they take part in the
	// releases, and the entries and exits run their code. They bring
	// their own sampler, of PROFILE's code's share (owncode.go), after
	// them: its samples are read once their end has asked for them.
	rings, fsSampler := tr.parts.rings, tr.parts.sampling
	tr.parts.rings, tr.parts.ledgers, tr.parts.sampling = nil, newLedgers(tr), nil
	tr.parts.exits = newExitPatches(tr, tr.parts.ledgers)
	tr.choose()
	p = tr.parts
	if ms := p.mechs; !slices.Equal(ms, []mechanism{p.entries, p.exits, p.bp, p.ledgers}) {
		t.Errorf("timing with the books in the program: %v", ms)
	}
	if s := p.sampling; s == nil || !s.timing || s.interval != DefaultInterval || s.env.own == nil {
		t.Fatalf("the books in the program without their sampler of PROFILE's code: %+v", s)
	}
	tr.choose()
	if tr.parts.sampling != p.sampling {
		t.Error("the sampler of PROFILE's code made again at the next choice")
	}
	for _, c := range []struct {
		hook string
		got  []string
		want []string
	}{
		{"threads", kinds(anys(p.threads)...), []string{"*profile.counters", "*profile.timedRun", "*profile.ledgers", "*profile.sampler"}},
		{"seen", kinds(anys(p.seen)...), []string{"*profile.timedRun", "*profile.ledgers"}},
		{"release", kinds(anys(p.release)...), []string{"*profile.ledgers"}},
		{"ends", kinds(anys(p.ends)...), []string{"*profile.breakpoints", "*profile.counters", "*profile.ledgers", "*profile.sampler"}},
		{"vfork", kinds(anys(p.vforks)...), []string{"*profile.ledgers"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("the books in the program: the %s hooks are %v, want %v", c.hook, c.got, c.want)
		}
	}
	if p.entries.env.timer != timer(p.ledgers) || p.bp.env.timer != timer(p.ledgers) || p.exits.timer != timer(p.ledgers) {
		t.Error("the trampolines and the breakpoints do not time with the books in the program")
	}
	tr.parts.rings, tr.parts.ledgers = rings, nil
	tr.parts.exits = newExitPatches(tr, rings)
	tr.choose()
	if p := tr.parts; p.sampling != nil || slices.ContainsFunc(p.ends, func(h endHook) bool { _, ok := h.(*sampler); return ok }) {
		t.Errorf("the books in the program given up, their sampler stays: %+v", p.sampling)
	}
	// (Function sampling's sampler is the run's own, books or none.)
	tr.parts.sampling = fsSampler
	tr.parts.ledgers = newLedgers(tr)
	tr.choose()
	if tr.parts.sampling != fsSampler {
		t.Error("function sampling's sampler replaced by the books in the program's")
	}
	tr.parts.ledgers = nil
	tr.choose()
	gone := tr.parts.rings
	tr.noRings()
	if ms := tr.parts.mechs; !slices.Equal(ms, []mechanism{tr.parts.entries, tr.parts.bp}) {
		t.Errorf("the rings given up: %v", ms)
	}
	if p := tr.parts; slices.Contains(p.seen, seenHook(gone)) || tr.parts.counters.env.rings != nil || tr.parts.entries.env.timer != nil {
		t.Errorf("the rings given up, still a part: %+v", p)
	}
}

// TestCountersForget: a module unloaded takes its trampolines with it, and
// a ring-full breakpoint there is no longer recognised.
func TestCountersForget(t *testing.T) {
	c := &counters{layout: layout.Layout{Rings: true, Records: ringRecords, DepthSlots: depthSlots}, tramps: []*tramp{
		{addr: 0x10000, patch: instr.Patch{Site: 0x401000}, regions: []region{{at: 0x20, full: 2}}},
		{addr: 0x20000, patch: instr.Patch{Site: 0x7f0000}, regions: []region{{at: 0x20, full: 2}}},
	}}
	if !c.ringFull(0x10022) || !c.ringFull(0x20022) || c.ringFull(0x10021) {
		t.Fatalf("ring-full breakpoints not found where the trampolines have them")
	}
	c.forget(0x400000, 0x500000)
	if len(c.tramps) != 1 || c.ringFull(0x10022) || !c.ringFull(0x20022) {
		t.Errorf("after forgetting the module at 0x400000: %d trampolines; want the other module's only", len(c.tramps))
	}
}

// TestCodeScanForget: what the scan found in a module unloaded is
// forgotten; a return into another module from it goes too.
func TestCodeScanForget(t *testing.T) {
	s := codeScan{
		landings: landings{0x401000, 0x402000, 0x7f1000},
		returns:  map[uint64][]uint64{0x7f2000: {0x401005, 0x7f1005}, 0x401100: {0x401105}},
		starts:   map[uint64]bool{0x401000: true, 0x7f2000: true},
	}
	s.forget(0x400000, 0x500000)
	if !slices.Equal(s.landings, landings{0x7f1000}) || len(s.returns) != 1 || !slices.Equal(s.returns[0x7f2000], []uint64{0x7f1005}) ||
		len(s.starts) != 1 || !s.starts[0x7f2000] {
		t.Errorf("after forgetting [0x400000, 0x500000): %+v", s)
	}
}

// lineTracer plants leafLines(m) in-process over a fake memory holding
// leafCode (and padding: the code is read a trampoline's length past the
// last site), with areas mapped, counters of two blocks in shared memory
// and the given number of threads; every sets --every-line-site.
func lineTracer(t *testing.T, m datafile.Method, every bool, threads int) (*tracer, *fakeMem, *[]string, *lineTrampolines, *ptrace.Shared) {
	t.Helper()
	tr, mem, warnings := fakeTracerAt(leafLines(m), lineCode(), pieAt)
	tr.cfg.EveryLineSite = every
	mapAreas(tr, mem)
	tr.threads = map[int]*thread{}
	for tid := range threads {
		tr.threads[100+tid] = &thread{tid: 100 + tid}
	}
	shared := plantLines(t, tr)
	return tr, mem, warnings, tr.parts.lines, shared
}

// lineCode is leafCode and padding, as lineTracer loads it.
func lineCode() []byte { return append(slices.Clone(leafCode), bytes.Repeat([]byte{0x90}, 256)...) }

// plantLines plants the lines of tr's plan (leafLines, leafCode loaded
// at pieAt) in-process, with counters of two blocks in the shared memory
// it returns.
func plantLines(t *testing.T, tr *tracer) *ptrace.Shared {
	t.Helper()
	shared, err := ptrace.NewShared(4096)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shared.Close() })
	tr.parts.counters = &counters{env: tr.counterEnv(), shared: shared, layout: layout.Layout{Kind: instr.CountPerThread, ProgAddr: 0x7f0000000000, BlockSize: 64, NBlocks: 2, Records: ringRecords, DepthSlots: depthSlots}, next: 2, blockOf: map[int]int{}}
	tr.parts.lines = newLineTrampolines(tr)
	tr.choose()
	maps := []procmaps.Mapping{{Start: pieAt, End: pieAt + 0x1000, Perms: "r-xp"}}
	in := procmaps.Instance{First: procmaps.Mapping{Start: pieAt}, Lo: pieAt, Hi: pieAt + 0x1000}
	if err := tr.plantModule(0, pieAt-leafAt, in, maps); err != nil {
		t.Fatal(err)
	}
	return shared
}

// lineRig is the lines' trampolines over their environment alone, no
// tracer (lineEnv): leafLines planted in-process as lineTracer plants
// them, by a planter of their own (testPlanter) over the fake memory,
// the counters of two blocks in shared memory, and a fake process of
// the given number of threads (100, 101...). p is the planting, its
// sites the lines' trampolines left (to the breakpoints, in a run), and
// warned the warnings' numbers.
type lineRig struct {
	lt     *lineTrampolines
	p      *planting
	mem    *fakeMem
	fp     *fakeProcess
	warned *[]int
	shared *ptrace.Shared
}

// newLineRig plants leafLines(m) over the lines' environment alone;
// every sets --every-line-site.
func newLineRig(t *testing.T, m datafile.Method, every bool, threads int) *lineRig {
	t.Helper()
	return newLineRigOf(t, leafLines(m), lineCode(), pieAt, every, threads)
}

// newLineRigOf is newLineRig for plan, whose code (linked at leafAt) is
// loaded at base.
func newLineRigOf(t *testing.T, plan *datafile.Plan, code []byte, base uint64, every bool, threads int) *lineRig {
	t.Helper()
	mem := &fakeMem{base: base, b: append(slices.Clone(code), bytes.Repeat([]byte{0x90}, 64)...)}
	pl, warned := testPlanter(plan, mem, fakeAreas(mem))
	pl.scan = codeScan{code: codeMaps{instr.MapCode(instr.AMD64, code, base, nil)}}
	shared, err := ptrace.NewShared(4096)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shared.Close() })
	c := &counters{shared: shared, layout: layout.Layout{Kind: instr.CountPerThread, ProgAddr: 0x7f0000000000, BlockSize: 64, NBlocks: 2, Records: ringRecords, DepthSlots: depthSlots}, next: 2, blockOf: map[int]int{}}
	fp := newFakeProcess(instr.AMD64, mem)
	ths := map[int]*thread{}
	for tid := range threads {
		ths[100+tid] = &thread{tid: 100 + tid}
	}
	lt := numberLines(lineEnv{plan: plan, arch: instr.AMD64, every: every, warn: pl.warn, mem: pl.mem, proc: fp, threads: ths,
		plant: pl, counters: c, hits: make([]uint64, plan.NumItems()), watch: &watch{},
		goOn: func(th *thread) error { return fp.cont(th.tid, 0) }})
	maps := []procmaps.Mapping{{Start: base, End: base + 0x1000, Perms: "r-xp"}}
	in := procmaps.Instance{First: procmaps.Mapping{Start: base}, Lo: base, Hi: base + 0x1000}
	p := pl.newLinePlanting(0, base-leafAt, in, maps, lt.env.hits, lt.env.ways, lt)
	p.counters = c
	if err := lt.plant(p); err != nil {
		t.Fatal(err)
	}
	jumps, err := pl.write(p)
	if err != nil {
		t.Fatal(err)
	}
	lt.env.watch.wrote(p.mi, p.bias, jumps)
	c.sortTramps()
	return &lineRig{lt: lt, p: p, mem: mem, fp: fp, warned: warned, shared: shared}
}

// cover sets the counter of the line site at the link-time address addr
// in the first thread's block, as its trampoline does.
func (r *lineRig) cover(addr uint64) {
	binary.LittleEndian.PutUint64(r.shared.Bytes()[64+r.lt.index.at(0, addr)*8:], 1)
}

// pieAt is where lineTracer loads leafCode, as a PIE program is loaded:
// a punned jump may land below it.
const pieAt = 0x555555556000

// TestLineTrampolinesPlant: line counting in-process over leafCode,
// loaded as a PIE program is, the lines' trampolines over their
// environment alone (lineRig). The site at its entry, push %rbp (1 byte),
// takes a punned jump: e9, then the next instruction's bytes as they
// were, so its trampoline lies exactly where those bytes make the jump
// land; it counts without touching the flags (a return follows: they
// may be its result), runs push %rbp and the two instructions its jump
// lies over, and returns after them (instr.Layout's carryTail). The site
// of lines 2 and 3, inside that straight run, shares the entry's count:
// no probe of its own; probing every site (--every-line-site) gives it a
// punned jump of its own, planned first, with which the entry's jump
// then ends, and on whose trampoline the entry's goes on. Line 4,
// inside an instruction, is refused (PRF4624). collect gives each line
// its sites' counts.
func TestLineTrampolinesPlant(t *testing.T) {
	for _, every := range []bool{false, true} {
		r := newLineRig(t, datafile.LineCounting, every, 1)
		lt, mem, c := r.lt, r.mem, r.lt.env.counters
		want := 1
		if every {
			want = 2
		}
		if len(c.tramps) != want || r.p.lineSites.left != 0 || len(lt.fellBack) != 0 {
			t.Fatalf("every site %v: %d trampolines, %d sites left to breakpoints, %d fall-backs; want %d trampolines", every, len(c.tramps), r.p.lineSites.left, len(lt.fellBack), want)
		}
		final := slices.Clone(leafCode)
		final[0] = 0xe9
		if every {
			// (The second site's jump: its opcode, then the two bytes
			// of its displacement inside its instruction.)
			copy(final[4:], mem.b[4:7])
			final[4] = 0xe9
		}
		if !bytes.Equal(mem.b[:len(leafCode)], final) {
			t.Errorf("every site %v: code % x, want % x: a jump's first byte over each site, the other bytes as they were", every, mem.b[:len(leafCode)], final)
		}
		entry := pieAt + 5 + uint64(int32(binary.LittleEndian.Uint32(mem.b[1:])))
		tp := c.tramps[slices.IndexFunc(c.tramps, func(x *tramp) bool { return x.patch.Site == pieAt })]
		if tp.addr != entry {
			t.Errorf("the entry's trampoline at %#x, want %#x, where its jump lands", tp.addr, entry)
		}
		k0, k1 := lt.index.at(0, leafAt), lt.index.at(0, leafAt+4)
		incq := instr.AMD64.CountCode(instr.CountPerThread, c.layout.CounterRef(k0))
		count, _ := instr.AMD64.LineCode(instr.CountPerThread, instr.LineSite{Counter: c.layout.CounterRef(k0), Save: lt.save})
		code := tp.code.Code
		if bytes.Contains(code, incq) || !bytes.HasPrefix(code, count.Code) || !bytes.Equal(code[len(count.Code):len(count.Code)+1], leafCode[:1]) {
			t.Errorf("trampoline % x: want the count that keeps the flags (% x), then push %%rbp", code, count.Code)
		}
		if every {
			next := c.tramps[slices.IndexFunc(c.tramps, func(x *tramp) bool { return x.patch.Site == pieAt+4 })]
			if len(tp.code.PCs) != 2 || tp.patch.Return() != next.addr {
				t.Errorf("every site: the entry's trampoline runs %d instructions and goes on to %#x; want 2, then the next site's trampoline at %#x", len(tp.code.PCs), tp.patch.Return(), next.addr)
			}
		} else if len(tp.code.PCs) != 3 || tp.patch.Return() != pieAt+7 {
			t.Errorf("the entry's trampoline runs %d instructions and returns to %#x; want 3, returning to %#x", len(tp.code.PCs), tp.patch.Return(), pieAt+7)
		}
		if _, ok := lt.alias[k1]; ok == every {
			t.Errorf("every site %v: the second site shares the entry's count: %v", every, ok)
		}
		if !slices.Contains(*r.warned, 4624) {
			t.Errorf("warnings %v: want line 4 refused (PRF4624)", *r.warned)
		}
		block := r.shared.Bytes()[c.layout.BlockSize:]
		binary.LittleEndian.PutUint64(block[k0*8:], 5)
		if every {
			binary.LittleEndian.PutUint64(block[k1*8:], 3)
		}
		lt.collect(nil)
		wantHits := []uint64{5, 5, 5, 0}
		if every {
			wantHits = []uint64{5, 3, 3, 0}
		}
		if !slices.Equal(lt.env.hits, wantHits) {
			t.Errorf("every site %v: hits %v, want %v", every, lt.env.hits, wantHits)
		}
	}
}

// anys returns the elements of s as values of type any.
func anys[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// TestLineHost: a site whose own instruction no jump fits in a program
// loaded low, from gofmt: "nop" (1 byte) before "mov (%rdx),%edx; mov
// %edx,%edx", with the next site 7 bytes on. The nop's jump would end
// with "8b 12 89 d2": a displacement whose top byte, 0xd2, puts its
// window below address 0. Its count is kept by the first mov instead,
// which it always runs on to (a host): that mov's jump ends with "89 d2
// 48", a window above. The nop stays as it was; the mov's trampoline
// counts the nop's line, then runs the mov; collect gives the line its
// count, and the next line, on the same straight run, the same.
func TestLineHost(t *testing.T) {
	code := []byte{0x90, 0x8b, 0x12, 0x89, 0xd2, 0x48, 0x8b, 0xb4, 0x24, 0x48, 0x01, 0x00, 0x00, 0x4c, 0x8b, 0x46, 0x30, 0xc3}
	plan := &datafile.Plan{Method: datafile.LineCounting,
		Modules: []datafile.Module{{Name: "prog", Arch: "amd64", Files: []string{"file.go"}}},
		Lines:   []datafile.Line{{File: 0, Line: 593, Addrs: []uint64{leafAt}}, {File: 0, Line: 594, Addrs: []uint64{leafAt + 5}}},
	}
	const base = 0x538053
	r := newLineRigOf(t, plan, append(code, bytes.Repeat([]byte{0xcc}, 256)...), base, false, 1)
	lt, c := r.lt, r.lt.env.counters
	if lt.hosted != 1 || len(lt.fellBack) != 0 || r.p.lineSites.left != 0 {
		t.Fatalf("%d hosted, %d fall-backs, %d sites left: want the nop's count hosted; code % x", lt.hosted, len(lt.fellBack), r.p.lineSites.left, r.mem.b[:16])
	}
	if r.mem.b[0] != 0x90 || r.mem.b[1] != 0xe9 {
		t.Errorf("code % x: want the nop as it was, a jump at the first mov", r.mem.b[:9])
	}
	k := lt.index.at(0, leafAt)
	count, _ := instr.AMD64.LineCode(instr.CountPerThread, instr.LineSite{Counter: c.layout.CounterRef(k), Save: lt.save})
	i := slices.IndexFunc(c.tramps, func(x *tramp) bool { return x.patch.Site == base+1 })
	if i < 0 || !bytes.HasPrefix(c.tramps[i].code.Code, count.Code) {
		t.Fatalf("no trampoline at the first mov that counts the nop's line first")
	}
	binary.LittleEndian.PutUint64(r.shared.Bytes()[c.layout.BlockSize+uint64(k)*8:], 7)
	lt.collect(nil)
	if !slices.Equal(lt.env.hits, []uint64{7, 7}) {
		t.Errorf("hits %v: want the nop's line's 7, and the next line's, which shares its count", lt.env.hits)
	}
}
