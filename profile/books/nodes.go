package books

import (
	"encoding/binary"

	"github.com/sourceprofiler/sprof/instr"
)

// Caller stacks kept in the program (/AT, instr.Book.Nodes): each frame
// of a book names its node, the path of functions from the thread's
// first open call to its own, and each node has the figures of the calls
// made along its path. The code finds a call's node from its caller's in
// the book's table, and adds it where it is missing (instr.Book.Nodes);
// the table full, it leaves the call to PROFILE, at a stop (nodeFor).
// The paths are the report's caller stacks, told
// apart by as many callers as /STACK says (Books.StackFor), once the
// figures are taken (TakeNodesInto).
//
// A table full moves the figures of every node out of the program, to
// the book's folded figures, by path, and starts the table again with
// the nodes of the calls open (renode): a thread with more paths than
// the table holds stops once more for each path it takes again. A call
// the table has no room for even so (calls open deeper than it has
// nodes) has node 0, and so has every call beneath it: the code leaves
// their events to PROFILE, which books them by their paths, from the
// frames.

// nodeTable is a book's table of nodes and their figures, in the
// program's memory, and the figures moved out of it, by path (nil for
// none yet).
type nodeTable struct {
	mem    []byte
	b      instr.Book
	folded *Paths
}

func (t *nodeTable) get(off uint64) uint64 { return binary.LittleEndian.Uint64(t.mem[off:]) }
func (t *nodeTable) put(off, v uint64)     { binary.LittleEndian.PutUint64(t.mem[off:], v) }

// count is the number of nodes in use, nodes 0 and 1 included.
func (t *nodeTable) count() int {
	return int(min(t.get(t.b.Offset+instr.BookNodeCount), uint64(t.b.Nodes)))
}

// full reports whether the table has no room for another node.
func (t *nodeTable) full() bool { return t.count() >= t.b.Nodes }

// clear empties the table: no node but the root.
func (t *nodeTable) clear() {
	clear(t.mem[t.b.NodeTableAt():t.b.NodeAt(t.b.Nodes)])
	t.put(t.b.Offset+instr.BookNodeCount, instr.RootNode+1)
}

// find returns the node of a call of fn from node parent, if the table
// has it.
func (t *nodeTable) find(parent, fn int) (int, bool) {
	key := instr.NodeKeyOf(parent, fn)
	slots := t.b.NodeSlots()
	for i, n := t.b.NodeSlot(key), 0; n < slots; i, n = (i+1)%slots, n+1 {
		at := t.b.NodeTableAt() + instr.BookNodeSlotSize*uint64(i)
		switch t.get(at) {
		case key:
			return int(t.get(at + 8)), true
		case 0:
			return 0, false
		}
	}
	return 0, false
}

// add adds the node of a call of fn from node parent, the table not
// full.
func (t *nodeTable) add(parent, fn int) int {
	key := instr.NodeKeyOf(parent, fn)
	n := t.count()
	slots := t.b.NodeSlots()
	i := t.b.NodeSlot(key)
	for t.get(t.b.NodeTableAt()+instr.BookNodeSlotSize*uint64(i)) != 0 {
		i = (i + 1) % slots
	}
	at := t.b.NodeAt(n)
	clear(t.mem[at : at+instr.BookFigureSize])
	t.put(at+instr.NodeKey, key)
	// (The node before the key that finds it: the code reads a slot's
	// key, then its node.)
	slot := t.b.NodeTableAt() + instr.BookNodeSlotSize*uint64(i)
	t.put(slot+8, uint64(n))
	t.put(slot, key)
	t.put(t.b.Offset+instr.BookNodeCount, uint64(n+1))
	return n
}

// child returns the node of a call of fn from node parent, added where
// the table has none and room for it; 0 where it has neither, or parent
// is 0 (no node).
func (t *nodeTable) child(parent, fn int) int {
	if parent == 0 {
		return 0
	}
	if n, ok := t.find(parent, fn); ok {
		return n
	}
	if t.full() {
		return 0
	}
	return t.add(parent, fn)
}

// fold adds f to the folded figures of path.
func (t *nodeTable) fold(path []int, f Figure) {
	if t.folded == nil {
		t.folded = NewPaths()
	}
	t.folded.Add(t.folded.Walk(path), f)
}

