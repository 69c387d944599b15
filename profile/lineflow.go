// Counting by flow (docs/architecture.md, "Counting by flow"): in a
// function whose flow graph its decoded code proves (instr.Flow), every
// time control enters a block it leaves it once, so the count of a block
// is the sum of the ways in and of the ways out. Of the blocks that hold
// line sites, only enough are probed that the others' counts follow from
// theirs; the others are derived after the run (collect).

package profile

import (
	"cmp"
	"slices"

	"github.com/sourceprofiler/sprof/instr"
)

// flowGraph is the flow of a module's functions proven (instr.Flow),
// joined: their blocks in address order, each with the blocks control
// goes to next (succs: a branch's target, a fall-through, the function
// a direct call calls), whether control may come to it from anywhere
// (entered) and go from it anywhere (leaves), and how deep in loops it
// lies.
type flowGraph struct {
	blocks []flowNode
}

// flowNode is a block of a flowGraph: the code of [start, end).
type flowNode struct {
	start, end      uint64
	succs           []int
	entered, leaves bool
	depth           int
}

// block returns the index of the block holding addr, or -1.
func (g *flowGraph) block(addr uint64) int {
	k, _ := g.blockFrom(addr, 0)
	return k
}

// blockFrom is block for addresses asked in ascending order: from is
// the second result for the address before (0 for the first), which the
// search starts from, a few blocks one by one, then by halves. A million
// line sites searched the whole graph each took a third of a second,
// cache miss after cache miss.
func (g *flowGraph) blockFrom(addr uint64, from int) (int, int) {
	i := from
	for n := 0; i < len(g.blocks) && g.blocks[i].end <= addr; i++ {
		if n++; n == 8 {
			j, _ := slices.BinarySearchFunc(g.blocks[i:], addr, func(b flowNode, a uint64) int { return cmp.Compare(b.end, a+1) })
			i += j
			break
		}
	}
	if i < len(g.blocks) && g.blocks[i].start <= addr {
		return i, i
	}
	return -1, i
}

// flowPlacement is what counting by flow does with the line sites of a
// module: the sites probed; the others of their blocks, each with the
// first site of its block (shared); the first sites of the blocks whose
// counts follow from the probed ones' (derived); and how they follow.
type flowPlacement struct {
	probes  []uint64
	shared  [][2]uint64
	derived []uint64
	solve   *flowSolver
	// g, sites, first and order are what placeFlow placed by
	// (refine): the graph, the sites, the first site of each block, and
	// the blocks with sites in the order they were chosen.
	g     *flowGraph
	sites []uint64
	first []int
	order []int
}

// placeFlow chooses, of the line sites (sorted), those in g's blocks to
// probe, and how the others' counts follow: Knuth and Stevenson's
// measurement points over a graph whose edges are the ways between
// blocks and, for each block, the block itself (from its beginning to
// its end), with a node "outside" (nodeOut) where the ways in and out of
// the code proven meet. The counts on the edges are a circulation; those
// of a set of edges determine another's when it is a bridge of the graph
// without them. The edges that cannot be probed (the ways, and the
// blocks without a site) are joined first, then each block with a site,
// the deepest in loops first: one that joins two parts still apart is
// derived, one whose ends are joined already is probed.
func placeFlow(g *flowGraph, sites []uint64) flowPlacement {
	out := flowPlacement{g: g, sites: sites, first: make([]int, len(g.blocks))}
	for i := range out.first {
		out.first[i] = -1
	}
	from := 0
	for n, a := range sites {
		var b int
		b, from = g.blockFrom(a, from)
		switch {
		case b < 0:
			continue
		case out.first[b] >= 0:
			out.shared = append(out.shared, [2]uint64{a, sites[out.first[b]]})
			continue
		}
		out.first[b] = n
	}
	for b := range g.blocks {
		if out.first[b] >= 0 {
			out.order = append(out.order, b)
		}
	}
	slices.SortStableFunc(out.order, func(x, y int) int { return cmp.Compare(g.blocks[y].depth, g.blocks[x].depth) })
	forest, derived, probed := spanFlow(g, out.first, nil, out.order)
	for _, b := range probed {
		out.probes = append(out.probes, sites[out.first[b]])
	}
	out.setDerived(forest, derived, probed)
	return out
}

// setDerived records the derived blocks of placement pl, and how their
// counts follow from the probed ones' over forest.
func (pl *flowPlacement) setDerived(forest *flowForest, derived, probed []int) {
	sites := pl.sites
	pl.derived = pl.derived[:0]
	for _, b := range derived {
		pl.derived = append(pl.derived, sites[pl.first[b]])
	}
	pl.solve = forest.solver(derived, probed, func(b int) uint64 { return sites[pl.first[b]] })
}

