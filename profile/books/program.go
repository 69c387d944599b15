package books

import (
	"encoding/binary"
	"slices"

	"github.com/sourceprofiler/sprof/instr"
)

// A thread's book kept in the program (instr.Book, issue 33): the code
// PROFILE writes at the entries and exits of timed functions keeps a
// shadow stack of the thread's open calls and each function's figures in
// the thread's block, in nanoseconds, for the common case, the calls left
// open below the stack pointer on the thread's own stack included (its
// closer). What the code leaves to PROFILE (a call on another stack, a
// shadow stack full, a book written over, an event caught by a
// breakpoint) PROFILE books here, on the same memory, by the same rules
// as the books' own (see the package's comment): a frame at or above a
// new entry has returned; an exit closes the frames deeper than it, then
// its own; an entry on another stack than the open call's nests in it.
//
// The program's shadow stack has room for instr.Book.Frames frames, the
// root included. When it is full the bottom half moves out, to the
// ProgramBook's spill, and comes back when the program's frames are all
// closed again: the root's stack pointer is then just below the spilled
// top's, so that the code still sees the frames it cannot hold (an entry
// at or above it, and every exit, stop). A spill is exact: deep
// recursions are booked as any other.

// ProgramBook is PROFILE's view of one thread's book in the program: the
// thread's block, the book's place in it, and the frames spilled out of
// it.
type ProgramBook struct {
	mem   []byte
	b     instr.Book
	spill []spilled
	// Where, when not nil, tells which mapping holds a stack pointer:
	// an entry on another stack than the open call's nests in it.
	Where StackFinder
	// deepest is the call depth seen while frames were spilled.
	deepest int
	// saved is the book's header and frames as Snapshot found them,
	// for Restore.
	saved []byte
	// nodes is the table of its caller stacks (nodes.go).
	nodes nodeTable
	// scale and stack are what PROFILE wrote of the counter's scale and
	// the stack's bounds (SetScale, SetStack), written again where the
	// book is emptied after the program wrote over it (Restore).
	scale uint64
	stack [2]uint64
}

// spilled is a run of frames moved out of the program, bottom first,
// with what the root had booked when they left (their children's time
// and counts go to the root while they are out).
type spilled struct {
	frames                  []programFrame
	children, beneath, kids uint64
}

// programFrame is a frame of the book (instr.FrameTime...).
type programFrame struct {
	t, children, sp, held, beneath, fn, kids, node uint64
}

// rootSP is the root frame's stack pointer with nothing spilled: above
// every entry, so that every entry nests in it.
const rootSP = ^uint64(0)

// NewProgramBook returns the book b in block mem, and starts it empty
// (a new thread's): the root frame alone, nothing booked.
func NewProgramBook(mem []byte, b instr.Book) *ProgramBook {
	p := &ProgramBook{mem: mem, b: b, nodes: nodeTable{mem: mem, b: b}}
	p.Reset()
	return p
}

// FreshProgramBook returns the book b in block mem, whose memory is all
// zeros (just mapped, never written), and starts it empty as
// NewProgramBook does, writing only the words an empty book does not
// hold at zero: a book is large, and pages of its memory not written
// are pages the system need not give.
func FreshProgramBook(mem []byte, b instr.Book) *ProgramBook {
	p := &ProgramBook{mem: mem, b: b, nodes: nodeTable{mem: mem, b: b}}
	p.start()
	return p
}

// OpenProgramBook returns the book b in block mem as it is.
func OpenProgramBook(mem []byte, b instr.Book) *ProgramBook {
	return &ProgramBook{mem: mem, b: b, nodes: nodeTable{mem: mem, b: b}}
}

// Copy returns a copy of the book, on a copy of its memory.
func (p *ProgramBook) Copy() *ProgramBook {
	q := *p
	q.mem = slices.Clone(p.mem)
	q.spill = slices.Clone(p.spill)
	for i := range q.spill {
		q.spill[i].frames = slices.Clone(q.spill[i].frames)
	}
	q.nodes = nodeTable{mem: q.mem, b: q.b, folded: p.nodes.folded.clone()}
	return &q
}

// Become makes the book what q, a copy of it (Copy), holds.
func (p *ProgramBook) Become(q *ProgramBook) {
	end := p.b.Offset + p.b.Size()
	copy(p.mem[p.b.Offset:end], q.mem[p.b.Offset:end])
	p.spill, p.deepest, p.nodes.folded = q.spill, q.deepest, q.nodes.folded
}

