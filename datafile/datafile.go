package datafile

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// ID identifies a plan's content. Its text form is 32 hexadecimal digits.
type ID [16]byte

func (id ID) String() string { return hex.EncodeToString(id[:]) }

// MarshalText implements [encoding.TextMarshaler].
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText implements [encoding.TextUnmarshaler].
func (id *ID) UnmarshalText(b []byte) error {
	if len(b) != 2*len(id) {
		return fmt.Errorf("plan id %q: want %d hexadecimal digits", b, 2*len(id))
	}
	_, err := hex.Decode(id[:], b)
	return err
}

// Hex is a byte string whose text form is hexadecimal (build IDs).
type Hex []byte

func (h Hex) String() string { return hex.EncodeToString(h) }

// MarshalText implements [encoding.TextMarshaler].
func (h Hex) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText implements [encoding.TextUnmarshaler]. The empty text
// gives nil, as the binary readers do.
func (h *Hex) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*h = nil
		return nil
	}
	d, err := hex.DecodeString(string(b))
	if err != nil {
		return fmt.Errorf("hex string %q: %w", b, err)
	}
	*h = d
	return nil
}

// Method is the profile type, with the original's method codes (tag-1 record).
type Method uint16

// The profile types. The numbers are the original's method codes.
const (
	LineCounting Method = 321
	LineCoverage Method = 324
	FuncCounting Method = 521
	FuncTiming   Method = 522
	FuncSampling Method = 523
	FuncCoverage Method = 524
)

// IsFunction reports whether m profiles functions (method code above 400).
func (m Method) IsFunction() bool { return m > 400 }

// IsCoverage reports whether m removes each breakpoint at its first hit.
func (m Method) IsCoverage() bool { return m == FuncCoverage || m == LineCoverage }

// IsTiming reports whether m measures time with a clock at each call.
func (m Method) IsTiming() bool { return m == FuncTiming }

// IsSampling reports whether m samples the program counter (function
// sampling, /FS).
func (m Method) IsSampling() bool { return m == FuncSampling }

// HasTimes reports whether profiles of m carry times per function:
// measured (timing) or estimated from samples (sampling).
func (m Method) HasTimes() bool { return m.IsTiming() || m.IsSampling() }

// Valid reports whether m is one of the six known methods.
func (m Method) Valid() bool {
	switch m {
	case LineCounting, LineCoverage, FuncCounting, FuncTiming, FuncSampling, FuncCoverage:
		return true
	}
	return false
}

// Words returns the words of the report header: "Function counting", ...
func (m Method) Words() string {
	switch m {
	case LineCounting:
		return "Line counting"
	case LineCoverage:
		return "Line coverage"
	case FuncCounting:
		return "Function counting"
	case FuncTiming:
		return "Function timing"
	case FuncSampling:
		return "Function sampling"
	case FuncCoverage:
		return "Function coverage"
	}
	return fmt.Sprintf("method %d", uint16(m))
}

func (m Method) String() string { return m.Words() }

// Module is one ELF file of the plan: the program first, then the shared
// libraries named to PREP, in PREP's command-line order.
type Module struct {
	// Name is the file name printed in reports and tab records ("prog",
	// "libfoo.so.1").
	Name string
	// Path is the absolute path PREP read.
	Path string
	// Arch is the GOARCH spelling of the module's machine ("amd64", "arm64").
	Arch string
	// BuildID is the GNU build ID note, or nil.
	BuildID Hex
	// Size and ModTime (Unix nanoseconds) identify the file together with
	// BuildID; PROFILE refuses a program whose identity changed (PRF1442).
	Size    int64
	ModTime int64
	// PIE is true for position-independent files (ELF type ET_DYN): their
	// addresses are relative and PROFILE adds the load bias found at run time.
	PIE bool
	// LinkBase is the link-time address of file offset 0: p_vaddr minus
	// p_offset of the loadable segment with the lowest offset. The run-time
	// start of the module's first mapping, minus the file offset that
	// mapping begins at, minus LinkBase is the load bias, whatever the
	// system's page size.
	LinkBase uint64
	// Files are the module's source files in listing order (line profiles).
	Files []string
	// CompDirs are the directories of the module's compilation units, for
	// PLIST's search of its sources: where each unit was compiled and,
	// when elsewhere, the directory of its main source file (a generated
	// parser names its grammar, #line "bc.y", relative to the one or the
	// other). A set, parallel to nothing; sorted as PREP writes it.
	CompDirs []string
}

