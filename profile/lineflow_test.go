package profile

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/testutil"
	"github.com/sourceprofiler/sprof/prep"
)

// flowOf returns a flow of blocks 16 bytes each, at 16*b: succs are each
// block's successors, entered and leaves the blocks entered from outside
// and leaving for it.
func flowOf(succs [][]int, entered, leaves []int) *flowGraph {
	g := &flowGraph{blocks: make([]flowNode, len(succs))}
	for b, s := range succs {
		g.blocks[b] = flowNode{start: uint64(16 * b), end: uint64(16*b + 16), succs: s}
	}
	for _, b := range entered {
		g.blocks[b].entered = true
	}
	for _, b := range leaves {
		g.blocks[b].leaves = true
	}
	return g
}

// runFlow runs f at random: from a block entered from outside along its
// ways until one leaves, segments times (a call, its return, a throw),
// and returns how often each block ran.
func runFlow(f *flowGraph, r *rand.Rand, segments int) []uint64 {
	n := len(f.blocks)
	exits := make([]bool, n) // the blocks from which a way leads out
	for changed := true; changed; {
		changed = false
		for b := range f.blocks {
			ok := f.blocks[b].leaves
			for _, s := range f.blocks[b].succs {
				ok = ok || exits[s]
			}
			if ok && !exits[b] {
				exits[b], changed = true, true
			}
		}
	}
	var starts []int
	for b := range f.blocks {
		if f.blocks[b].entered && exits[b] {
			starts = append(starts, b)
		}
	}
	counts := make([]uint64, n)
	for range segments {
		if len(starts) == 0 {
			break
		}
		b := starts[r.IntN(len(starts))]
		for steps := 0; ; steps++ {
			counts[b]++
			var next []int
			for _, s := range f.blocks[b].succs {
				if exits[s] {
					next = append(next, s)
				}
			}
			if f.blocks[b].leaves && (len(next) == 0 || r.IntN(len(next)+1) == 0 || steps > 200) {
				break
			}
			b = next[r.IntN(len(next))]
		}
	}
	return counts
}

// checkFlow places sites over f, and checks for runs of f that every
// site's count, derived or shared, equals its block's; then again with
// some probes failed (refine).
func checkFlow(t *testing.T, f *flowGraph, sites []uint64, r *rand.Rand) flowPlacement {
	t.Helper()
	pl := placeFlow(f, sites)
	if got := len(pl.probes) + len(pl.shared) + len(pl.derived); got != len(sites) {
		t.Fatalf("%d sites placed, want %d: %+v", got, len(sites), pl)
	}
	for _, s := range pl.shared {
		if f.block(s[0]) != f.block(s[1]) {
			t.Fatalf("site %#x shares with %#x of another block", s[0], s[1])
		}
	}
	checkSolver(t, f, pl.solve, r)
	if len(pl.probes) > 0 && len(pl.derived) > 0 {
		failed := map[uint64]bool{pl.probes[r.IntN(len(pl.probes))]: true}
		n := len(pl.derived)
		pl.refine(failed)
		for _, p := range pl.solve.probes {
			if failed[p.site] {
				t.Fatalf("site %#x failed, still probed", p.site)
			}
		}
		if len(pl.derived) > n {
			t.Fatalf("%d derived after a failure, %d before", len(pl.derived), n)
		}
		checkSolver(t, f, pl.solve, r)
	}
	return pl
}

// checkSolver checks s against runs of f.
func checkSolver(t *testing.T, f *flowGraph, s *flowSolver, r *rand.Rand) {
	t.Helper()
	for i := range s.probes {
		s.probes[i].counter = i
	}
	for range 5 {
		truth := runFlow(f, r, 1+r.IntN(20))
		counts := s.counts(func(k int) uint64 { return truth[f.block(s.probes[k].site)] })
		for i, d := range s.derived {
			if want := truth[f.block(d.site)]; counts[i] != want {
				t.Fatalf("site %#x derived %d, ran %d (counts %v)", d.site, counts[i], want, truth)
			}
		}
	}
}

// everyBlock returns a site at the start of each block of f.
func everyBlock(f *flowGraph) []uint64 {
	var s []uint64
	for _, b := range f.blocks {
		s = append(s, b.start)
	}
	return s
}