// refine places again, after planting, where some probes could not be
// planted (failed: they keep breakpoints, whose counts are the lines',
// not the blocks'): those blocks are counted by nothing the equations
// see, and a derived block whose count no longer follows keeps a
// breakpoint too (it is left out of derived).
func (pl *flowPlacement) refine(failed map[uint64]bool) {
	sites := pl.sites
	unknown := make([]bool, len(pl.g.blocks))
	var probed []int
	for b, n := range pl.first {
		if n >= 0 && failed[sites[n]] {
			unknown[b] = true
		}
	}
	derivedSet := map[uint64]bool{}
	for _, a := range pl.derived {
		derivedSet[a] = true
	}
	var cands []int
	for _, b := range pl.order {
		switch {
		case derivedSet[sites[pl.first[b]]]:
			cands = append(cands, b)
		case !unknown[b]:
			probed = append(probed, b)
		}
	}
	for {
		forest, derived, left := spanFlow(pl.g, pl.first, unknown, cands)
		if len(left) == 0 {
			pl.setDerived(forest, derived, probed)
			return
		}
		for _, b := range left {
			unknown[b] = true
		}
		cands = derived
	}
}

// spanFlow grows the spanning forest of g's graph: the ways, the blocks
// without a site (first) and the blocks unknown joined first, then the
// blocks of cands in order. It returns the forest, the blocks of cands
// that joined two parts (derived), and the others (left).
func spanFlow(g *flowGraph, first []int, unknown []bool, cands []int) (forest *flowForest, derived, left []int) {
	forest = newFlowForest(1 + 2*len(g.blocks))
	for b := range g.blocks {
		x := &g.blocks[b]
		if x.entered {
			forest.join(nodeOut, blockIn(b))
		}
		if x.leaves {
			forest.join(blockOut(b), nodeOut)
		}
		for _, s := range x.succs {
			forest.join(blockOut(b), blockIn(s))
		}
		if first[b] < 0 || unknown != nil && unknown[b] {
			forest.join(blockIn(b), blockOut(b))
		}
	}
	for _, b := range cands {
		if forest.join(blockIn(b), blockOut(b)) {
			derived = append(derived, b)
		} else {
			left = append(left, b)
		}
	}
	return forest, derived, left
}

// The nodes of placeFlow's graph: outside, and each block's beginning
// and end.
const nodeOut = 0

func blockIn(b int) int  { return 1 + 2*b }
func blockOut(b int) int { return 2 + 2*b }

// loopDepths sets, for each block of a function's flow f (its blocks
// numbered from base in g), how many loops hold it: the spans from a
// branch's target back to the branch (a way to a block that does not
// come after it).
func loopDepths(f *instr.Flow, g *flowGraph, base int) {
	for b := range f.Blocks {
		for _, s := range f.Blocks[b].Succs {
			if s > b {
				continue
			}
			for k := s; k <= b; k++ {
				g.blocks[base+k].depth++
			}
		}
	}
}

// flowForest is a spanning forest grown edge by edge (union-find), and
// once grown, rooted: each node's parent, and the nodes in the order of
// a walk from the roots, each after its parent.
type flowForest struct {
	set    []int
	adj    [][]int
	parent []int
	walk   []int
}

func newFlowForest(n int) *flowForest {
	g := &flowForest{set: make([]int, n), adj: make([][]int, n)}
	for i := range g.set {
		g.set[i] = i
	}
	return g
}

func (g *flowForest) find(x int) int {
	for g.set[x] != x {
		g.set[x] = g.set[g.set[x]]
		x = g.set[x]
	}
	return x
}

// join adds the edge (x, y) to the forest where it joins two trees, and
// reports whether it did.
func (g *flowForest) join(x, y int) bool {
	rx, ry := g.find(x), g.find(y)
	if rx == ry {
		return false
	}
	g.set[rx] = ry
	g.adj[x] = append(g.adj[x], y)
	g.adj[y] = append(g.adj[y], x)
	return true
}

// root roots each tree of the forest and walks it.
func (g *flowForest) root() {
	n := len(g.adj)
	g.parent, g.walk = make([]int, n), make([]int, 0, n)
	seen := make([]bool, n)
	for r := range n {
		if seen[r] {
			continue
		}
		seen[r], g.parent[r] = true, -1
		g.walk = append(g.walk, r)
		stack := [][2]int{{r, 0}} // a node, and the next of its edges
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			x := top[0]
			if top[1] == len(g.adj[x]) {
				stack = stack[:len(stack)-1]
				continue
			}
			y := g.adj[x][top[1]]
			top[1]++
			if seen[y] {
				continue
			}
			seen[y], g.parent[y] = true, x
			g.walk = append(g.walk, y)
			stack = append(stack, [2]int{y, 0})
		}
	}
}