// takeInto moves the figures of each node to paths, by path (a node's
// outermost calls are its calls), and zeroes them: each node found in
// paths from its parent's, which comes before it in the table.
func (t *nodeTable) takeInto(paths *Paths) {
	count := t.count()
	into := make([]int, count)
	for n := instr.RootNode + 1; n < count; n++ {
		at := t.b.NodeAt(n)
		key := t.get(at + instr.NodeKey)
		parent, fn := int(key>>32), int(key&0xffffffff)
		// (Each node's parent was added before it: a key naming a later
		// node, or itself, is the program's writing, and ends the path.)
		up := 0
		if parent > instr.RootNode && parent < n {
			up = into[parent]
		}
		into[n] = paths.Child(up, fn)
		f := Figure{Calls: t.get(at + instr.FigureCalls), Self: int64(t.get(at + instr.FigureSelf)),
			All: int64(t.get(at + instr.FigureInclusive)), Kids: t.get(at + instr.FigureKids),
			Beneath: t.get(at + instr.FigureBeneath)}
		if f == (Figure{}) {
			continue
		}
		f.Outer = f.Calls
		paths.Add(into[n], f)
		for _, w := range [...]uint64{instr.FigureCalls, instr.FigureSelf, instr.FigureInclusive, instr.FigureKids, instr.FigureBeneath} {
			t.put(at+w, 0)
		}
	}
}

// takeAllInto moves the folded figures and the nodes' to paths.
func (t *nodeTable) takeAllInto(paths *Paths) {
	if t.folded != nil {
		paths.Merge(t.folded)
		t.folded = nil
	}
	t.takeInto(paths)
}

// damaged reports whether the node count is not one the table can have.
func (t *nodeTable) damaged() bool {
	count := t.get(t.b.Offset + instr.BookNodeCount)
	return count <= instr.RootNode || count > uint64(t.b.Nodes)
}

// nodeFor returns the node of a call of fn from the top frame, added
// where the table has none: the table full, it is started again first.
func (p *ProgramBook) nodeFor(fn int) int {
	parent := int(p.get(p.b.FrameAt(p.depth()) + instr.FrameNode))
	if parent != 0 && p.nodes.full() {
		if _, ok := p.nodes.find(parent, fn); !ok {
			p.renode(true)
			parent = int(p.get(p.b.FrameAt(p.depth()) + instr.FrameNode))
		}
	}
	return p.nodes.child(parent, fn)
}

// foldFrame books the figures of the call of the top frame, f, whose
// node is 0, in the folded figures by its path: the functions of the
// frames spilled and of the program's, up to f's.
func (p *ProgramBook) foldFrame(f Figure) {
	var path []int
	for _, s := range p.spill {
		for _, fr := range s.frames {
			path = append(path, int(fr.fn))
		}
	}
	for i := 1; i <= p.depth(); i++ {
		path = append(path, int(p.get(p.b.FrameAt(i)+instr.FrameFunc)))
	}
	p.nodes.fold(path, f)
}

// AddPath adds the nodes of path's calls, outermost first, from the
// root, where the book keeps caller stacks and has room for them.
func (p *ProgramBook) AddPath(path ...int) {
	if p.b.Nodes == 0 {
		return
	}
	parent := instr.RootNode
	for _, fn := range path {
		parent = p.nodes.child(parent, fn)
	}
}

// renode starts the table of nodes again, with the nodes of the calls
// open, spilled ones first, each frame given its new node (0 beyond the
// table's room); keep moves the figures of the nodes out first (folded),
// else they are dropped (a book written over: what they held since its
// thread's last signal is lost).
func (p *ProgramBook) renode(keep bool) {
	if keep {
		if p.nodes.folded == nil {
			p.nodes.folded = NewPaths()
		}
		p.nodes.takeInto(p.nodes.folded)
	}
	p.nodes.clear()
	parent := instr.RootNode
	for _, s := range p.spill {
		for i := range s.frames {
			parent = p.nodes.child(parent, int(s.frames[i].fn))
			s.frames[i].node = uint64(parent)
		}
	}
	p.put(p.b.FrameAt(0)+instr.FrameNode, uint64(parent))
	for i := 1; i <= p.depth(); i++ {
		parent = p.nodes.child(parent, int(p.get(p.b.FrameAt(i)+instr.FrameFunc)))
		p.put(p.b.FrameAt(i)+instr.FrameNode, uint64(parent))
	}
}

// TakeNodesInto moves the figures of each caller stack booked so far to
// paths, by its path of functions outermost first, and zeroes them in
// the book (its thread stopped): what they hold from then on is new. A
// node's outermost calls are its calls. Paths gathers the caller stacks
// of many books (Paths.Take hands them out).
func (p *ProgramBook) TakeNodesInto(paths *Paths) { p.nodes.takeAllInto(paths) }

// nodesDamaged reports whether the node count, or the node of one of the
// open frames, is not one the book has (0, no node, is).
func (p *ProgramBook) nodesDamaged(top int) bool {
	if p.nodes.damaged() {
		return true
	}
	count := uint64(p.nodes.count())
	for i := 0; i <= top; i++ {
		if p.get(p.b.FrameAt(i)+instr.FrameNode) >= count {
			return true
		}
	}
	return false
}
