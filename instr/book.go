package instr

import (
	"slices"
)

// Function timing with the books kept in the program (issue 33): the
// trampolines of a timed function's entry and exits keep, in the thread's
// own memory, a shadow stack of its open calls and, per function, the
// figures the report needs; at an exit the code works out the call's own
// and inclusive time and adds them. Nothing crosses to PROFILE per call:
// PROFILE reads the figures at the stops it makes anyway and at the end.
//
// The machine code keeps the common case only. Where an entry's stack
// pointer is not below the open call's, or an exit's is not its open
// call's, the code calls the closer (BookCloserCode), which closes the
// calls left open on the thread's stack whose exits were not seen (a
// longjmp, an exception, an exit that kept a breakpoint and was taken
// out), as their next event does. What is left (a stack the closer does
// not know: a signal's alternate stack, a coroutine's; a shadow stack
// full; a book written over) stops the thread at a breakpoint in the
// code, the counter's time read: PROFILE applies the books' rules to the
// frames (the stack pointer rules, the stretches of several stacks),
// books the event itself at that time, and lets the thread go on at the
// code's end with its registers back.
//
// A book is found from the thread base on amd64 (in the thread's block,
// at B), and on arm64 from the stack pointer through the stack table, as
// a ring is (the thread's area, B its start). Its offsets, from the
// block's or the area's start (B included):
const (
	// BookSave holds four save slots for the registers the code uses.
	BookSave = 0
	// BookKey is where the code leaves the stack pointer its calls are
	// closed up to for the closer (BookCloserCode); BookStackLo and
	// BookStackHi are the bounds of the thread's stack, which PROFILE
	// writes (0 and 0: not known, the closer closes nothing).
	BookKey     = 32
	BookStackLo = 40
	BookStackHi = 48
	// BookTop is the block offset of the next frame: the shadow stack's
	// top, the thread's. It has a cache line of its own with the words
	// that follow.
	BookTop = 64
	// BookHeld is the time PROFILE held the thread (its stops): PROFILE
	// writes it while the thread is stopped.
	BookHeld = 72
	// BookDeepest is the highest the top has been: the call depth.
	BookDeepest = 96
	// BookScale turns the counter's ticks into nanoseconds: a time is
	// ticks*BookScale >> 32 (BookScaleShift). PROFILE writes it before
	// the thread runs; every time of the book, held time included,
	// is in nanoseconds.
	BookScale      = 104
	BookScaleShift = 32
	// BookNodeCount is, where the book keeps caller stacks (Book.Nodes),
	// the number of nodes in use, the unused node 0 and the root 1
	// included.
	BookNodeCount = 80
	// BookLast is the time of the thread's last exit: with the open
	// call's entry, what PROFILE's own time of an event it books (a
	// breakpoint's) may not come before.
	BookLast = 112
	// BookCurG and BookCurBook are, in a thread's block, the goroutine
	// whose book the code of a Go function (Book.Go) found last, and that
	// book's base, its address less the book's offset: the code's cache
	// of the goroutine's book, which PROFILE fills (a goroutine's book
	// never moves while the program's image lives).
	BookCurG    = 56
	BookCurBook = 88
	// BookSaveMore is a fifth save slot in a thread's block, for the
	// code of a Go function with caller stacks (r8).
	BookSaveMore = 120
	// BookLock serves the time on a CPU (issue 33, part 8): the 32-bit
	// lock word of the page of the thread's task clock, as the code last
	// saw it (see Book.Clock). The word after it is not used.
	BookLock     = 136
	PerfPageLock = 8
	// BookFrames is where the frames start; frame 0 is the root, whose
	// stack pointer is the highest there is, so that every entry nests in
	// it.
	BookFrames = 192
	// BookFrameSize is a frame's size: the counter's time at the entry,
	// the time of its children, the stack pointer at the entry, the
	// thread's held time at the entry, the calls made beneath it (at any
	// depth), its function, for PROFILE to close it where its exit was
	// not seen, and the calls it made itself (its kids).
	BookFrameSize = 64
	// BookNodeSlotSize is the size of a slot of a book's table of nodes:
	// a node's key (its parent node << 32 | its function; 0: free), then
	// the node.
	BookNodeSlotSize = 16
	// BookFigureSize is the size of a function's figures: its calls, its
	// own time, its time with its children (added as its outermost open
	// call ends, so that a recursion counts once), its open calls, the
	// calls its calls made (kids), its outermost calls, and the calls
	// made beneath its outermost calls (at any depth). The times are as
	// the counter read them, the book code's own cost in them: with the
	// counts, PROFILE takes out what the code cost, as it measures it in
	// the run (profile's ledger.go), a sum linear in them.
	BookFigureSize = 64
)