// Reset empties the book: no frame, no figure, no held time.
func (p *ProgramBook) Reset() {
	clear(p.mem[p.b.Offset : p.b.Offset+p.b.Size()])
	p.start()
}

// start starts a book whose memory is all zeros.
func (p *ProgramBook) start() {
	p.spill, p.deepest, p.nodes.folded = nil, 0, nil
	p.put(p.b.Offset+instr.BookTop, p.b.FrameAt(1))
	p.put(p.b.Offset+instr.BookDeepest, p.b.FrameAt(1))
	p.put(p.b.FrameAt(0)+instr.FrameSP, rootSP)
	if p.b.Nodes > 0 {
		// (The table all zeros: every slot free.)
		p.put(p.b.Offset+instr.BookNodeCount, instr.RootNode+1)
		p.put(p.b.FrameAt(0)+instr.FrameNode, instr.RootNode)
	}
}

func (p *ProgramBook) get(off uint64) uint64 { return binary.LittleEndian.Uint64(p.mem[off:]) }
func (p *ProgramBook) put(off, v uint64)     { binary.LittleEndian.PutUint64(p.mem[off:], v) }
func (p *ProgramBook) add(off uint64, v int64) {
	p.put(off, p.get(off)+uint64(v))
}

// depth is the number of frames open in the program, the root not
// counted.
func (p *ProgramBook) depth() int {
	return int((p.get(p.b.Offset+instr.BookTop)-p.b.FrameAt(0))/instr.BookFrameSize) - 1
}

// frame reads frame i.
func (p *ProgramBook) frame(i int) programFrame {
	at := p.b.FrameAt(i)
	return programFrame{p.get(at + instr.FrameTime), p.get(at + instr.FrameChildren), p.get(at + instr.FrameSP),
		p.get(at + instr.FrameHeld), p.get(at + instr.FrameBeneath), p.get(at + instr.FrameFunc), p.get(at + instr.FrameKids),
		p.get(at + instr.FrameNode)}
}

// setFrame writes frame i.
func (p *ProgramBook) setFrame(i int, f programFrame) {
	at := p.b.FrameAt(i)
	for k, v := range [...]uint64{f.t, f.children, f.sp, f.held, f.beneath, f.fn, f.kids, f.node} {
		p.put(at+uint64(k)*8, v)
	}
}

// after returns now, or the time of the thread's last event where that
// is later (PROFILE's time of an event is an estimate, which may come
// before what the code read), and makes it the last.
func (p *ProgramBook) after(now uint64) uint64 {
	now = max(now, p.LastTime())
	p.put(p.b.Offset+instr.BookLast, now)
	return now
}

// LastTime returns the time of the thread's last event the book knows
// of: its last exit, or its open call's entry, if later. An event
// PROFILE books (a breakpoint's) comes after it.
func (p *ProgramBook) LastTime() uint64 {
	last := p.get(p.b.Offset + instr.BookLast)
	if n := p.depth(); n > 0 && n < p.b.Frames {
		last = max(last, p.frame(n).t)
	}
	return last
}

// Held returns the time PROFILE held the thread so far, in nanoseconds.
func (p *ProgramBook) Held() uint64 { return p.get(p.b.Offset + instr.BookHeld) }

// SetHeld sets it; PROFILE writes it while the thread is stopped.
func (p *ProgramBook) SetHeld(ns uint64) { p.put(p.b.Offset+instr.BookHeld, ns) }

// SetScale writes the counter's scale: a time is ticks*scale >> 32
// nanoseconds (instr.BookScale).
func (p *ProgramBook) SetScale(scale uint64) {
	p.scale = scale
	p.put(p.b.Offset+instr.BookScale, scale)
}

// SetStack writes the bounds of the thread's stack, for the closer
// (instr.BookStackLo).
func (p *ProgramBook) SetStack(lo, hi uint64) {
	p.stack = [2]uint64{lo, hi}
	p.put(p.b.Offset+instr.BookStackLo, lo)
	p.put(p.b.Offset+instr.BookStackHi, hi)
}

// Open returns the number of calls open, spilled ones included.
func (p *ProgramBook) Open() int {
	n := p.depth()
	for _, s := range p.spill {
		n += len(s.frames)
	}
	return n
}

