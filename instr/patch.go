package instr

import (
	"encoding/binary"
	"errors"
	"slices"
)

// In-process instrumentation: a site's first instructions are replaced by a
// jump to a trampoline, code written into the running program that does
// the instrumentation's work (a count), runs the replaced instructions
// relocated, and jumps back after them. The per-architecture part is the
// architecture's: which bytes a patch may replace ([Patcher.PlanPatch]),
// the trampoline's code ([Patcher.Trampoline]), the jump written over the
// site ([Patcher.PatchJump]) and how a trampoline counts
// ([Instrumenter.Counting], [Instrumenter.CountCode]).
//
// A trampoline never writes the program's stack and changes no register
// but those the ABI makes dead at a function's entry (the flags; x16 and
// x17 on arm64), so that the same code serves C, C++, Rust and Go.

// Patch is a planned replacement of whole instructions at a site by a jump.
type Patch struct {
	// Site is the address of the first byte replaced.
	Site uint64
	// Orig holds the replaced bytes: at least the jump's length, whole
	// instructions.
	Orig []byte
	// Insts are the replaced instructions, in order: their offsets in Orig
	// are the sums of the lengths before them.
	Insts []Inst
	// Short marks a patch whose jump is the architecture's short jump
	// (amd64 jmp rel8) to a hop: a jump of full reach, written in
	// padding nearby ([Patcher.PlanShortPatch]).
	Short bool
	// Punned holds the bytes after Orig that a punned jump overlaps
	// without changing them ([Patcher.PlanPunPatch]); nil for other patches.
	Punned []byte
	// Own is the number of bytes of Orig the jump writes over, where the
	// trampoline carries out more instructions than the jump replaces
	// (the next ones moved out with patches of their own: [Layout]); 0
	// for all of them.
	Own int
	// Prefix holds the prefixes a jump starts with, which change nothing
	// it does but move its displacement over other bytes: a punned jump
	// then lands in another window ([Patcher.PunWindow]). Nil for most.
	Prefix []byte
	// Before holds, for each of Insts, code the trampoline runs before
	// that instruction's relocated copy, after the copies of the ones
	// before it (a line's count, where one patch replaces the first
	// instructions of several lines); nil, or shorter than Insts, for
	// none.
	Before [][]byte
	// Back is where the trampoline goes on to after the instructions it
	// carries out, where that is not End: the trampoline of the jump at
	// End (Layout.carryTail). 0 for End.
	Back uint64
	// Ways holds, for each of Insts that is a conditional branch, the
	// code the trampoline runs on each of its two ways: Ways[i][0] on the
	// way to its target, Ways[i][1] on the way on to the next
	// instruction (branch coverage's marks); nil, or shorter than
	// Insts, for none. The code must keep the flags and every register.
	Ways [][2][]byte
}

// ways returns the code of the ways of instruction i of p, and whether
// there is any.
func (p *Patch) ways(i int) ([2][]byte, bool) {
	if i < len(p.Ways) && (p.Ways[i][0] != nil || p.Ways[i][1] != nil) {
		return p.Ways[i], true
	}
	return [2][]byte{}, false
}

// before returns the code to run before instruction i of p.
func (p *Patch) before(i int) []byte {
	if i < len(p.Before) {
		return p.Before[i]
	}
	return nil
}

// Written returns how many bytes at Site the jump writes over: Own, or
// all of Orig.
func (p *Patch) Written() int {
	if p.Own > 0 {
		return p.Own
	}
	return len(p.Orig)
}

// End is the address after the replaced bytes.
func (p *Patch) End() uint64 { return p.Site + uint64(len(p.Orig)) }

// Return is where the trampoline goes on to: Back, or End.
func (p *Patch) Return() uint64 {
	if p.Back != 0 {
		return p.Back
	}
	return p.End()
}

// PCMap pairs an address in a trampoline with the original address whose
// instruction it carries out, so that a thread stopped inside a trampoline
// (a signal, a crash) can be shown where it is in the program's own code.
type PCMap struct {
	Tramp, Orig uint64
}

// Trampoline is the code of one trampoline and its PC map.
type Trampoline struct {
	Code []byte
	// PCs maps the start of each replaced instruction's relocated copy to
	// its original address; a PC before the first (in the instrumentation)
	// maps to the site. Sorted by Tramp.
	PCs []PCMap
	// Exit marks an exit's trampoline ([ExitTrampoline]), which has no
	// jump back.
	Exit bool
	// At is the offset of the instrumentation in Code: 0 at an entry,
	// after the relocated epilogue at an exit. Tail, at an exit, is the
	// offset of the exit's own copy, after the instrumentation.
	At, Tail int
}