// The words of a frame and of a function's figures. A node's figures
// (Book.Nodes) are a function's, but for its open calls and outermost
// calls, which it does not keep (a node's call is never inside another
// of its own, so each call is its outermost), and its key in the last
// word, NodeKey.
const (
	FrameTime, FrameChildren, FrameSP, FrameHeld, FrameBeneath, FrameFunc, FrameKids = 0, 8, 16, 24, 32, 40, 48
	FrameNode                                                                        = 56
	FigureCalls, FigureSelf, FigureInclusive, FigureOpen                             = 0, 8, 16, 24
	FigureKids, FigureOuter, FigureBeneath                                           = 32, 40, 48
	NodeKey                                                                          = 56
)

// RootNode is the node of the root frame, the empty caller stack; node
// 0 is no node.
const RootNode = 1

// NodeHash is the multiplier of a node's key that gives its slot in the
// table: the product's top bits (Book.NodeSlot), Fibonacci hashing's
// 2^64 / φ, which spreads the keys of one caller's callees, whose high
// halves are one, over the table.
const NodeHash = 0x9e3779b97f4a7c15

// Book describes a thread's book for BookEntryCode and BookExitCode.
type Book struct {
	// Offset is B, the book's offset in the thread's block (amd64), or
	// in its area (arm64).
	Offset uint64
	// Table and Areas are, on arm64, the addresses of the stack table
	// and of the areas it gives the threads (as [Depth]'s).
	Table, Areas uint64
	// Frames is the number of frames the shadow stack holds, the root
	// included; Funcs the number of functions with figures.
	Frames, Funcs int
	// Nodes, where the book keeps each call's caller stack (/AT), is
	// how many nodes it has room for: a node is a caller stack, the
	// functions of the calls open around a call, outermost first, and
	// the function called (the root is the empty one), and has the
	// figures of its calls. The table that finds a node from its caller's
	// node and its function has two slots for each node, a power of two;
	// the code finds the nodes there, and adds one missing where the
	// table has room, else leaves the call to PROFILE (which starts the
	// table again).
	Nodes int
	// Closer is the address of a word that holds the closer's address
	// (BookCloserCode), in the lowest 2 GiB, where an instruction can
	// name it whole, and read-only to the program, which cannot make
	// the code call anything else; 0 where there is none: the code then
	// leaves every call it does not close itself to PROFILE.
	Closer uint64
	// Go makes the code a Go function's (Go's internal ABI: the running
	// goroutine's g in its register): the frames and the figures are
	// the goroutine's book, which follows it from thread to thread, at
	// the base BookCurBook holds where BookCurG is the goroutine (else
	// the event is PROFILE's, which finds or gives the goroutine a book
	// and sets them); the book's stack pointers are the frames' distances
	// from the goroutine's stack top, g.stack.hi, less (which survive
	// the copying of a goroutine's stack). The registers are saved in
	// the thread's block and its scale read there; its closer (Closer)
	// is reached by a jump, and writes nothing on the goroutine's stack.
	Go bool
	// Start, where not 0, is the start function's number plus one
	// (/SF): the calls of other functions count only within one of its
	// calls. The entry of another function whose thread (or goroutine)
	// has no call open, none moved out by PROFILE either (the root's
	// stack pointer its own), goes on at the code's end: it opens no
	// frame and counts nothing, and its exit then closes nothing. A
	// start function not in the plan is a Start no function has.
	Start int
	// Clock, where not 0, is the distance from the thread's block (amd64,
	// its base in GS) or area (arm64, x16) to the page of the thread's
	// task clock (the kernel's perf_event_mmap_page), which PROFILE maps
	// there for it, always readable (a page of zeros where it mapped
	// none). The kernel updates the page each time the thread comes back
	// onto a CPU and counts the updates in its 32-bit word lock, at
	// PerfPageLock (it moves by two an update). The timed code compares
	// that word with the one its book noted (BookLock): where they differ
	// the thread was off a CPU since its last event, and the code notes
	// the new word and leaves the event to PROFILE, which measures the
	// wait (the thread's CPU clock against the counter's) and charges it
	// to the calls open. PROFILE adds two to BookLock each time it lets
	// the thread go: its stop took the thread off a CPU, and the update as
	// it comes back is one. The page is found at a fixed distance, not
	// through a pointer the program could write over. A Go function's
	// code and untimed code check nothing.
	Clock uint64
	// Untimed makes the code read no counter: every time it keeps is 0,
	// for a run that counts calls (with a start function, or caller
	// stacks) and times none. The two readings are most of a call's
	// cost.
	Untimed bool
}

// Counts reports whether the entry of function f counts whatever the
// calls open: no start function, or f is it.
func (b Book) Counts(f int) bool { return b.Start == 0 || f == b.Start-1 }

// BookSize is the size of a book of frames frames and funcs functions.
func BookSize(frames, funcs int) uint64 {
	return BookFrames + BookFrameSize*uint64(frames) + BookFigureSize*uint64(funcs)
}