// Func is one profiled function.
type Func struct {
	// Module indexes Plan.Modules.
	Module int
	// Name is the stored (linkage, mangled) name; reports demangle it.
	Name string
	// Source is the unit the function was compiled in: the object module of C
	// and C++ ("parse.o"), the Go package path, the Rust crate, or the
	// module's file name for a function known only from the symbol table.
	Source string
	// Entry is the link-time address of the function's entry breakpoint: its
	// first instruction, or in a Go function the instruction after the
	// stack-growth check (a function restarted after its stack grew is still
	// one call).
	Entry uint64
	// Low and High bound the function's code holding the entry, link-time
	// addresses, High past the end; both 0 when unknown. PROFILE decodes
	// that code to find the branches that land where an in-process patch
	// would go.
	Low, High uint64
	// Frame says how PROFILE tells the function's frames apart for the
	// call depth.
	Frame Frame
	// File and Line locate the function's declaration, when known.
	File string
	Line int
}

// Inlined is one inlined call of a profiled function: a copy of its code
// in another function's (DW_TAG_inlined_subroutine).
type Inlined struct {
	// Func indexes Plan.Funcs: the function inlined, whose module's code
	// holds the copy.
	Func int
	// Parent indexes Plan.Inlined: the copy whose code holds this one (a
	// call inlined into inlined code), or is -1.
	Parent int
	// Ranges are the copy's code, link-time addresses, each [low, high),
	// sorted.
	Ranges []Range
}

// Range is the code from Low up to High, High past the end.
type Range struct{ Low, High uint64 }

// Frame says how PROFILE keys a function's frames when it keeps the call
// depth: a frame whose key shows it at or above a new entry's has
// returned.
type Frame uint8

const (
	// FrameSP keys a frame by the stack pointer at its entry (C, C++,
	// Rust).
	FrameSP Frame = iota
	// FrameGoroutine keys it by its distance from the goroutine's stack
	// top, which survives the copying of goroutine stacks: a Go function
	// whose entry holds the goroutine in its register (r14 on amd64, x28
	// on arm64; Go's internal ABI).
	FrameGoroutine
	// FrameNone leaves the function out of the depth: a Go function
	// without the goroutine at hand (assembly, or no stack check).
	FrameNone
)

// Line is one profiled source line (line profiles), or one line of the
// profiled functions' code (function sampling: the line a sampled
// program counter is in).
type Line struct {
	Module int
	// File indexes Plan.Modules[Module].Files.
	File int
	Line int
	// Addrs are the link-time addresses of the line's sites: one per function
	// the line was compiled into. The line's count is the sum of their hits.
	// In a sampling plan they are the starts of every range of code the
	// line table gives the line: a program counter belongs to the line of
	// the nearest start at or below it in its function.
	Addrs []uint64
}

// Branch is one conditional branch of the code of a line coverage plan's
// lines: an instruction that goes one of two ways (x86-64's Jcc; arm64's
// B.cond, CBZ, CBNZ, TBZ and TBNZ). Its two ways are the two branches of
// lcov's BRDA records: to Target (taken), and on to the next instruction
// (not taken).
type Branch struct {
	// Line indexes Plan.Lines: the line whose code holds the branch (the
	// line table's row at Addr).
	Line int
	// Addr is the branch instruction's link-time address, and Target the
	// link-time address it jumps to.
	Addr, Target uint64
}