// Enter books an entry of fn with stack pointer sp at time now.
func (p *ProgramBook) Enter(fn int, sp, now uint64) {
	now = p.after(now)
	for {
		if p.depth() == 0 {
			if len(p.spill) == 0 || p.spill[len(p.spill)-1].top().sp > sp {
				break
			}
			p.unspill()
			continue
		}
		top := p.frame(p.depth())
		if top.sp > sp || !p.sameStack(top.sp, sp) {
			break
		}
		p.close(now)
	}
	if p.depth() == 0 && len(p.spill) == 0 && !p.b.Counts(fn) {
		return // (not within the start function: instr.Book.Start)
	}
	if p.depth() == p.b.Frames-1 {
		p.spillHalf()
	}
	n := p.depth() + 1
	var node uint64
	if p.b.Nodes > 0 {
		node = uint64(p.nodeFor(fn))
	}
	p.setFrame(n, programFrame{t: now, sp: sp, held: p.Held(), fn: uint64(fn), node: node})
	p.put(p.b.Offset+instr.BookTop, p.b.FrameAt(n+1))
	p.add(p.b.FigureAt(fn)+instr.FigureOpen, 1)
	if deepest := p.b.Offset + instr.BookDeepest; p.get(deepest) < p.b.FrameAt(n+1) {
		p.put(deepest, p.b.FrameAt(n+1))
	}
}

// Exit books an exit of fn with stack pointer sp (its entry's) at time
// now: the frames deeper than sp close, then fn's at sp, if it is open.
func (p *ProgramBook) Exit(fn int, sp, now uint64) {
	now = p.after(now)
	for {
		if p.depth() == 0 {
			if len(p.spill) == 0 || p.spill[len(p.spill)-1].top().sp > sp {
				return
			}
			p.unspill()
			continue
		}
		top := p.frame(p.depth())
		if top.sp >= sp || !p.sameStack(top.sp, sp) {
			break
		}
		p.close(now)
	}
	if top := p.frame(p.depth()); top.sp == sp && top.fn == uint64(fn) {
		p.close(now)
	}
}

// CloseAll closes every open call at time now: its thread has ended, or
// the run.
func (p *ProgramBook) CloseAll(now uint64) {
	now = p.after(now)
	for {
		if p.depth() == 0 {
			if len(p.spill) == 0 {
				return
			}
			p.unspill()
			continue
		}
		p.close(now)
	}
}

// sameStack reports whether two stack pointers are on one stack, as far
// as Where knows.
func (p *ProgramBook) sameStack(a, b uint64) bool {
	if p.Where == nil {
		return true
	}
	lo, hi, ok := p.Where.StackAt(a)
	if !ok {
		return true
	}
	lo2, hi2, ok2 := p.Where.StackAt(b)
	return !ok2 || (lo == lo2 && hi == hi2)
}

// close closes the top frame at time now, as the exit code does: its
// time less PROFILE's holds, given to its caller's children, itself and
// the calls beneath it to its caller's counts, and its figures to its
// function's.
func (p *ProgramBook) close(now uint64) {
	n := p.depth()
	f := p.frame(n)
	held := p.Held() - f.held
	dur := int64(now - f.t - held)
	parent := p.b.FrameAt(n - 1)
	p.add(parent+instr.FrameChildren, dur)
	p.add(parent+instr.FrameBeneath, int64(f.beneath+1))
	p.add(parent+instr.FrameKids, 1)
	p.put(p.b.Offset+instr.BookTop, p.b.FrameAt(n))
	if f.fn >= uint64(p.b.Funcs) {
		return // (never: Damaged checks the frames)
	}
	switch {
	case p.b.Nodes == 0:
	case f.node > instr.RootNode && f.node < uint64(p.nodes.count()):
		at := p.b.NodeAt(int(f.node))
		p.add(at+instr.FigureCalls, 1)
		p.add(at+instr.FigureSelf, dur-int64(f.children))
		p.add(at+instr.FigureInclusive, dur)
		p.add(at+instr.FigureKids, int64(f.kids))
		p.add(at+instr.FigureBeneath, int64(f.beneath))
	default: // (no node: its path from the frames, f's still among them)
		p.put(p.b.Offset+instr.BookTop, p.b.FrameAt(n+1))
		p.foldFrame(Figure{Calls: 1, Self: dur - int64(f.children), All: dur, Kids: f.kids, Outer: 1, Beneath: f.beneath})
		p.put(p.b.Offset+instr.BookTop, p.b.FrameAt(n))
	}
	fig := p.b.FigureAt(int(f.fn))
	p.add(fig+instr.FigureCalls, 1)
	p.add(fig+instr.FigureSelf, dur-int64(f.children))
	p.add(fig+instr.FigureKids, int64(f.kids))
	p.add(fig+instr.FigureOpen, -1)
	if p.get(fig+instr.FigureOpen) == 0 {
		p.add(fig+instr.FigureInclusive, dur)
		p.add(fig+instr.FigureOuter, 1)
		p.add(fig+instr.FigureBeneath, int64(f.beneath))
	}
}