// Size is the size of book b, its nodes included.
func (b Book) Size() uint64 {
	size := BookSize(b.Frames, b.Funcs)
	if b.Nodes > 0 {
		size += BookNodeSlotSize*uint64(b.NodeSlots()) + BookFigureSize*uint64(b.Nodes)
	}
	return size
}

// nodesFit reports whether b keeps no caller stacks, or has room for one
// at least besides the unused node 0 and the root: the code's check of a
// node, from the first after the root up to the room, needs one.
func (b Book) nodesFit() bool { return b.Nodes == 0 || (b.Nodes > RootNode+1 && b.Nodes < 1<<31) }

// NodeSlots is the number of slots of b's table of nodes: the power of
// two at least twice its nodes.
func (b Book) NodeSlots() int {
	n := 1
	for n < 2*b.Nodes {
		n *= 2
	}
	return n
}

// NodeTableAt is the block offset of b's table of nodes.
func (b Book) NodeTableAt() uint64 { return b.FigureAt(b.Funcs) }

// NodeAt is the block offset of the figures of node n of b.
func (b Book) NodeAt(n int) uint64 {
	return b.NodeTableAt() + BookNodeSlotSize*uint64(b.NodeSlots()) + BookFigureSize*uint64(n)
}

// NodeSlot is the slot of b's table where the search for key starts:
// the top bits of key × NodeHash.
func (b Book) NodeSlot(key uint64) int {
	bits := 0
	for 1<<bits < b.NodeSlots() {
		bits++
	}
	if bits == 0 {
		return 0
	}
	return int(key * NodeHash >> (64 - bits))
}

// NodeKeyOf is the key of the node of a call of fn from node parent.
func NodeKeyOf(parent, fn int) uint64 { return uint64(parent)<<32 | uint64(fn) }

// FrameAt is the block offset of frame i of b.
func (b Book) FrameAt(i int) uint64 { return b.Offset + BookFrames + BookFrameSize*uint64(i) }

// FigureAt is the block offset of the figures of function f of b.
func (b Book) FigureAt(f int) uint64 { return b.FrameAt(b.Frames) + BookFigureSize*uint64(f) }

// BookCode is the code of a timed function's entry or exit that keeps its
// thread's book.
type BookCode struct {
	Code []byte
	// Stop is the offset in Code just after the breakpoint a thread hits
	// where the code leaves the event to PROFILE (see above), with the
	// counter's time in its first register (amd64's rax) and the
	// registers the code uses in the book's save slots, Saved, which
	// PROFILE puts back as it lets the thread go on at the code's end.
	Stop  int
	Saved []SavedReg
	// Unchecked is the code's start made a jump past its end, for code
	// no tracer serves any more (a process PROFILE let go, a task left
	// running when the program has ended): a thread that comes there
	// keeps no book, and never stops at the breakpoint.
	Unchecked []byte
	// Scratch marks code that uses registers free only at entries and
	// returns (as RecordCode.Scratch: arm64's x16 and x17).
	Scratch bool
	// Rollback says how to undo a thread stopped inside Code for a
	// signal, whose handler may run profiled functions that use the same
	// book: before the commit, its registers come back and it starts
	// again; from the commit on, what it writes cannot be written twice,
	// and it is stepped to the end of the code first (Rollback.Finish).
	Rollback []Rollback
}

// BookCalibration returns two blocks of code that measure, in a thread
// whose block holds book b, what the book code costs (profile's
// ledger.go): each is function outer's call, and within it calls pieces
// of work (CalibrationWork); in the first, each piece follows a call of
// function inner that does nothing (its entry's code, then its exit's).
// Both end at a breakpoint. Inner's own time per call is what the code
// costs inside the interval it measures (the entry's code after its
// reading of the counter, the exit's before its own), and the difference
// of outer's times per call what it costs in all. ok is false where a
// keeps no book.
func BookCalibration(a Arch, b Book, outer, inner, calls int) (with, without []byte, ok bool) {
	oe, ok1 := a.BookEntryCode(b, outer)
	ox, ok2 := a.BookExitCode(b, outer, 0)
	ie, ok3 := a.BookEntryCode(b, inner)
	ix, ok4 := a.BookExitCode(b, inner, 0)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return nil, nil, false
	}
	work := CalibrationWork(a)
	with, without = slices.Clone(oe.Code), slices.Clone(oe.Code)
	for range calls {
		// (inner's frame is below outer's, as a call's is.)
		with = append(with, a.nest(true)...)
		with = append(append(with, ie.Code...), ix.Code...)
		with = append(append(with, a.nest(false)...), work...)
		without = append(without, work...)
	}
	bp := a.Breakpoint()
	return append(append(with, ox.Code...), bp...), append(append(without, ox.Code...), bp...), true
}
