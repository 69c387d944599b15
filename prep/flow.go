package prep

import (
	"cmp"
	"slices"

	"github.com/sourceprofiler/sprof/dwarf"
	"github.com/sourceprofiler/sprof/instr"
)

// The flow of control through a function's code, for its line sites
// (sites.go): its basic blocks, from its decoded instructions, and which
// rows of each copy of a line control reaches first.

// copyKey names a copy of a line in one function: its file and line, and
// the inlined call whose code holds it (-1: the function's own code).
type copyKey struct {
	file string
	line int
	call int
}

// flowGraph is a function's code as basic blocks, with the direct
// control flow between them.
type flowGraph struct {
	start []uint64  // each block's first address, ascending
	succ  [][]int32 // the blocks each may go to next
	roots []int32   // where control can come from outside the graph
	// join marks the blocks a direct jump lands on that the block before
	// falls into.
	join []bool
}

// newFlowGraph makes the basic blocks of code (a function's instructions,
// sorted by address) and their edges: a direct jump or branch to an
// instruction of the code, and the next instruction after any other but a
// jump, a return or a trap (a call is taken to return). The roots are the
// block at entry and, in address order, each block the others do not
// reach whose first instruction is not padding (a no-op or a trap): the
// code an indirect jump, a jump table or an exception's unwinding leads
// to.
func newFlowGraph(code []decoded, entry uint64) *flowGraph {
	g := &flowGraph{}
	if len(code) == 0 {
		return g
	}
	index := func(a uint64) int {
		i, ok := slices.BinarySearchFunc(code, a, func(d decoded, a uint64) int { return cmp.Compare(d.addr, a) })
		if !ok {
			return -1
		}
		return i
	}
	follows := func(i int) bool { // code[i] comes straight after code[i-1]
		return i > 0 && i < len(code) && code[i-1].addr+uint64(code[i-1].inst.Len) == code[i].addr
	}
	leader := make([]bool, len(code))
	target := make([]bool, len(code))
	for i, d := range code {
		switch {
		case i == 0 || !follows(i):
			leader[i] = true
		case code[i-1].inst.Kind == instr.Nop && d.inst.Kind != instr.Nop:
			leader[i] = true // (code after padding may be entered past it)
		}
		switch d.inst.Kind {
		case instr.Jump, instr.CondJump, instr.Ret, instr.Trap:
			if i+1 < len(code) {
				leader[i+1] = true
			}
		}
		if k := d.inst.Kind; (k == instr.Jump || k == instr.CondJump) && d.inst.Target != 0 {
			if t := index(d.inst.Target); t >= 0 {
				leader[t], target[t] = true, true
			}
		}
	}
	block := make([]int32, len(code))
	for i := range code {
		if leader[i] {
			g.start = append(g.start, code[i].addr)
			g.join = append(g.join, target[i] && fallsInto(code, i))
		}
		block[i] = int32(len(g.start) - 1)
	}
	g.succ = make([][]int32, len(g.start))
	for i, d := range code {
		if i+1 < len(code) && block[i+1] == block[i] {
			continue // (not a block's last instruction)
		}
		b := block[i]
		k := d.inst.Kind
		if (k == instr.Jump || k == instr.CondJump) && d.inst.Target != 0 {
			if t := index(d.inst.Target); t >= 0 {
				g.succ[b] = append(g.succ[b], block[t])
			}
		}
		if k != instr.Jump && k != instr.Ret && k != instr.Trap && follows(i+1) {
			g.succ[b] = append(g.succ[b], block[i+1])
		}
	}
	g.findRoots(code, block, index(entry))
	return g
}

// fallsInto reports whether the instruction before code[i], past any
// padding, goes on to it: it is right before it and no jump, return or
// trap.
func fallsInto(code []decoded, i int) bool {
	for j := i - 1; j >= 0 && code[j].addr+uint64(code[j].inst.Len) == code[j+1].addr; j-- {
		switch code[j].inst.Kind {
		case instr.Nop:
			continue
		case instr.Jump, instr.Ret, instr.Trap:
			return false
		}
		return true
	}
	return false
}