// flowSolver gives the counts of the derived blocks from the probed
// ones' after the run. Cut the forest at a derived block's edge: the
// nodes under it (S) take in as much as they give out, and the block's
// edge and the probed blocks' edges are the only ones between S and the
// rest (a way not in the forest joins two nodes the ways already
// joined, on one side). So the block's count is what the probed edges
// take out of S less what they bring in, or the reverse, as its edge
// enters S or leaves it: sums over the subtrees, once for all.
type flowSolver struct {
	parent  []int
	walk    []int // the nodes, each after its parent
	probes  []flowEdge
	derived []flowEdge
}

// flowEdge is a block's edge in a flowSolver: its site (and counter,
// once known), and its two nodes; for a derived one, the node under the
// other (in) and whether the edge enters the subtree there (enters).
type flowEdge struct {
	site    uint64
	counter int
	in, out int
	enters  bool
}

// solver returns the solver of the derived blocks from the probed ones
// over the rooted forest g; site names each block's site.
func (g *flowForest) solver(derived, probed []int, site func(int) uint64) *flowSolver {
	g.root()
	s := &flowSolver{parent: g.parent, walk: g.walk}
	for _, b := range probed {
		s.probes = append(s.probes, flowEdge{site: site(b), in: blockIn(b), out: blockOut(b)})
	}
	for _, b := range derived {
		c := blockOut(b) // the node of b's edge under the other
		if g.parent[c] != blockIn(b) {
			c = blockIn(b)
		}
		s.derived = append(s.derived, flowEdge{site: site(b), in: c, enters: c == blockOut(b)})
	}
	return s
}

// counts returns the count of each derived block, given the count of
// each probed block's counter (total): never below zero (a thread
// killed between a block's probe and its end leaves one more in than
// out).
func (s *flowSolver) counts(total func(counter int) uint64) []uint64 {
	sub := make([]int64, len(s.parent)) // what the probed edges bring in, less what they take out
	for _, p := range s.probes {
		n := int64(total(p.counter))
		sub[p.out] += n
		sub[p.in] -= n
	}
	for i := len(s.walk) - 1; i >= 0; i-- {
		if v := s.walk[i]; s.parent[v] >= 0 {
			sub[s.parent[v]] += sub[v]
		}
	}
	out := make([]uint64, len(s.derived))
	for i, d := range s.derived {
		n := sub[d.in]
		if d.enters {
			n = -n
		}
		out[i] = uint64(max(n, 0))
	}
	return out
}

// deriveSites takes the sites of planting p that placement flow derives
// (plant), with the counters of its solver, and keeps the solver for
// collect. Where a probe fell back to a breakpoint, the placement is
// refined first: the sites no longer derived keep breakpoints too.
func (lt *lineTrampolines) deriveSites(p *planting, flow *flowPlacement) {
	if flow == nil || len(flow.derived) == 0 {
		return
	}
	ls := p.lineSites
	failed := map[uint64]bool{}
	for _, a := range flow.probes {
		if !ls.taken(a) {
			failed[a] = true
		}
	}
	if len(failed) > 0 {
		flow.refine(failed)
	}
	s := flow.solve
	for i := range s.probes {
		s.probes[i].counter = ls.counter[ls.find(s.probes[i].site)]
	}
	for i := range s.derived {
		s.derived[i].counter = ls.counter[ls.find(s.derived[i].site)]
		ls.take(s.derived[i].site)
		lt.patched++
	}
	lt.solvers = append(lt.solvers, s)
}

// numDerived returns how many sites were counted by flow so far.
func (lt *lineTrampolines) numDerived() int {
	n := 0
	for _, s := range lt.solvers {
		n += len(s.derived)
	}
	return n
}

// derivedLines returns the lines of the sites counted by flow, and of
// the sites that share their counts (--explain tells their first hits
// at the end).
func (lt *lineTrampolines) derivedLines() []int {
	roots := map[int]bool{}
	var out []int
	for _, s := range lt.solvers {
		for _, d := range s.derived {
			roots[d.counter] = true
			out = append(out, lt.lines[d.counter]...)
		}
	}
	for b, a := range lt.alias {
		if roots[a] {
			out = append(out, lt.lines[b]...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