func TestPlaceFlow(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name   string
		f      *flowGraph
		sites  []uint64 // (every block's start if nil)
		probes int
	}{
		// 0 -> 1 | 2 -> 3: one arm and the join are probed, the test
		// and the other arm derived.
		{"diamond", flowOf([][]int{{1, 2}, {3}, {3}, nil}, []int{0}, []int{3}), nil, 2},
		// 0 -> 1 (a loop of itself) -> 2: the loop is probed, before
		// and after follow (each the count of the function's calls).
		{"loop", flowOf([][]int{{1}, {1, 2}, nil}, []int{0}, []int{2}), nil, 2},
		// 0 -> 1 (head) -> 2 (inner loop) -> 3 (latch) -> 1 | 4
		{"nested loops", flowOf([][]int{{1}, {2}, {2, 3}, {1, 4}, nil}, []int{0}, []int{4}), nil, 3},
		// 0 calls and leaves; 1 after the call, entered afresh (the
		// call may not return): both probed.
		{"call", flowOf([][]int{nil, nil}, []int{0, 1}, []int{0, 1}), nil, 2},
		// 0 -> 2 or leaves (a conditional tail call), 1 (entered from
		// outside) -> 2: none follows from the others
		{"branch only", flowOf([][]int{{2}, {2}, nil}, []int{0, 1}, []int{0, 2}), nil, 3},
		// a diamond whose arms have no site: the test and the join
		{"sites apart", flowOf([][]int{{1, 2}, {3}, {3}, nil}, []int{0}, []int{3}), []uint64{0, 4, 8, 48}, 1},
		// two sites in one block: one shares
		{"shared", flowOf([][]int{{1}, nil}, []int{0}, []int{1}), []uint64{0, 8, 16}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sites := tc.sites
			if sites == nil {
				sites = everyBlock(tc.f)
			}
			pl := checkFlow(t, tc.f, sites, r)
			if len(pl.probes) != tc.probes {
				t.Errorf("%d probes %x, want %d (derived %+v)", len(pl.probes), pl.probes, tc.probes, pl.derived)
			}
		})
	}
}

// TestPlaceFlowRandom: random graphs, random runs; the counts derived
// from the probed sites are the counts.
func TestPlaceFlowRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	probes, sites := 0, 0
	for i := range 2000 {
		f := randomFlow(r, 2+r.IntN(14))
		var s []uint64
		for _, b := range f.blocks {
			for k := range r.IntN(3) {
				s = append(s, b.start+uint64(4*k))
			}
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			pl := checkFlow(t, f, s, r)
			probes, sites = probes+len(pl.probes), sites+len(s)
		})
	}
	t.Logf("%d of %d sites probed", probes, sites)
}

// randomFlow returns a flow of n blocks as a compiler might lay them
// out: each falls through, branches, jumps, returns or calls.
func randomFlow(r *rand.Rand, n int) *flowGraph {
	succs := make([][]int, n)
	entered, leaves := []int{0}, []int(nil)
	reached := make([]bool, n)
	to := func(b, s int) {
		if s >= n {
			leaves = append(leaves, b)
			return
		}
		for _, x := range succs[b] {
			if x == s {
				return
			}
		}
		succs[b] = append(succs[b], s)
		reached[s] = true
	}
	for b := range n {
		switch r.IntN(6) {
		case 0: // falls through
			to(b, b+1)
		case 1: // a conditional branch
			to(b, r.IntN(n+1))
			to(b, b+1)
		case 2: // a jump
			to(b, r.IntN(n+1))
		case 3: // a return
			leaves = append(leaves, b)
		case 4: // a call elsewhere
			leaves = append(leaves, b)
			if b+1 < n {
				entered = append(entered, b+1)
			}
		case 5: // a call of a function joined
			to(b, r.IntN(n))
			if b+1 < n {
				entered = append(entered, b+1)
			}
		}
	}
	for b := range n {
		if !reached[b] || r.IntN(10) == 0 {
			entered = append(entered, b)
		}
	}
	return flowOf(succs, entered, leaves)
}