// OrigPC returns the original address for pc, inside the trampoline at
// addr: the instruction whose copy holds pc, or the site while the
// instrumentation runs. Past the last copy (the jump back) it is the
// address after the patch.
func (t *Trampoline) OrigPC(addr, end, pc uint64) uint64 {
	i, found := slices.BinarySearchFunc(t.PCs, pc, func(m PCMap, pc uint64) int {
		switch {
		case m.Tramp < pc:
			return -1
		case m.Tramp > pc:
			return 1
		}
		return 0
	})
	switch {
	case found:
		return t.PCs[i].Orig
	case i == 0:
		return t.PCs[0].Orig
	case i == len(t.PCs) && !t.Exit && pc >= addr+uint64(len(t.Code))-jumpBackRoom:
		return end
	}
	return t.PCs[i-1].Orig
}

// ExactPC returns the original address from which a thread goes on
// exactly as it goes on from pc, inside the trampoline at addr, once
// rolled out of the instrumentation's regions that save registers (their
// [Rollback]): the site, for a pc in the instrumentation of an entry (its
// registers are the site's: the count and the call depth's code change
// none that are live); the exit, for a pc from the instrumentation of an
// exit to the exit's copy; the instruction whose relocated copy starts at
// pc; the address after the patch, on the jump back. Elsewhere (inside a
// copy that relocation made into several instructions: a jump out of
// range, a PC-relative operand reached through a scratch register) no
// original address holds what the thread has done of it, and it reports
// false.
func (t *Trampoline) ExactPC(addr, end, pc uint64) (uint64, bool) {
	if pc < addr || pc >= addr+uint64(len(t.Code)) || len(t.PCs) == 0 {
		return 0, false
	}
	switch {
	case pc < t.PCs[0].Tramp:
		return t.PCs[0].Orig, true
	case t.Exit && len(t.PCs) > 0 && pc >= addr+uint64(t.At) && pc <= addr+uint64(t.Tail):
		return t.PCs[len(t.PCs)-1].Orig, true
	case !t.Exit && pc >= addr+uint64(len(t.Code))-jumpBackRoom:
		return end, true
	}
	for _, m := range t.PCs {
		if m.Tramp == pc {
			return m.Orig, true
		}
	}
	return 0, false
}

// jumpBackRoom is an upper bound of the jump back's length at the end of a
// trampoline on every architecture: a PC within it is past the last copy.
const jumpBackRoom = 5

// LineSite is what [Instrumenter.LineCode] counts: the counter (as
// CountCode takes it; for CountInArea its offset in a thread's area), the
// offset in a thread's block where the code may save a register, and
// whether the count is a cover (the counter set to one), the code runs on
// a goroutine's stack (a Go module's code), that code is Go assembly (a
// .s file's, whose registers follow no compiler's rules), and the flags
// are dead there ([Instrumenter.FlagsDead]). Table and Areas find a
// thread's area from its stack pointer, for CountInArea, as [Depth]'s do;
// where ThreadPointer is set, the thread pointer holds the area's address
// (arm64's TPIDR_EL0, which PROFILE sets in a Go program that has no
// other use for it, as for [Ring.ThreadPointer]). An entry's count
// ([Instrumenter.EntryCount]) takes its counter, table and areas, and
// GoStack for a Go function's.
type LineSite struct {
	Counter, Save                  uint64
	Cover, GoStack, GoAsm, NoFlags bool
	Table, Areas                   uint64
	ThreadPointer                  bool
}

// CountKind says how trampolines count on a CPU.
type CountKind uint8

const (
	// CountPerThread: the counter is an offset in the running thread's own
	// counter block, whose address is the thread's segment base (GS on
	// amd64), given to each thread by the tracer. No atomic operation.
	CountPerThread CountKind = iota + 1
	// CountShared: the counter is an absolute address, shared by every
	// thread and added to atomically (arm64 LSE STADD).
	CountShared
	// CountInArea: the counter is an offset in the running thread's area
	// of the stack table (the table form of [Depth]), found from the stack
	// pointer, and added to with a plain load and store: no other thread
	// writes the area (arm64 without LSE, ARMv8.0).
	CountInArea
)

// Reasons a site cannot be patched and keeps a breakpoint. Errors of
// PlanPatch and Trampoline wrap one of them (or a decoding error).
var (
	// ErrTooShort: the function's code ends before a jump fits.
	ErrTooShort = errors.New("too short for a jump")
	// ErrBranchInto: a branch of the function lands inside the bytes the
	// jump would replace (other than on their first byte).
	ErrBranchInto = errors.New("a branch lands inside the patched bytes")
	// ErrNotRelocatable: an instruction the jump would replace cannot run
	// from a trampoline (a call, whose return address would point into
	// it; a system call; a trap; a PC-relative operand out of reach).
	ErrNotRelocatable = errors.New("an instruction cannot run from a trampoline")
	// ErrNoCounting: the CPU lacks what counting in-process needs.
	ErrNoCounting = errors.New("the CPU cannot count in-process")
)

