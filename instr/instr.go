// Package instr owns the per-architecture knowledge of the tracer: the
// breakpoint instruction and where the PC stands after it traps, instruction
// decoding (golang.org/x/arch behind a wrapper that mends its known length
// bugs), and how a thread stopped on a breakpoint carries out the instruction
// under it without the breakpoint ever being lifted: emulated on the thread's
// registers, or executed out of line from a relocated copy in a slot.
//
// Each architecture's files, named after it (amd64*.go, arm64*.go), sit
// side by side with no build tags, so every host tests both
// architectures. They define everything in which the architectures
// differ, as the methods of [Arch]; the other files are shared and
// choose nothing by architecture. Registers are addressed by their DWARF
// numbers (System V AMD64 ABI §3.6.2; DWARF for the Arm 64-bit
// Architecture §4.1). This package imports nothing of the project.
package instr

import (
	"debug/elf"
	"errors"
	"fmt"
)

// Kind classifies an instruction for the tracer.
type Kind uint8

// Instruction kinds.
const (
	Other    Kind = iota // anything that falls through to the next instruction
	Call                 // direct or indirect call (pushes or links a return address)
	Ret                  // return
	Jump                 // unconditional direct or indirect branch
	CondJump             // conditional branch
	Nop                  // no effect but advancing the PC (nop, endbr64, bti, paciasp...)
	Trap                 // a breakpoint or trap instruction (int3, brk, ud2)
)

