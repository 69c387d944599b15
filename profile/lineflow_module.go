package profile

import (
	"cmp"
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/elfid"
)

// placeByFlow places by flow the line sites addrs (sorted) of planting p
// that lie in a function whose flow is proven (instr.FuncFlow), joined
// over the module (moduleFlow), and returns the placement (nil when
// there is none) and which of addrs it placed. Not in Go's code (a nil
// check's fault there becomes a panic, leaving its block in the
// middle), nor for coverage (a covered site's counter is set, not added
// to). targets are where jumps land (planter.indirectTargets).
func (lt *lineTrampolines) placeByFlow(p *planting, addrs []uint64, targets landings) (*flowPlacement, []bool) {
	placed := make([]bool, len(addrs))
	if lt.cover || lt.isGo(p.mi) || len(addrs) < 2 || lt.env.plant.wants != nil && lt.env.plant.wants().attached {
		return nil, placed
	}
	g := lt.moduleFlow(p, targets)
	if g == nil || len(g.blocks) == 0 {
		return nil, placed
	}
	var in []uint64
	from := 0
	for n, a := range addrs {
		var k int
		if k, from = g.blockFrom(a, from); k >= 0 {
			in = append(in, a)
			placed[n] = true
		}
	}
	pl := placeFlow(g, in)
	return &pl, placed
}

// moduleFlow returns the flow of the functions of planting p's module
// whose flow is proven, joined: a direct call or jump from one to
// another goes to its block. A block is entered from anywhere, besides
// what instr.FuncFlow says, where control may come from code not joined
// (a function not proven, code of no function, another module, the
// system): the entry point, an exported function, a code pointer of the
// data or a jump table's entry, a function whose address the code takes
// (a PC-relative reference to it, or on arm64 up to a page before it),
// a block nothing reaches (an exception's landing pad); in a file of
// fixed addresses, every function's entry. It returns nil where the functions
// do not join (a branch into a block's middle). Not in a process
// attached to, whose threads are in the middle of blocks already.
func (lt *lineTrampolines) moduleFlow(p *planting, targets landings) *flowGraph {
	e := &lt.env
	funcs := moduleFuncs(e.plan.Funcs, p.mi, p.bias)
	var cross [][2]uint64
	var refs []uint64
	for _, cm := range e.plant.scan.code {
		cross = append(cross, cm.CrossJumps(funcs)...)
		refs = append(refs, cm.Refs...)
	}
	slices.Sort(refs)
	path := e.plan.Modules[p.mi].Path
	if mapped := p.in.First.Path; mapped != "" {
		path = mapped
	}
	outside, fixed := elfid.ReadOutsideEntries(path)
	var anywhere []uint64 // where control comes from anywhere
	for _, a := range outside {
		anywhere = append(anywhere, a+p.bias)
	}
	for _, a := range elfid.ReadCodePointers(path) {
		anywhere = append(anywhere, a+p.bias)
	}
	anywhere = append(anywhere, e.plant.jumpTables(p)...)
	slices.Sort(anywhere)
	// (A PC-relative reference may name a place control comes to: a
	// label whose address is taken, a transaction's fall-back.)
	cuts := append(append(slices.Clone([]uint64(targets)), refs...), anywhere...)
	slices.Sort(cuts)
	g := &flowGraph{}
	var parts []flowPart
	end := uint64(0) // the end of the functions before
	for i, f := range funcs {
		before := end
		end = max(end, f[1])
		if before > f[0] || i+1 < len(funcs) && funcs[i+1][0] < f[1] {
			continue // (overlapping another)
		}
		cm := e.plant.scan.code.at(f[0])
		if cm == nil || cm.Decoded(f[0], f[1]) != nil || cm.InIndirect(f[0]) {
			continue
		}
		fl, err := cm.Flow(f[0], f[1], cuts)
		if err != nil {
			continue
		}
		base := len(g.blocks)
		for _, b := range fl.Blocks {
			n := flowNode{start: b.Start, end: b.End, entered: b.Entered || fixed && b.Start == f[0], leaves: b.Leaves}
			for _, s := range b.Succs {
				n.succs = append(n.succs, base+s)
			}
			g.blocks = append(g.blocks, n)
		}
		loopDepths(fl, g, base)
		parts = append(parts, flowPart{fl, base, f})
	}
	for _, pt := range parts {
		if !g.joinFar(pt.fl, pt.base) {
			return nil
		}
	}
	if !g.enterFrom(parts, cross, func(a uint64) bool { return e.plant.scan.code.boundary(a) == nil }) {
		return nil
	}
	// (Where instructions have one length, an address takes two: arm64's
	// adrp names the 4 KiB page, the add after it the place in it.)
	reach := uint64(1)
	if instr.InstAlign(e.arch) == e.arch.MaxInstLen() {
		reach = 4096
	}
	g.enterAnywhere(anywhere, refs, reach)
	return g
}

