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
// at B). Its offsets, from the block's start (B included):
const (
	// BookSave holds three save slots for the registers the code uses.
	BookSave = 0
	// BookKey is where the code leaves the stack pointer its calls are
	// closed up to for the closer (BookCloserCode); BookStackLo and
	// BookStackHi are the bounds of the thread's stack, which PROFILE
	// writes (0 and 0: not known, the closer closes nothing).
	BookKey     = 24
	BookStackLo = 32
	BookStackHi = 40
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
	// BookLast is the time of the thread's last exit: with the open
	// call's entry, what PROFILE's own time of an event it books (a
	// breakpoint's) may not come before.
	BookLast = 112
	// BookFrames is where the frames start; frame 0 is the root, whose
	// stack pointer is the highest there is, so that every entry nests in
	// it.
	BookFrames = 128
	// BookFrameSize is a frame's size: the counter's time at the entry,
	// the time of its children, the stack pointer at the entry, the
	// thread's held time at the entry, the calls made beneath it (at any
	// depth), its function, for PROFILE to close it where its exit was
	// not seen, and the calls it made itself (its kids).
	BookFrameSize = 64
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

// The words of a frame and of a function's figures.
const (
	FrameTime, FrameChildren, FrameSP, FrameHeld, FrameBeneath, FrameFunc, FrameKids = 0, 8, 16, 24, 32, 40, 48
	FigureCalls, FigureSelf, FigureInclusive, FigureOpen                             = 0, 8, 16, 24
	FigureKids, FigureOuter, FigureBeneath                                           = 32, 40, 48
)

// Book describes a thread's book for BookEntryCode and BookExitCode.
type Book struct {
	// Offset is B, the book's offset in the thread's block (amd64).
	Offset uint64
	// Frames is the number of frames the shadow stack holds, the root
	// included; Funcs the number of functions with figures.
	Frames, Funcs int
	// Closer is the address of a word that holds the closer's address
	// (BookCloserCode), in the lowest 2 GiB, where an instruction can
	// name it whole, and read-only to the program, which cannot make
	// the code call anything else; 0 where there is none: the code then
	// leaves every call it does not close itself to PROFILE.
	Closer uint64
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