// findRoots sets the roots of g: the block of the instruction at entry
// (an index of code, -1 if none), then each block not reached from the
// roots before it that does not start with padding.
func (g *flowGraph) findRoots(code []decoded, block []int32, entry int) {
	reached := make([]bool, len(g.start))
	var stack []int32
	visit := func(b int32) {
		g.roots = append(g.roots, b)
		reached[b] = true
		stack = append(stack[:0], b)
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, s := range g.succ[x] {
				if !reached[s] {
					reached[s] = true
					stack = append(stack, s)
				}
			}
		}
	}
	if entry >= 0 {
		visit(block[entry])
	}
	for i, d := range code {
		b := block[i]
		if reached[b] || (i > 0 && block[i-1] == b) {
			continue
		}
		if k := d.inst.Kind; k != instr.Nop && k != instr.Trap {
			visit(b)
		}
	}
}

// endsBlockBefore reports whether rows[i] (a view: another row follows it
// at its address), whose copy is copies[i], ends the block before its
// own: its address starts a block that a jump lands on and the block
// before falls into, and that block has a row of the same copy.
func (g *flowGraph) endsBlockBefore(rows []dwarf.LineRow, copies []int, i int) bool {
	a := rows[i].Addr
	b := g.blockOf(a)
	if b <= 0 || g.start[b] != a || !g.join[b] {
		return false
	}
	for j := i - 1; j >= 0 && rows[j].Addr >= g.start[b-1]; j-- {
		if rows[j].Addr < a && rows[j].File == rows[i].File && rows[j].Line == rows[i].Line && copies[j] == copies[i] {
			return true
		}
	}
	return false
}

// blockOf returns the block holding address a, or -1.
func (g *flowGraph) blockOf(a uint64) int {
	i, ok := slices.BinarySearch(g.start, a)
	if ok {
		return i
	}
	return i - 1
}

// firstRows reports, for each of rows (sorted by address; view flags the
// location views), whether it is the first of its copy (copies[i]: the
// inlined call holding it, -1 for the function's own code): whether
// control can reach it from a root of g without passing another row of
// the copy. A jump that lands on code that the block before falls into,
// where both the block before and the instruction landed on are the
// copy's (rows that are not views), lands in the middle of the copy (a
// compiler that merged the same code of two lines jumps from one into the
// other's: Lua's handler of OP_MOVE into the end of OP_GETUPVAL's, or a
// loop entered at its test, past the increment): it does not begin the
// copy. A copy without a first row keeps its lowest.
func (g *flowGraph) firstRows(rows []dwarf.LineRow, view []bool, copies []int) []bool {
	first := make([]bool, len(rows))
	// The rows of each copy, and the block of each row.
	byCopy := map[copyKey][]int{}
	blockOf := make([]int, len(rows))
	for i, r := range rows {
		k := copyKey{r.File, r.Line, copies[i]}
		byCopy[k] = append(byCopy[k], i)
		blockOf[i] = g.blockOf(r.Addr)
	}
	// A copy whose rows are in one block has one site, its first row;
	// the others are a bit of the sets that flow between blocks.
	var many [][]int
	bit := make([]int, len(rows))
	for _, is := range byCopy {
		if oneBlock(is, blockOf) {
			first[is[0]] = true
			continue
		}
		for _, i := range is {
			bit[i] = len(many)
		}
		many = append(many, is)
	}
	if len(many) > 0 && len(g.start) > 0 {
		newFlow(g, rows, view, blockOf, bit, many).run(first)
	}
	for _, is := range many {
		if !slices.ContainsFunc(is, func(i int) bool { return first[i] }) {
			first[is[0]] = true
		}
	}
	return first
}