// Plan is the content of a .pbi: what to profile and how. The .pbt carries a
// copy of it, so PLIST needs no other file.
type Plan struct {
	// ID identifies the plan's content for merge checks: equal IDs mean the
	// same modules and the same sites, and timing data compatible with the
	// plan's method (PRF1306 otherwise).
	ID ID
	// Method is the profile type (PRF1304 when a run's differs).
	Method Method
	// StartFunc is the /SF name as given, or "". StartIndex indexes Funcs, or
	// is -1 when the name was not found (nothing is counted then).
	StartFunc  string
	StartIndex int
	// Attribution is /AT; StackDepth is /STACK (0: unlimited).
	Attribution bool
	StackDepth  int
	// Calibration is /CB in nanoseconds per event, or -1 when not given.
	Calibration int64
	Modules     []Module
	Funcs       []Func
	// Inlined are the copies of profiled functions that the compiler
	// placed in the code of others (function sampling: a sampled stack
	// has the function there, inside the one whose code holds the copy).
	// Each comes after its Parent. Nil in the other plans.
	Inlined []Inlined `json:",omitempty"`
	Lines   []Line
	// Branches are the conditional branches of the lines' code, by
	// address in each module, modules in order (line coverage; nil in the
	// other plans and in plans made before branches were recorded).
	Branches []Branch `json:",omitempty"`
	// LeftOut is what the default selection (profiler.ini) left out of
	// the profile that has debugging information, the code of a language's
	// run-time or standard library compiled into the program (Go's, Rust's,
	// C++'s), by group, for the report's header to say so. Empty when
	// nothing was, or when the user's selections brought it all back.
	LeftOut []LeftOut `json:",omitempty"`
	// Uncounted marks function sampling that counts no call (prep
	// --no-call-counts): PROFILE writes nothing into the program and
	// only samples it, profil(2)'s histogram alone, and every hit count
	// is 0.
	Uncounted bool `json:",omitempty"`
}

// LeftOut is a group of functions the default selection left out: what
// they are ("the Go runtime and standard library"), how many, and the
// option that brings them back, as an example ("/INC runtime").
type LeftOut struct {
	What    string
	Funcs   int
	Include string
}

// NumItems is the number of counted items: functions or lines.
func (p *Plan) NumItems() int {
	if p.Method.IsFunction() {
		return len(p.Funcs)
	}
	return len(p.Lines)
}

// Run describes one execution of the program under PROFILE.
type Run struct {
	// ID identifies the run: random bytes PROFILE draws when the run
	// starts ([NewRunID]), so that a merge refuses a run the database
	// already holds ([ErrDuplicateRun]). Runs of files written before IDs
	// existed have none.
	ID Hex `json:",omitempty"`
	// Time is when the run started, in Unix seconds.
	Time int64
	// CommandLine is the program's command line as typed after PROFILE's
	// options.
	CommandLine string
	// Incomplete is set when the run did not end normally (the program
	// crashed or was killed, or PROFILE was interrupted); Reason says how.
	Incomplete bool
	Reason     string
}

// NewRunID returns a fresh [Run.ID]: 16 random bytes.
func NewRunID() Hex {
	id := make(Hex, 16)
	rand.Read(id) // never fails (crypto/rand)
	return id
}

// Stack is one distinct caller stack of a function (attribution, /AT).
type Stack struct {
	// Func indexes Plan.Funcs.
	Func int
	// Callers are the nearest profiled callers, outermost first, at most
	// two of them (the listings show them, as the original's); -1 stands
	// for the stack base ("no profiled caller").
	Callers []int
	// Key distinguishes stacks whose shown callers are equal but whose deeper
	// chain (up to /STACK levels) differs.
	Key uint64
	// CallerKey is the Key of the caller's own stack: the stack of the
	// call of Callers[len(Callers)-1] that this stack's first call was
	// made from. Going from stack to stack by CallerKey gives the whole
	// chain of callers, as far as /STACK tells stacks apart (the stacks
	// of a function are keyed by the callers that tell them apart, and a
	// caller's stack by one caller more: any call of the stack would give
	// the same chain to that depth). 0 when the nearest caller is the
	// stack base, and in files of format version 5 and older, which do
	// not record it.
	CallerKey uint64 `json:",omitempty"`
	Hits      uint64
	Time      int64
	ChildTime int64
	// Wait and ChildWait are the stack's share of [Stats.Waits], in
	// nanoseconds: the time its calls spent off a CPU in the function
	// itself, and with its children. Both are 0 when the runs did not
	// measure each call's time on a CPU (Stats.Waits nil).
	Wait      int64 `json:",omitempty"`
	ChildWait int64 `json:",omitempty"`
}