// flowPart is a function joined in a flowGraph: its flow, the index of
// its first block, and its extent.
type flowPart struct {
	fl   *instr.Flow
	base int
	f    [2]uint64
}

// joinFar links the blocks of flow fl (numbered from base in g) to the
// places outside it they go to: a block of g, or anywhere. It reports
// whether each such place in g is a block's start (a call into a
// block's middle joins nothing).
func (g *flowGraph) joinFar(fl *instr.Flow, base int) bool {
	for b, x := range fl.Blocks {
		n := &g.blocks[base+b]
		for _, t := range x.Far {
			switch k := g.block(t); {
			case k >= 0 && g.blocks[k].start == t:
				if !slices.Contains(n.succs, k) {
					n.succs = append(n.succs, k)
				}
			case k >= 0:
				return false
			default:
				n.leaves = true
			}
		}
	}
	return true
}

// enterFrom marks the blocks of g that the direct jumps, calls and falls
// of cross (instr.CodeMap.CrossJumps) reach from code not joined in g
// (the functions of parts), and reports whether each lands on a block's
// start. One that lands inside an instruction of the decoding (boundary)
// is no way in, as for the landings (planter.indirectTargets): bytes
// between functions decoded as a jump.
func (g *flowGraph) enterFrom(parts []flowPart, cross [][2]uint64, boundary func(uint64) bool) bool {
	joined := func(a uint64) bool {
		i, ok := slices.BinarySearchFunc(parts, a, func(pt flowPart, a uint64) int {
			switch {
			case pt.f[1] <= a:
				return -1
			case pt.f[0] > a:
				return 1
			}
			return 0
		})
		return ok && i >= 0
	}
	for _, c := range cross {
		if joined(c[0]) {
			continue
		}
		switch k := g.block(c[1]); {
		case k >= 0 && g.blocks[k].start == c[1]:
			g.blocks[k].entered = true
		case k >= 0 && (boundary == nil || boundary(c[1])):
			return false
		}
	}
	return true
}

// enterAnywhere marks the blocks of g that control may come to from
// anywhere: those at anywhere (sorted), less than reach past a
// PC-relative reference of refs (sorted), and those nothing reaches.
func (g *flowGraph) enterAnywhere(anywhere, refs []uint64, reach uint64) {
	reached := make([]bool, len(g.blocks))
	for _, n := range g.blocks {
		for _, s := range n.succs {
			reached[s] = true
		}
	}
	for k := range g.blocks {
		n := &g.blocks[k]
		_, at := slices.BinarySearch(anywhere, n.start)
		j, ok := slices.BinarySearch(refs, n.start)
		near := ok || j > 0 && refs[j-1]+reach > n.start
		if at || near || !reached[k] {
			n.entered = true
		}
	}
}

// moduleFuncs returns the extents of the functions of module mi in
// funcs, loaded with bias, sorted, each once.
func moduleFuncs(funcs []datafile.Func, mi int, bias uint64) [][2]uint64 {
	var out [][2]uint64
	for i := range funcs {
		if f := &funcs[i]; f.Module == mi && f.Low < f.High {
			out = append(out, [2]uint64{f.Low + bias, f.High + bias})
		}
	}
	slices.SortFunc(out, func(x, y [2]uint64) int { return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1])) })
	return slices.Compact(out)
}