func (k Kind) String() string {
	switch k {
	case Other:
		return "other"
	case Call:
		return "call"
	case Ret:
		return "ret"
	case Jump:
		return "jump"
	case CondJump:
		return "condjump"
	case Nop:
		return "nop"
	case Trap:
		return "trap"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Inst is a decoded instruction.
type Inst struct {
	// Len is the length in bytes.
	Len  int
	Kind Kind
	// PCRel is set when the instruction has a PC-relative operand (a RIP-
	// relative memory operand, a relative branch, ADR, ADRP, LDR literal...).
	PCRel bool
	// Target is the absolute destination of a direct branch or call, or the
	// address a PC-relative operand refers to; 0 when unknown.
	Target uint64
	// Text is the disassembly, for messages.
	Text string
}

// Regs is the register file of a stopped thread, as emulation needs it.
// Registers are addressed by DWARF number.
type Regs interface {
	PC() uint64
	SetPC(uint64)
	Reg(dwarf int) uint64
	SetReg(dwarf int, v uint64)
	// Flags returns RFLAGS on amd64 and PSTATE (NZCV in bits 31-28) on arm64.
	Flags() uint64
}

// FlagsSetter is implemented by a [Regs] that can also write the flags
// register. On arm64, emulation clears PSTATE.BTYPE (bits 11-10) through
// it, as the kernel does when it skips an instruction
// (arm64_skip_faulting_instruction): a BTYPE left by the indirect branch
// that reached a BTI landing pad would raise a Branch Target exception at
// the next instruction of a guarded page. amd64 does not use it.
type FlagsSetter interface {
	SetFlags(uint64)
}

// Memory is the address space of the traced process.
type Memory interface {
	ReadMem(addr uint64, b []byte) error
	WriteMem(addr uint64, b []byte) error
}

// Displaced says how a thread stopped on a breakpoint resumes: it is computed
// once per site, when the breakpoint is planted, from the original bytes.
// Exactly one of three ways applies:
//
//   - Emulate != nil: the tracer calls Emulate on the thread's registers and
//     memory and resumes the thread where it leaves the PC.
//   - Slot != nil and !SingleStep: the tracer copies Slot to the slot address
//     given to [Displacer.Displace] (once, when planting), sets the PC to the
//     slot and resumes: the relocated instruction runs and jumps back by
//     itself.
//   - Slot != nil and SingleStep: the tracer sets the PC to the slot,
//     single-steps the thread, then calls AfterStep, which moves the PC (and a
//     pushed return address) back from the slot to the original code.
type Displaced struct {
	Inst       Inst
	Emulate    func(r Regs, m Memory) error
	Slot       []byte
	SingleStep bool
	AfterStep  func(r Regs, m Memory) error
}

// Errors of Displace.
var (
	// ErrOutOfReach means the slot is too far from the instruction (or its
	// PC-relative target) for a relocated copy; try a slot nearer, or another
	// way.
	ErrOutOfReach = errors.New("slot out of reach of the instruction")
	// ErrUnsupported means the instruction cannot be displaced at all.
	ErrUnsupported = errors.New("instruction cannot be displaced")
)

// Arch is everything the tracer and PREP need to know of one
// architecture. It is the sum of the architecture's jobs, one interface
// each, so that code which needs one job can ask for that alone:
//
//   - [Decoder]: what its instructions are;
//   - [Displacer]: its breakpoint, and how a thread stopped on one
//     carries out the instruction under it;
//   - [ABI]: what its calling convention says of a frame;
//   - [Injector]: its system calls, which the tracer makes a stopped
//     thread run;
//   - [Patcher]: how a jump to a trampoline replaces instructions;
//   - [Instrumenter]: the code a trampoline runs, and PROFILE's side of
//     what that code shares with it.
//
// Everything in which two architectures differ is a method of one of
// these interfaces, defined in the architecture's own files (amd64*.go,
// arm64*.go): the files shared by every architecture never choose by its
// name. docs/porting.md lists what a new one must supply.
type Arch interface {
	Decoder
	Displacer
	ABI
	Injector
	Patcher
	Instrumenter
}

// Decoder decodes an architecture's instructions.
type Decoder interface {
	// Name is the GOARCH spelling: "amd64", "arm64". It names the
	// architecture in messages and plans; no code of this package
	// chooses by it.
	Name() string
	// MaxInstLen is the longest instruction the architecture has (15 or 4).
	MaxInstLen() int
	// Decode decodes the instruction at the start of code, located at pc.
	Decode(code []byte, pc uint64) (Inst, error)

	// instAlign is the alignment of every instruction: 1 where an
	// instruction may begin at any byte (amd64), 4 where each is an
	// aligned word (arm64). A scan that meets bytes that do not decode
	// steps over this many. Where it equals MaxInstLen, every
	// instruction has that length (see [fixedLength]).
	instAlign() int
	// bareDecoder returns the patcher's decoder, which decodes every
	// instruction of every function and shows few: Decode without the
	// instruction's text where leaving it out saves time (printing
	// costs more than decoding), or Decode.
	bareDecoder() decodeFunc
	// scanDecoder returns the decoder of the scans, which read of an
	// instruction only what [scanned] holds: a fast path where the
	// architecture has one, or Decode.
	scanDecoder() scanFunc
	// breaksFlow reports whether the instruction code starts with, in
	// as scanned, may leave for anywhere but the next instruction: a
	// branch or call, a return, a system call (exit), a trap.
	breaksFlow(code []byte, in scanned) bool
}

// BareDecoder returns d's Decode without the instructions' text where
// printing it costs more than decoding (amd64's, through x86asm): for a
// loop that decodes every instruction of a program and shows none (PREP's
// check of its sites' boundaries). Take it once, before the loop.
func BareDecoder(d Decoder) func(code []byte, pc uint64) (Inst, error) {
	return d.bareDecoder()
}

// decodeFunc decodes the instruction at the start of code, at pc. The
// loops over many instructions take theirs from the architecture once
// ([Decoder]'s bareDecoder or scanDecoder): a call through the interface
// for every instruction would cost more than some decode.
type decodeFunc = func(code []byte, pc uint64) (Inst, error)

// scanFunc decodes the instruction at the start of code, at pc, for the
// scans, which decode a whole module or function only to find where
// instructions begin and where their branches go ([ScanCode],
// [MapCode], the branch check of a patch).
type scanFunc = func(code []byte, pc uint64) (scanned, error)

// scanned is what a scan reads of an instruction: its length, its kind
// where it is Jump, CondJump or Call (the only kinds the scans look at;
// the others may be Other), and PCRel and Target, as Decode gives them.
// It is smaller than an Inst, and cheaper to return for every
// instruction of a module.
type scanned struct {
	n      int
	kind   Kind
	pcrel  bool
	target uint64
}

// fixedLength reports whether every instruction of a has one length,
// its alignment (arm64's words): an address is then an instruction
// boundary when it is aligned and its instruction decodes, and no map
// of where instructions begin is needed.
func fixedLength(a Decoder) bool { return a.instAlign() == a.MaxInstLen() }

// InstAlign is the alignment of a's instructions (1 on amd64, where an
// instruction may begin at any byte; 4 on arm64, whose instructions are
// aligned words): how far a listing steps over bytes that do not decode.
func InstAlign(a Decoder) int { return a.instAlign() }

// Displacer is the breakpoint of an architecture, and how a thread
// stopped on one goes on without it ever being lifted.
type Displacer interface {
	// Breakpoint returns the breakpoint instruction's bytes (int3 0xCC, Intel
	// SDM Vol. 2A; BRK #0 = d4200000, Arm ARM C6.2.38).
	Breakpoint() []byte
	// BreakpointAddr returns the address of the breakpoint that trapped, given
	// the PC the thread reports at the trap stop (int3 leaves the PC one byte
	// past itself; BRK leaves it on the BRK).
	BreakpointAddr(pc uint64) uint64
	// SlotSize is the size of one out-of-line slot.
	SlotSize() int
	// Displace prepares how a thread stopped on a breakpoint at pc, whose
	// original bytes start code, carries out that instruction; slot is the
	// address of the site's slot of SlotSize bytes.
	Displace(code []byte, pc, slot uint64) (Displaced, error)
}

// ABI is what an architecture's calling conventions say of a function's
// frame, for the tracer at a function's entry and exit.
type ABI interface {
	// ReturnAddress reads the return address of a function at its entry
	// breakpoint ([sp] on amd64, x30 with pointer authentication bits
	// stripped on arm64).
	ReturnAddress(r Regs, m Memory) (uint64, error)
	// SP returns the stack pointer.
	SP(r Regs) uint64
	// SetSP sets the stack pointer.
	SetSP(r Regs, sp uint64)
	// RedZone is how far below the stack pointer a function may keep
	// data without moving it (128 bytes on amd64, none on arm64): code
	// that PROFILE runs on a thread stopped anywhere uses the stack below.
	RedZone() uint64
	// Goroutine returns the register where Go's internal ABI keeps the
	// running goroutine's g (r14 on amd64, x28 on arm64): meaningful only
	// in a Go function whose entry reads it (see [GoEntryUsesG]).
	Goroutine(r Regs) uint64

	// returnPop is what a return adds to the stack pointer: see
	// [ReturnPop].
	returnPop() uint64
	// goEntryUsesG reports whether the stack-growth check of a Go
	// function's entry reads the stack guard through the goroutine
	// register: see [GoEntryUsesG].
	goEntryUsesG(check []byte) bool
	// signalFrames finds the signal frames in stack, the bytes from lo
	// of a thread stopped with regs (first: the stack it is on): see
	// [SignalFrames].
	signalFrames(m Memory, regs Regs, s Stack, stack []byte, lo uint64, first bool) []*SignalFrame
}

// Injector makes a stopped thread run a system call for the tracer
// (to map its areas in the program, open a file there...).
type Injector interface {
	// SyscallInst returns the system call instruction (syscall, svc #0).
	SyscallInst() []byte
	// SetSyscall loads a system call number and its arguments into r, for a
	// call injected at a stop; SyscallResult reads the result after it.
	SetSyscall(r Regs, nr uint64, args ...uint64)
	SyscallResult(r Regs) uint64
	// SyscallNumber is the number of a system call on Linux.
	SyscallNumber(Syscall) uint64
}

// Patcher plans and writes the jumps that replace a function's
// instructions with a jump to a trampoline (see patch.go), and the
// trampoline's relocated copy of them.
type Patcher interface {
	// PlanPatch chooses the bytes a jump to a trampoline replaces at site,
	// inside the function whose code fn starts at start (and may end with
	// the alignment padding that follows the function: see
	// [PaddingAfter]): whole instructions, starting after a landing pad
	// (endbr64, BTI, PACIASP) when the site is one, that no branch of the
	// function lands in but on the first byte, and that a trampoline can
	// carry out. Its errors wrap the fall-back reasons (ErrTooShort,
	// ErrBranchInto, ErrNotRelocatable) or a decoding error.
	PlanPatch(fn []byte, start, site uint64) (Patch, error)
	// Trampoline builds the trampoline at addr for p: prelude (the
	// instrumentation, position-independent), the replaced instructions
	// relocated, and a jump on to p.Return().
	Trampoline(p *Patch, addr uint64, prelude []byte) (Trampoline, error)
	// PatchJump returns the bytes written over p: a jump to the trampoline
	// at tramp (for a short patch, to its hop), padded to len(p.Orig) with
	// breakpoints.
	PatchJump(p *Patch, tramp uint64) ([]byte, error)
	// ShortReach is how far a short jump at an address reaches, back and
	// forward from that address (amd64: 126 and 129; arm64: none).
	ShortReach() (back, fwd int64)
	// Jump returns a jump of full reach from one address to another: a
	// hop's code.
	Jump(from, to uint64) ([]byte, error)
	// PlanOwn plans the patch of the one instruction at site (after a
	// landing pad there), inside code starting at start, for a [Layout]:
	// its bytes replaced, the instruction relocatable. Its errors are
	// PlanPatch's.
	PlanOwn(code []byte, start, site uint64) (Patch, error)
	// PadGuards reports whether code starts with a landing pad that tells
	// its code was compiled to let indirect jumps land on pads alone
	// (arm64's BTI: a BTI compilation puts one wherever a jump table or a
	// computed goto lands). The instruction after such a pad is entered
	// from the pad or by a direct jump, never by an indirect one. x86-64's
	// endbr64 tells nothing: a switch's notrack jmp lands anywhere.
	PadGuards(code []byte) bool
	// JumpLen is the length of the jump a patch writes (no prefixes).
	JumpLen() int
	// Reach returns the addresses a jump starting at from reaches.
	Reach(from uint64) (lo, hi uint64)
	// JumpPrefixes returns the prefix layouts a jump may start with, in
	// order of preference, the first none: each position the bytes it
	// may hold, the first the one to use when any will do.
	JumpPrefixes() [][][]byte
	// PunWindow returns where a jump over p (with p.Prefix), longer than
	// p's instruction, lands when the bytes it shares with the code after
	// it are after; false where the architecture has no such jump, or it
	// does not fit.
	PunWindow(p *Patch, after []byte) (lo, hi uint64, ok bool)
	// PlanExits plans the patch of every exit of the function [start,
	// end) (fn may go on past end, over the padding after the function):
	// for each exit of FindExits but the indirect jumps, whole
	// instructions ending with the exit, or the exit and padding after
	// it, of at least a jump's length (a short jump's with short, where
	// the architecture has one), that no branch lands in but on the first
	// byte; the instructions before the exit must neither branch nor
	// call. An exit that cannot be patched has Err, wrapping the fall-back
	// reasons as PlanPatch's errors do.
	PlanExits(fn []byte, start, end uint64, short bool) ([]ExitPlan, error)

	// relocateOne returns the code that carries out the instruction orig,
	// originally at pc, from at.
	relocateOne(orig []byte, pc, at uint64) ([]byte, error)
}

// Instrumenter builds the code a trampoline runs before the relocated
// instructions (a count, the call depth, a record of the time), and
// holds PROFILE's side of the ring that the record code fills.
type Instrumenter interface {
	// Counting says how trampolines count on a CPU whose AT_HWCAP bits
	// (from the program's auxiliary vector) are hwcap; ErrNoCounting when
	// they cannot.
	Counting(hwcap uint64) (CountKind, error)
	// CountCode returns the position-independent code that adds one to a
	// counter: for CountPerThread, counter is its offset in the thread's
	// block; for CountShared, its address. Nil for CountInArea, whose
	// code needs the stack table too (EntryCount).
	CountCode(kind CountKind, counter uint64) []byte
	// EntryCount returns the count of a function's entry, where the
	// registers the calling convention frees at a call are free, and the
	// flags: CountCode's code, of s.Counter, or for CountInArea the count
	// in the thread's area that s's table finds, with how a thread
	// stopped inside it is rolled out (Rollback). False where the kind is
	// not the architecture's, or the count cannot be made for the entry
	// (s.GoStack: a Go function's, on a goroutine's stack).
	EntryCount(kind CountKind, s LineSite) (DepthCode, bool)
	// LineCode returns the code that counts line site s in its
	// trampoline (see [LineSite]). Inside a function body the flags and
	// every register may be live, so the code changes neither (but the
	// flags where s says they are dead) and writes nothing below the
	// stack pointer; where it must save a register, it saves it in the
	// thread's block, and its Rollback says how a thread stopped inside
	// is rolled out. False for a kind the architecture does not count
	// with, or where the code cannot run on a goroutine's stack.
	LineCode(kind CountKind, s LineSite) (DepthCode, bool)
	// FlagsDead reports whether the flags are dead at pc, in text (at
	// start): written, before any instruction reads them, on the one
	// path from there that the code shows (through direct jumps and
	// calls); false where that is not known.
	FlagsDead(text []byte, start, pc uint64) bool
	// GoRestartEnd returns the end of the sequence of Go's compiled code
	// that begins at pc, in text (at start), which Go's asynchronous
	// preemption starts again from its beginning when it stops a
	// goroutine inside it; pc where there is none. A line's count must
	// not be at pc: a preempted line would count twice.
	GoRestartEnd(text []byte, start, pc uint64) uint64
	// DepthCode returns the code that keeps a thread's call depth, which
	// follows the count in a trampoline's prelude, in the form of Depth
	// the architecture has (a thread's block, or the stack table); false
	// where d does not describe it, or for a Go frame it cannot key.
	DepthCode(d Depth) (DepthCode, bool)
	// RecordCode returns the code that appends a record with tag to the
	// thread's ring (see [Ring]), position-independent and changing
	// nothing but the flags; false where the architecture has no ring.
	RecordCode(r Ring, tag uint64) (RecordCode, bool)
	// BookEntryCode and BookExitCode return the code of a timed
	// function's entry and of its exit (the stack pointer sp above the
	// entry's) that keep the thread's book in the program ([Book]);
	// false where the architecture keeps no book, or b cannot hold f.
	BookEntryCode(b Book, f int) (BookCode, bool)
	BookExitCode(b Book, f int, sp int) (BookCode, bool)
	// BookCloserCode returns the code, written once for a run, that the
	// book code calls to close the calls left open below the stack
	// pointer (see [Book]).
	BookCloserCode(b Book) ([]byte, bool)
	// nest moves the stack pointer down a frame (down) or back up,
	// for the calls of BookCalibration.
	nest(down bool) []byte
	// GoRecordsNeedThreadPointer reports whether the record code of Go
	// functions ([Ring.Goroutine]) finds its thread's ring through the
	// thread pointer ([Ring.ThreadPointer]), which PROFILE must then set
	// for each thread, and may only in a program that has no other use
	// for it: where the architecture's record code otherwise finds the
	// ring from the stack pointer, and goroutine stacks are in no stack
	// table.
	GoRecordsNeedThreadPointer() bool
	// CounterOneClock reports whether the counter the record code reads
	// (a [Record]'s Time) is one clock across all CPUs by the
	// architecture; false where that depends on the machine, and PROFILE
	// asks the kernel.
	CounterOneClock() bool

	// ringUnread, ringRead, ringReset, ringIntact and ringResync are
	// PROFILE's side of the protocol of the ring RecordCode's code
	// writes: see [RingUnread], [RingRead], [RingReset], [RingIntact]
	// and [RingResync].
	ringUnread(area []byte, records int) (first, n int)
	ringRead(area []byte, records, n int) uint64
	ringReset(area []byte, records int) uint64
	ringIntact(area []byte, records int, mark uint64) bool
	ringResync(area []byte, records int, running bool) (uint64, bool)
	// calibrationStep is one step of [CalibrationWork]: a multiplication
	// of a register by itself, or by a constant.
	calibrationStep() []byte
}

// Syscall names the system calls the tracer injects, or looks for in a
// thread that waits (SysFutex, SysFutexWaitv).
type Syscall uint8

const (
	SysMmap Syscall = iota
	// SysMemfdCreate and SysFtruncate make the memory the program shares
	// with PROFILE: the program creates it, PROFILE maps it through the
	// program's /proc/PID/fd/N.
	SysMemfdCreate
	SysFtruncate
	SysClose
	SysMunmap
	// SysPrctl is prctl(2): PROFILE makes a forked child of a
	// non-dumpable program dumpable for the moment it takes the patches
	// out of the child's memory.
	SysPrctl
	// SysFutex and SysFutexWaitv are futex(2) and futex_waitv(2), where
	// a thread waits for another thread of its program (a join, a lock,
	// a condition variable): function timing does not charge such a
	// wait the time PROFILE held the others (profile/waits.go).
	SysFutex
	SysFutexWaitv
	// SysPerfEventOpen is perf_event_open(2): PROFILE opens, in each
	// thread of a function timing run, the task clock whose page tells
	// its book code when the thread was off a CPU (Book.Clock).
	SysPerfEventOpen
)

// ErrUnsupportedArch is returned for an ELF machine without an Arch.
var ErrUnsupportedArch = errors.New("unsupported architecture")

// arches are the architectures the profiler knows, each with its ELF
// machine: the one place that names them all (a port adds its own here).
var arches = []struct {
	machine elf.Machine
	arch    Arch
}{
	{elf.EM_X86_64, AMD64},
	{elf.EM_AARCH64, ARM64},
}

// ForMachine returns the Arch of an ELF machine.
func ForMachine(m elf.Machine) (Arch, error) {
	for _, a := range arches {
		if a.machine == m {
			return a.arch, nil
		}
	}
	return nil, fmt.Errorf("%w: %v", ErrUnsupportedArch, m)
}

// ForName returns the Arch named by its GOARCH spelling (a plan's
// Module.Arch): a look-up in arches, which chooses nothing by the name.
func ForName(name string) (Arch, error) {
	for _, a := range arches {
		if a.arch.Name() == name {
			return a.arch, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrUnsupportedArch, name)
}