// Stats are the figures of one run or, summed, of several.
type Stats struct {
	// Hits has one count per item (Plan.Funcs or Plan.Lines).
	Hits []uint64
	// Branches has two counts per branch of Plan.Branches, in order: the
	// runs in which it went to its target, then those in which it went
	// on to the next instruction (line coverage: each run counts one
	// where it went that way at least once). Nil when the plan has no
	// branch.
	Branches []uint64 `json:",omitempty"`
	// Unprobed has one count per branch of Plan.Branches: the runs that
	// could not count it (no jump of PROFILE's fitted at the branch, and
	// it was left uncounted: warning PRF4687), whose ways in Branches are
	// 0 whatever it did. Nil when every run counted every branch.
	Unprobed []uint64 `json:",omitempty"`
	// FuncTime and ChildTime are per function in nanoseconds (timing and
	// sampling; nil otherwise): the time in the function itself, and with
	// its children. A sampling run estimates them from its samples.
	FuncTime  []int64
	ChildTime []int64
	// CallDepth is the deepest nesting of profiled functions (0 if unknown).
	CallDepth int
	// TotalTime and OutsideTime are in nanoseconds (timing and sampling).
	TotalTime   int64
	OutsideTime int64
	// Stacks are the caller stacks: the calls' (/AT), or the samples'
	// (function sampling without /AT: SamplingStats.Stacks), which have
	// times and no hits.
	Stacks []Stack
	// The figures of function sampling (zero and nil otherwise).
	Sampling SamplingStats `json:",omitzero"`
	// CostUncertainty is how far, in nanoseconds a call, the cost of
	// PROFILE's code taken out of each call's time may be from what it
	// cost (function timing with the books kept in the program; 0: not
	// stated): a function whose own time per call is below it is not
	// measured exactly, and the report says so. Of several runs, the
	// most.
	CostUncertainty int64 `json:",omitzero"`
	// CPUTime is the time, in nanoseconds, the program's threads spent
	// on a CPU during a function timing run, summed over its threads (0:
	// not measured). A thread whose time could not be read is left out,
	// so it is at most the threads' time. Far below TotalTime, the
	// threads mostly waited: the times are elapsed, waits included, and
	// the report says so. Of several runs, the sum, as TotalTime's.
	CPUTime int64 `json:",omitzero"`
	// Waits are the time each profiled call spent off a CPU (function
	// timing runs that measured it), nil when the run did not measure
	// each call's time on a CPU: a database holds them only when every
	// run merged into it measured them. Function and child times less
	// these waits are the times on a CPU that PLIST --time=cpu lists.
	Waits *WaitStats `json:",omitempty"`
}

// WaitStats are the time the calls of a function timing run spent off a
// CPU (waiting: sleeping, blocked, preempted), charged to the profiled
// calls open while the thread waited. Each wait figure is at most the
// time it is part of (PROFILE makes it so), so that a time less its wait
// is the time on a CPU. Of several runs, the sums.
type WaitStats struct {
	// FuncWait and ChildWait are per function (Plan.Funcs), in
	// nanoseconds: the time its calls spent off a CPU in the function
	// itself, and with its children (counted once per recursion, as
	// ChildTime is).
	FuncWait  []int64
	ChildWait []int64
	// InsideWait is the time off a CPU within the outermost profiled
	// calls, summed over threads: what TotalTime-OutsideTime holds of
	// waits.
	InsideWait int64
	// OutsideWait is the time off a CPU outside the outermost profiled
	// calls (what OutsideTime holds of waits): with InsideWait, what
	// the total time less the waits leaves is the threads' time on a CPU
	// as the total counts it, PROFILE's costs taken out.
	OutsideWait int64
}