// oneBlock reports whether the rows is all lie in one block.
func oneBlock(is []int, blockOf []int) bool {
	for _, i := range is[1:] {
		if blockOf[i] != blockOf[is[0]] {
			return false
		}
	}
	return true
}

// flow is a forward data flow over a flow graph of the copies many (each
// a list of row indexes; bit[i] is row i's copy among them): at a block's
// entry, fresh holds the copies some path from a root reaches it by
// without passing a row of (or landing in the middle of).
type flow struct {
	g       *flowGraph
	words   int
	fresh   []uint64   // per block, words each
	inBlock [][]int    // the rows of many in each block, by address
	kill    [][]uint64 // per join block, the copies a jump there lands in
	bit     []int
	queued  []bool
	work    []int32
	cur     []uint64
}

// newFlow sets up the flow of the copies many over g.
func newFlow(g *flowGraph, rows []dwarf.LineRow, view []bool, blockOf, bit []int, many [][]int) *flow {
	words := (len(many) + 63) / 64
	f := &flow{g: g, words: words, bit: bit, fresh: make([]uint64, len(g.start)*words),
		inBlock: make([][]int, len(g.start)), kill: make([][]uint64, len(g.start)),
		queued: make([]bool, len(g.start)), cur: make([]uint64, words)}
	for _, is := range many {
		// The joins that split the copy's instructions: the block
		// before has one, and the join's first is one.
		before := map[int]bool{}
		for _, i := range is {
			if b := blockOf[i]; b >= 0 {
				f.inBlock[b] = append(f.inBlock[b], i)
				before[b+1] = before[b+1] || !view[i]
			}
		}
		for _, i := range is {
			b := blockOf[i]
			if b < 0 || view[i] || rows[i].Addr != g.start[b] || !g.join[b] || !before[b] {
				continue
			}
			if f.kill[b] == nil {
				f.kill[b] = make([]uint64, words)
			}
			f.kill[b][bit[i]/64] |= 1 << (bit[i] % 64)
		}
	}
	for _, is := range f.inBlock {
		slices.SortFunc(is, func(a, b int) int { return cmp.Compare(rows[a].Addr, rows[b].Addr) })
	}
	for _, r := range g.roots {
		set := f.fresh[int(r)*words : int(r+1)*words]
		for w := range set {
			set[w] = ^uint64(0)
		}
		f.push(r)
	}
	return f
}

// push queues block b, once.
func (f *flow) push(b int32) {
	if !f.queued[b] {
		f.queued[b] = true
		f.work = append(f.work, b)
	}
}

// run flows the sets to their fixed point and marks the rows that are
// first.
func (f *flow) run(first []bool) {
	w := f.words
	for len(f.work) > 0 {
		b := f.work[len(f.work)-1]
		f.work = f.work[:len(f.work)-1]
		f.queued[b] = false
		copy(f.cur, f.fresh[int(b)*w:int(b+1)*w])
		for _, i := range f.inBlock[b] {
			x, m := f.bit[i]/64, uint64(1)<<(f.bit[i]%64)
			if f.cur[x]&m != 0 {
				first[i] = true
			}
			f.cur[x] &^= m
		}
		for _, s := range f.g.succ[b] {
			// A jump into a join lands in the middle of the copies it
			// splits (the fall-through from the block before does not).
			var kill []uint64
			if s != b+1 {
				kill = f.kill[s]
			}
			if f.merge(s, kill) {
				f.push(s)
			}
		}
	}
}

// merge adds the set after the block just run, less kill (nil: none), to
// that at the entry of block s, and reports whether it grew.
func (f *flow) merge(s int32, kill []uint64) bool {
	w, grew := f.words, false
	fresh := f.fresh[int(s)*w : int(s+1)*w]
	for x := range w {
		v := f.cur[x]
		if kill != nil {
			v &^= kill[x]
		}
		if v&^fresh[x] != 0 {
			fresh[x] |= v
			grew = true
		}
	}
	return grew
}
