package instr

// Function timing with the books kept in the program (issue 33): the
// trampolines of a timed function's entry and exits keep, in the thread's
// own memory, a shadow stack of its open calls and, per function, the
// figures the report needs; at an exit the code works out the call's own
// and inclusive time and adds them. Nothing crosses to PROFILE per call:
// PROFILE reads the figures at the stops it makes anyway and at the end.
//
// The machine code keeps the common case only. An entry whose stack
// pointer is not below the open call's (a frame left by longjmp, an
// exception, a panic, or another stack), an exit whose stack pointer is
// not its open call's, and a shadow stack full, stop the thread at a
// breakpoint in the code: PROFILE applies the books' rules to the frames
// (profile/books: the stack pointer rules, the stretches of several
// stacks), writes them back, and lets the thread retry. The rules are
// written once, in Go.
//
// A book is found from the thread base on amd64 (in the thread's block,
// at B). Its offsets, from the block's start (B included):
const (
	// BookSave holds three save slots for the registers the code uses.
	BookSave = 0
	// BookTop is the block offset of the next frame: the shadow stack's
	// top, the thread's. It has a cache line of its own with the words
	// that follow.
	BookTop = 64
	// BookHeld is the time PROFILE held the thread (its stops), in the
	// counter's ticks: PROFILE adds to it while the thread is stopped.
	BookHeld = 72
	// BookCostIn is what the code of an entry and an exit costs inside
	// the interval it measures (the entry's code after its reading of the
	// counter, the exit's before its own), and BookCostAll the whole of
	// both, in ticks: PROFILE writes them once it has measured them (0
	// until then), and each exit takes them out.
	BookCostIn  = 80
	BookCostAll = 88
	// BookFrames is where the frames start; frame 0 is the root, whose
	// stack pointer is the highest there is, so that every entry nests in
	// it.
	BookFrames = 128
	// BookFrameSize is a frame's size: the counter's time at the entry,
	// the time of its children, the stack pointer at the entry, the
	// thread's held time at the entry, and the cost of the code run
	// beneath it (BookCostAll of each call made from it, at any depth).
	BookFrameSize = 64
	// BookFigureSize is the size of a function's figures: its calls, its
	// own time, its time with its children (added as its outermost open
	// call ends, so that a recursion counts once), and its open calls.
	BookFigureSize = 32
)

// The words of a frame and of a function's figures.
const (
	FrameTime, FrameChildren, FrameSP, FrameHeld, FrameCost = 0, 8, 16, 24, 32
	FigureCalls, FigureSelf, FigureInclusive, FigureOpen    = 0, 8, 16, 24
)

// Book describes a thread's book for BookEntryCode and BookExitCode.
type Book struct {
	// Offset is B, the book's offset in the thread's block (amd64).
	Offset uint64
	// Frames is the number of frames the shadow stack holds, the root
	// included; Funcs the number of functions with figures.
	Frames, Funcs int
}

// BookSize is the size of a book of frames frames and funcs functions.
func BookSize(frames, funcs int) uint64 {
	return BookFrames + BookFrameSize*uint64(frames) + BookFigureSize*uint64(funcs)
}

// FrameAt is the block offset of frame i of b.
func (b Book) FrameAt(i int) uint64 { return b.Offset + BookFrames + BookFrameSize*uint64(i) }

// FigureAt is the block offset of the figures of function f of b.
func (b Book) FigureAt(f int) uint64 { return b.FrameAt(b.Frames) + BookFigureSize*uint64(f) }

// BookCode is the code of a timed function's entry or exit that keeps its
// thread's book.
type BookCode struct {
	Code []byte
	// Stop is the offset in Code just after the breakpoint a thread hits
	// where the code leaves the call to PROFILE (see above): the thread
	// goes on there, once PROFILE has set the frames right, and retries.
	Stop int
	// Rollback says how to undo a thread stopped inside Code for a
	// signal, whose handler may run profiled functions that use the same
	// book: before the commit, its registers come back and it starts
	// again; from the commit on, what it writes cannot be written twice,
	// and it is stepped to the end of the code first (Rollback.Finish).
	Rollback []Rollback
}