// SamplingStats are the figures of function sampling runs.
type SamplingStats struct {
	// Interval is the sampling interval in nanoseconds of the thread's CPU
	// time: every run of a database has the same (PRF1463). 0 in a
	// database no run was merged into.
	Interval int64
	// Samples has the samples that fell in each function (Plan.Funcs), and
	// LineSamples those that fell in each line (Plan.Lines). Outside is
	// the number of samples in no profiled function.
	Samples     []uint64
	LineSamples []uint64
	Outside     uint64
	// Lost is the number of samples the kernel dropped (its buffer was
	// full), and KernelTime the CPU time the program's threads spent in
	// the kernel, in nanoseconds, which user-space samples do not see.
	Lost       uint64
	KernelTime int64
	// Sampler says how the samples were taken.
	Sampler Sampler
	// Overhead is the number of samples whose program counter was in
	// PROFILE's own code in the program (its trampolines' counting, its
	// slots): none of the program's functions, and left out of the times
	// (TotalTime is the program's samples alone).
	Overhead uint64 `json:",omitempty"`
	// Stacks is the number of samples whose call stack PROFILE unwound
	// (function sampling without /AT): Stats.Stacks are then the chains
	// of profiled functions the samples found, with their time and no
	// hits, and ChildTime each function's samples with it on the stack.
	// StacksCut is the number of those stacks whose unwinding stopped
	// before the stack's end: their outermost profiled function stands
	// at the stack base. Both are 0 where no stack was unwound.
	Stacks    uint64 `json:",omitempty"`
	StacksCut uint64 `json:",omitempty"`
	// KernelSamples has, where the runs sampled the kernel's code too
	// (nil where none did), the samples of each function taken while
	// the kernel ran for its own code (a system call it made, a fault of
	// its instructions): of Samples, those in the kernel.
	// KernelChildSamples has those with the function on the stack (its
	// own where no stack was unwound), and Kernel the samples taken in
	// the kernel in all, in functions or not. KernelTime is then the
	// kernel time of the runs that did not sample it.
	Kernel             uint64   `json:",omitempty"`
	KernelSamples      []uint64 `json:",omitempty"`
	KernelChildSamples []uint64 `json:",omitempty"`
}

// KernelSampled reports whether the runs sampled the kernel's code too
// (KernelSamples).
func (s *SamplingStats) KernelSampled() bool { return s.KernelSamples != nil }

// Sampler is how a sampling run took its samples.
type Sampler uint8

// The samplers.
const (
	NoSampler     Sampler = iota // no sampling run
	PerfSampler                  // the kernel's per-thread clock events
	PtraceSampler                // PROFILE stopping the threads in turn
	MixedSamplers                // a database holding runs of both
)

func (s Sampler) String() string {
	switch s {
	case NoSampler:
		return "none"
	case PerfSampler:
		return "perf events"
	case PtraceSampler:
		return "ptrace"
	case MixedSamplers:
		return "perf events and ptrace"
	}
	return fmt.Sprintf("sampler %d", uint8(s))
}

var samplerNames = []string{"", "perf", "ptrace", "mixed"}

// MarshalText implements [encoding.TextMarshaler]: "", "perf", "ptrace"
// or "mixed".
func (s Sampler) MarshalText() ([]byte, error) {
	if int(s) >= len(samplerNames) {
		return nil, fmt.Errorf("unknown sampler %d", uint8(s))
	}
	return []byte(samplerNames[s]), nil
}

// UnmarshalText implements [encoding.TextUnmarshaler].
func (s *Sampler) UnmarshalText(b []byte) error {
	for i, name := range samplerNames {
		if string(b) == name {
			*s = Sampler(i)
			return nil
		}
	}
	return fmt.Errorf("unknown sampler %q", b)
}

// Counts is the content of a .pbo: one run's figures for one plan.
type Counts struct {
	PlanID ID
	Method Method
	Run    Run
	// Overhead is the calibrated cost per event in nanoseconds (timing).
	Overhead int64
	Stats    Stats
}

// Merged is the content of a .pbt: the plan and the sum of its runs.
type Merged struct {
	Plan Plan
	// Runs are the merged runs in merge order; none for a fresh .pbt.
	Runs []Run
	// Overheads has the calibrated overhead of each run (for the average).
	Overheads []int64
	Stats     Stats
	// Discarded are the IDs of the runs that were merged into the
	// databases this one replaced, when phase I prepared the same plan
	// again ([Merged.Supersede]), and of the runs of the plan that
	// waited in .pbo files beside them, never merged (PREP phase I
	// discards those too): their counts were discarded with those
	// databases, and their .pbo files, still on disk, hold no run to merge
	// ([Merged.Pending]). Empty for a database whose plan is new.
	Discarded []Hex `json:",omitempty"`
}