// PaddingAfter returns how many of the bytes after a function, which
// begin after (the function ending at end), are alignment padding: nops
// and traps up to the next 16-byte boundary, which is where compilers
// align the next function (GCC, Clang and Go on amd64 and arm64). A patch
// of a function too short for a jump may cover them after its last
// instruction. 0 when they are anything else.
func PaddingAfter(a Decoder, after []byte, end uint64) int {
	limit := int(((end + 15) &^ 15) - end)
	if limit > len(after) {
		return 0
	}
	decode := a.bareDecoder()
	n := 0
	for n < limit {
		in, err := decode(after[n:limit], end+uint64(n))
		if err != nil || in.Len <= 0 || (in.Kind != Nop && in.Kind != Trap) {
			return 0
		}
		n += in.Len
	}
	if n != limit {
		return 0
	}
	return n
}

// Reason classifies an error of PlanPatch or Trampoline in a few words,
// for counting fall-backs by reason: "too short", "branch into",
// "not relocatable", "no counting", "undecodable".
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrTooShort):
		return "too short"
	case errors.Is(err, ErrBranchInto):
		return "branch into"
	case errors.Is(err, ErrNotRelocatable):
		return "not relocatable"
	case errors.Is(err, ErrNoCounting):
		return "no counting"
	}
	return "undecodable"
}

// StraightTo reports whether code, at pc, always runs on to the address
// to: the instructions from pc to to fall through, each to the next (no
// branch, call, return, system call or trap among them), and one begins
// at to. Whatever passes at pc then passes at to, barring a signal
// whose handler does not return.
func StraightTo(a Decoder, code []byte, pc, to uint64) bool {
	decode := a.scanDecoder()
	for off := uint64(0); pc+off < to; {
		if off >= uint64(len(code)) {
			return false
		}
		in, err := decode(code[off:], pc+off)
		if err != nil || in.n <= 0 || a.breaksFlow(code[off:], in) {
			return false
		}
		off += uint64(in.n)
		if pc+off > to {
			return false
		}
	}
	return true
}

// WholeInsts returns the length of the whole instructions that code,
// at pc, starts with, decoded one after the other until one does not
// decode or is cut off by the end of code: where a piece of a function
// taken at a site may end without cutting an instruction.
func WholeInsts(a Decoder, code []byte, pc uint64) int {
	decode := a.scanDecoder()
	off := 0
	for off < len(code) {
		in, err := decode(code[off:], pc+uint64(off))
		if err != nil || in.n <= 0 || in.n > len(code)-off {
			break
		}
		off += in.n
	}
	return off
}

// branchTargets decodes fn (starting at start) and returns the targets of
// its direct branches that fall inside (lo, hi): the bytes a patch from lo
// to hi would replace, but its first. An instruction it cannot decode is an
// error: a branch after it could not be seen.
func branchTargets(a Decoder, fn []byte, start, lo, hi uint64) ([]uint64, error) {
	decode := a.scanDecoder()
	var into []uint64
	for off := 0; off < len(fn); {
		pc := start + uint64(off)
		in, err := decode(fn[off:], pc)
		if err != nil {
			return nil, err
		}
		if in.n <= 0 || in.n > len(fn)-off {
			return nil, decodeError(a, fn[off:], pc, ErrTruncated) // never: a guard against a loop
		}
		if (in.kind == Jump || in.kind == CondJump || in.kind == Call || in.pcrel) && in.target > lo && in.target < hi {
			into = append(into, in.target)
		}
		off += in.n
	}
	return into, nil
}

// Call depth in-process: each thread has a depth area, in which each
// entry's trampoline keeps a shadow stack of its thread's profiled frames:
// a frame whose entry stack pointer is at or below a new entry's has
// returned (a Go function measures it from its goroutine's stack top,
// which survives stack copying, and a goroutine other than the last one's
// starts the stack afresh). Where threads have blocks of their own
// (amd64), the area is in the block, after its counters, at an offset D;
// elsewhere (arm64) the stack pointer finds it through a table (the table
// form of [Depth]), which uses only the count and the stack. Offsets in
// the area:
const (
	DepthSave    = 0  // two save slots for the registers the code uses
	DepthCurrent = 16 // the frames on the shadow stack
	DepthMax     = 24 // the deepest nesting seen (blocks only)
	DepthG       = 32 // the goroutine of the frames (Go, blocks only)
	DepthTop     = 40 // the last entry's stack pointer, 0 if unknown ([Depth.Top])
	DepthStack   = 48 // the shadow stack: one word per frame
)