// TestModuleFlowJoin: two functions' flows joined. f [1000,1020): a
// block that calls g, then the block after the call (entered afresh)
// that returns; g [2000,2010): one block that returns. g's entry is
// reached by f's call alone, unless code not joined jumps there
// (cross), its address is taken (refs, within reach) or it is an
// outside entry (anywhere).
func TestModuleFlowJoin(t *testing.T) {
	f := &instr.Flow{Blocks: []instr.FlowBlock{
		{Start: 0x1000, End: 0x1010, Far: []uint64{0x2000}},
		{Start: 0x1010, End: 0x1020, Entered: true, Leaves: true},
	}}
	g := &instr.Flow{Blocks: []instr.FlowBlock{{Start: 0x2000, End: 0x2010, Leaves: true}}}
	for _, tc := range []struct {
		name     string
		cross    [][2]uint64
		anywhere []uint64
		refs     []uint64
		reach    uint64
		entered  string
	}{
		{"joined", nil, nil, nil, 1, "[true true false]"},
		{"called from code not joined", [][2]uint64{{0x3000, 0x2000}, {0x1008, 0x2000}}, nil, nil, 1, "[true true true]"},
		{"exported", nil, []uint64{0x2000}, nil, 1, "[true true true]"},
		{"address taken", nil, nil, []uint64{0x2000}, 1, "[true true true]"},
		{"a page's address taken", nil, nil, []uint64{0x1ff0}, 4096, "[true true true]"},
		{"a reference before it", nil, nil, []uint64{0x1ff0}, 1, "[true true false]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fg := &flowGraph{}
			var parts []flowPart
			for _, fl := range []*instr.Flow{f, g} {
				base := len(fg.blocks)
				for _, b := range fl.Blocks {
					fg.blocks = append(fg.blocks, flowNode{start: b.Start, end: b.End, entered: b.Entered, leaves: b.Leaves})
				}
				parts = append(parts, flowPart{fl, base, [2]uint64{fl.Blocks[0].Start, fl.Blocks[len(fl.Blocks)-1].End}})
			}
			fg.blocks[0].entered = true // (f's entry, from outside)
			for _, pt := range parts {
				if !fg.joinFar(pt.fl, pt.base) {
					t.Fatal("joinFar refused")
				}
			}
			if !fg.enterFrom(parts, tc.cross, nil) {
				t.Fatal("enterFrom refused")
			}
			fg.enterAnywhere(tc.anywhere, tc.refs, tc.reach)
			var got []bool
			for _, b := range fg.blocks {
				got = append(got, b.entered)
			}
			if fmt.Sprint(got) != tc.entered {
				t.Errorf("entered %v, want %s", got, tc.entered)
			}
			if fmt.Sprint(fg.blocks[0].succs) != "[2]" {
				t.Errorf("f's call goes to %v, want [2]", fg.blocks[0].succs)
			}
		})
	}
	// A call into the middle of a block joins nothing.
	h := &instr.Flow{Blocks: []instr.FlowBlock{{Start: 0x1000, End: 0x1010, Far: []uint64{0x2004}}}}
	fg := &flowGraph{blocks: []flowNode{{start: 0x1000, end: 0x1010}, {start: 0x2000, end: 0x2010}}}
	if fg.joinFar(h, 0) {
		t.Error("a call into a block's middle joined")
	}
}

// TestFlowRealPrograms plants the line counting of Lua and zstd (built
// from Debian's sources by scripts/real-programs) for x86-64 and arm64
// over a fake memory, as TestPatchRuleRealPrograms does: the functions
// of both architectures are graphed and sites counted by flow.
func TestFlowRealPrograms(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Lua and zstd (scripts/real-programs) the first time")
	}
	for _, arch := range []string{"amd64", "arm64"} {
		for _, name := range []string{"lua", "zstd"} {
			t.Run(arch+"/"+name, func(t *testing.T) {
				path := testutil.RealProgram(t, arch, name)
				plan, err := prep.BuildPlan(prep.Options{Method: datafile.LineCounting, Programs: []string{path}, Calibration: -1})
				if err != nil {
					t.Skipf("no plan of %s: %v", path, err)
				}
				tr, _, _ := realTracer(t, path, plan, pieBias[arch])
				lt := tr.parts.lines
				derived, shared := lt.numDerived(), len(lt.alias)
				t.Logf("%d sites in-process: %d probed, %d share a block's count, %d counted by flow", lt.patched, lt.patched-shared-derived, shared, derived)
				if derived*20 < lt.patched {
					t.Errorf("%d of %d sites counted by flow, want 1 in 20 at least", derived, lt.patched)
				}
			})
		}
	}
}

// TestBlockFrom: blocks found for addresses in ascending order, from the
// block before, are those a search of the whole graph finds, in graphs
// of blocks with gaps between them and addresses near and far apart.
func TestBlockFrom(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 36))
	for round := range 100 {
		g := &flowGraph{}
		at := uint64(0x1000)
		for range rng.IntN(200) {
			at += uint64(rng.IntN(3)) * 4 // (a gap, or none)
			end := at + 4 + uint64(rng.IntN(8))*4
			g.blocks = append(g.blocks, flowNode{start: at, end: end})
			at = end
		}
		from, addr := 0, uint64(0xff0)
		for range 300 {
			addr += uint64(rng.IntN(1 + rng.IntN(2)*200))
			want := -1
			for k, b := range g.blocks {
				if b.start <= addr && addr < b.end {
					want = k
				}
			}
			var got int
			if got, from = g.blockFrom(addr, from); got != want {
				t.Fatalf("round %d: block of %#x = %d, want %d", round, addr, got, want)
			}
		}
	}
}