func (s *spilled) top() programFrame { return s.frames[len(s.frames)-1] }

// spillHalf moves the bottom half of the program's frames out.
func (p *ProgramBook) spillHalf() {
	p.noteDeepest()
	n := p.depth()
	h := n / 2
	root := p.b.FrameAt(0)
	s := spilled{children: p.get(root + instr.FrameChildren), beneath: p.get(root + instr.FrameBeneath),
		kids: p.get(root + instr.FrameKids)}
	for i := 1; i <= h; i++ {
		s.frames = append(s.frames, p.frame(i))
	}
	for i := h + 1; i <= n; i++ {
		p.setFrame(i-h, p.frame(i))
	}
	p.spill = append(p.spill, s)
	p.put(root+instr.FrameChildren, 0)
	p.put(root+instr.FrameBeneath, 0)
	p.put(root+instr.FrameKids, 0)
	p.put(root+instr.FrameSP, s.top().sp-1)
	p.put(root+instr.FrameNode, s.top().node)
	p.put(p.b.Offset+instr.BookTop, p.b.FrameAt(n-h+1))
	p.put(p.b.Offset+instr.BookDeepest, p.b.FrameAt(n-h+1))
}

// unspill brings the last frames spilled back, the program's frames all
// closed: what the root booked while they were out is their top's.
func (p *ProgramBook) unspill() {
	p.noteDeepest()
	s := p.spill[len(p.spill)-1]
	p.spill = p.spill[:len(p.spill)-1]
	root := p.b.FrameAt(0)
	top := &s.frames[len(s.frames)-1]
	top.children += p.get(root + instr.FrameChildren)
	top.beneath += p.get(root + instr.FrameBeneath)
	top.kids += p.get(root + instr.FrameKids)
	for i, f := range s.frames {
		p.setFrame(i+1, f)
	}
	p.put(root+instr.FrameChildren, s.children)
	p.put(root+instr.FrameBeneath, s.beneath)
	p.put(root+instr.FrameKids, s.kids)
	sp, node := rootSP, uint64(instr.RootNode)
	if len(p.spill) > 0 {
		sp, node = p.spill[len(p.spill)-1].top().sp-1, p.spill[len(p.spill)-1].top().node
	}
	p.put(root+instr.FrameSP, sp)
	if p.b.Nodes > 0 {
		p.put(root+instr.FrameNode, node)
	}
	p.put(p.b.Offset+instr.BookTop, p.b.FrameAt(len(s.frames)+1))
	p.put(p.b.Offset+instr.BookDeepest, p.b.FrameAt(len(s.frames)+1))
}

// noteDeepest keeps the call depth the program's frames reached over
// the frames spilled under them, before either changes.
func (p *ProgramBook) noteDeepest() {
	p.deepest = max(p.deepest, p.programDeepest()+p.spilledFrames())
}

func (p *ProgramBook) programDeepest() int {
	return int((p.get(p.b.Offset+instr.BookDeepest)-p.b.FrameAt(0))/instr.BookFrameSize) - 1
}

func (p *ProgramBook) spilledFrames() int {
	n := 0
	for _, s := range p.spill {
		n += len(s.frames)
	}
	return n
}

// Depth returns the deepest the thread's calls have nested.
func (p *ProgramBook) Depth() int {
	return max(p.deepest, p.programDeepest()+p.spilledFrames())
}

// Inside returns the time, in nanoseconds, within the thread's outermost calls
// closed so far (the root's children), spilled frames' not counted.
func (p *ProgramBook) Inside() int64 {
	if len(p.spill) > 0 {
		return int64(p.spill[0].children)
	}
	return int64(p.get(p.b.FrameAt(0) + instr.FrameChildren))
}

// Figure is what a book holds of one function: its calls, its own time,
// and its time with children (counted once per recursion), in
// nanoseconds, the book code's cost in them; and the counts that cost is
// taken out by (Costs.Corrected): the calls its calls made (Kids), its
// outermost calls (Outer), and the calls made beneath those (Beneath).
type Figure struct {
	Calls                uint64
	Self, All            int64
	Kids, Outer, Beneath uint64
}