// DepthAreaSize is the size of a depth area of slots frames.
func DepthAreaSize(slots int) uint64 { return DepthStack + 8*uint64(slots) }

// Depth describes the depth area for DepthCode.
type Depth struct {
	// Offset is D, the area's offset in the thread's block.
	Offset uint64
	// Slots is the shadow stack's size: deeper nesting counts as Slots.
	Slots int
	// GoABI selects the Go form (the goroutine in r14).
	GoABI bool
	// Top selects, in the C form on a block, a first test of the stack
	// pointer against the one the last entry left on top (DepthTop): an
	// entry at the same stack pointer, a sibling of the last (a loop
	// calling one function again and again), changes nothing, and
	// skips the rest with one compare and no register saved. Whoever
	// else changes the shadow stack clears DepthTop (PROFILE, at a
	// signal or for a new thread), and so the Go form, which does not,
	// must not share the areas: Top is for programs without it.
	Top bool
	// Table and Areas serve where threads have no register of their own
	// for a block (arm64, whose TPIDR_EL0 belongs to the C library): a
	// thread's area is found from its stack pointer. Table is the address
	// of DepthTableSize 4-byte entries, one per page of stack addresses
	// (sp bits 12 to 12+DepthTableBits-1, so that stacks 16 GiB apart
	// share entries), each the offset from Areas of the area of the thread
	// whose stack holds that page; the tracer fills them for each thread's
	// stack at its first stop. Entry 0 is a discard area, for stacks no
	// thread owns (an alternate signal stack). Areas are DepthAreaAlign
	// bytes apart and aligned, so that the code finds an area's start and
	// its frame count from a pointer into its shadow stack alone.
	Table, Areas uint64
}

// The stack table of the table form of [Depth].
const (
	DepthTablePage = 12 // the shift from a stack address to its page
	DepthTableBits = 22
	DepthTableSize = 1 << DepthTableBits
	DepthAreaAlign = 1 << 14
)

// MaxTableSlots is the most frames a table-form area holds.
const MaxTableSlots = (DepthAreaAlign - DepthStack) / 8

// TableIndex is the stack table's entry for stack address sp.
func TableIndex(sp uint64) uint64 { return sp >> DepthTablePage & (DepthTableSize - 1) }

// TableDepth is the deepest nesting a table-form area (the table form
// keeps no maximum) went to: the shadow stack's slots are written in
// order from the first and never cleared, and a key is never 0, so it is
// the number of slots written.
func TableDepth(area []byte, slots int) int {
	for n := slots; n > 0; n-- {
		at := DepthStack + 8*(n-1)
		if at+8 <= len(area) && binary.LittleEndian.Uint64(area[at:]) != 0 {
			return n
		}
	}
	return 0
}

// DepthCode is the depth part of a trampoline's prelude, which follows the
// count.
type DepthCode struct {
	Code []byte
	// Count is, in a line site's count ([Instrumenter.LineCode]), the
	// offset of the instruction that reads the counter: 0, or after the
	// registers the count saves first.
	Count int
	// Rollback says how to undo a thread stopped inside Code (for a
	// signal, whose handler may run profiled functions that use the same
	// save slots): restore the registers saved so far and resume at the
	// start of Code, which is idempotent.
	Rollback []Rollback
}

// Rollback is one range of DepthCode.Code, RecordCode.Code or
// BookCode.Code (offsets From to To) and the registers saved there: DWARF
// number and offset in the block. The thread resumes at offset Resume of
// the code (0: its start). Where Finish is set, it is neither restored
// nor moved: it is stepped to the end of the code, whose writes from
// From on cannot be made twice, before anything else runs on it.
type Rollback struct {
	From, To int
	Restore  []SavedReg
	Resume   int
	Finish   bool
}

// SavedReg is a register saved in a thread's block.
type SavedReg struct {
	Reg    int
	Offset uint64
}

// GoEntryUsesG reports whether the code before a Go function's entry site,
// its stack-growth check, reads the stack guard through the goroutine
// register of Go's internal ABI (amd64: cmp 0x10(%r14),%rsp or
// cmp 0x10(%r14),%r12, 49/4d 3b 66 10; arm64: ldr x16, [x28, #16],
// f9400b90): then the register holds the goroutine at the site. Assembly
// functions (Go's ABI0) check through thread-local storage, and their
// r14 may hold anything.
func GoEntryUsesG(a ABI, check []byte) bool { return a.goEntryUsesG(check) }