// Figure returns function fn's figures.
func (p *ProgramBook) Figure(fn int) Figure {
	at := p.b.FigureAt(fn)
	return Figure{Calls: p.get(at + instr.FigureCalls), Self: int64(p.get(at + instr.FigureSelf)),
		All: int64(p.get(at + instr.FigureInclusive)), Kids: p.get(at + instr.FigureKids),
		Outer: p.get(at + instr.FigureOuter), Beneath: p.get(at + instr.FigureBeneath)}
}

// Damaged reports whether the book is not as its code and PROFILE keep
// it: the program wrote over it (a stray pointer, an overrun). Its top
// must be a frame's place in the shadow stack, its deepest too, at or
// above the top, the root's stack pointer its own, and each open frame's
// function one the book has figures for. Nothing else is read before
// that holds: the book's methods read and write only where they find it.
func (p *ProgramBook) Damaged() bool {
	frame := func(off uint64) (int, bool) {
		first, end := p.b.FrameAt(1), p.b.FrameAt(p.b.Frames)
		if off < first || off > end || (off-first)%instr.BookFrameSize != 0 {
			return 0, false
		}
		return int((off - first) / instr.BookFrameSize), true
	}
	top, ok1 := frame(p.get(p.b.Offset + instr.BookTop))
	deepest, ok2 := frame(p.get(p.b.Offset + instr.BookDeepest))
	if !ok1 || !ok2 || deepest < top {
		return true
	}
	root := rootSP
	if len(p.spill) > 0 {
		root = p.spill[len(p.spill)-1].top().sp - 1
	}
	if p.get(p.b.FrameAt(0)+instr.FrameSP) != root {
		return true
	}
	for i := 1; i <= top; i++ {
		if p.get(p.b.FrameAt(i)+instr.FrameFunc) >= uint64(p.b.Funcs) {
			return true
		}
	}
	return p.b.Nodes > 0 && p.nodesDamaged(top)
}

// Snapshot keeps the book's header and open frames, as they are, for
// Restore.
func (p *ProgramBook) Snapshot() {
	end := p.get(p.b.Offset + instr.BookTop)
	p.saved = append(p.saved[:0], p.mem[p.b.Offset:end]...)
}

// Restore puts back the header and frames of the last Snapshot, and
// zeroes the figures (what they held since is lost), or empties the book
// where there was none, the scale and the stack's bounds PROFILE wrote
// kept: after the program wrote over it.
func (p *ProgramBook) Restore() {
	if len(p.saved) == 0 {
		spill := p.spill
		p.Reset()
		p.SetScale(p.scale)
		p.SetStack(p.stack[0], p.stack[1])
		p.spill = spill
		if len(spill) > 0 {
			p.put(p.b.FrameAt(0)+instr.FrameSP, spill[len(spill)-1].top().sp-1)
		}
		if p.b.Nodes > 0 {
			p.renode(false)
		}
		return
	}
	copy(p.mem[p.b.Offset:], p.saved)
	at := p.b.FigureAt(0)
	clear(p.mem[at : at+instr.BookFigureSize*uint64(p.b.Funcs)])
	if p.b.Nodes > 0 {
		p.renode(false)
	}
	// (The open calls' counts of open frames, as the frames say.)
	for i := 1; i <= p.depth(); i++ {
		p.add(p.b.FigureAt(int(p.frame(i).fn))+instr.FigureOpen, 1)
	}
	for _, s := range p.spill {
		for _, f := range s.frames {
			p.add(p.b.FigureAt(int(f.fn))+instr.FigureOpen, 1)
		}
	}
}

// Take hands each function's calls, own time and time with children
// booked so far to keep, and zeroes them in the book (its thread
// stopped): what they hold from then on is new.
func (p *ProgramBook) Take(keep func(fn int, f Figure)) {
	for fn := range p.b.Funcs {
		at := p.b.FigureAt(fn)
		if f := p.Figure(fn); f != (Figure{}) {
			keep(fn, f)
			for _, w := range [...]uint64{instr.FigureCalls, instr.FigureSelf, instr.FigureInclusive,
				instr.FigureKids, instr.FigureOuter, instr.FigureBeneath} {
				p.put(at+w, 0)
			}
		}
	}
}
