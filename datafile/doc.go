// Package datafile owns the data files of the profiler and nothing else:
// the plan (.pbi) that PREP writes and PROFILE reads, the counts of one run
// (.pbo) that PROFILE writes, and the merged database (.pbt) that PREP /M
// writes and PLIST reads; and the execution trace (.pbx) that PROFILE
// /TRACE writes as the run goes and PLIST /TRACE reads (trace.go, whose
// layout is its own).
//
// The model is independent of ELF and DWARF: a [Plan] names modules by their
// identity and functions by their link-time addresses, so PROFILE needs nothing
// else to run a program. This package imports nothing of the project: it is
// the project's public API, for programs that read or write profiles. The
// file helpers ([OpenPlan], [SaveMerged], ...) return [*FileError]s, and
// [Merged.Add] sentinel errors; the commands give them the original's PRF
// numbers (internal/prf).
//
// # Binary layout, format version 14
//
// This section is normative; docs/formats.md mirrors it. Any change of the
// layout bumps [Version]. All integers are little-endian.
//
// A file is a header, a body and a checksum:
//
//	offset  size  field
//	0       10    signature, the ASCII bytes "MS-PROF/KR" (the tag found in
//	              the original's binaries)
//	10      2     format version, u16: 10 (3 to 9 are read too: below)
//	12      1     kind, u8: 1 plan (.pbi), 2 counts (.pbo), 3 merged (.pbt)
//	13      1     flags, u8: reserved, 0
//	14      8     body length N, u64, at most 1 GiB
//	22      N     body
//	22+N    4     CRC-32C (Castagnoli) of the header and the body, u32
//
// A reader checks, in this order, the signature ([ErrSignature]; a file
// shorter than the signature whose bytes match its beginning, an empty file
// included, is [ErrTruncated]), the version ([ErrVersion]), the kind
// ([ErrKind] for another valid kind when one kind is expected, a
// [*FormatError] for an unknown one), the flags and the body length (a
// [*FormatError]), that N+4 more bytes follow ([ErrTruncated]) and the
// checksum ([ErrChecksum]). Only then is the body decoded: malformed content
// is a [*FormatError] carrying its file offset, and content that decodes but
// is inconsistent fails the Validate method of its type. A reader reads
// exactly the file and nothing after it; the Open helpers also refuse
// trailing bytes.
//
// The body is a fixed sequence of sections, each
//
//	id      u8
//	length  uvarint
//	payload length bytes
//
// with these ids, in this order, each exactly once, and no other:
//
//	plan (.pbi)     1 strings, 2 plan, 3 modules, 4 funcs, 5 lines
//	counts (.pbo)   1 strings, 6 counts, 7 runs, 8 stats
//	merged (.pbt)   1 strings, 2 plan, 3 modules, 4 funcs, 5 lines, 7 runs, 8 stats,
//	                9 discarded
//
// A payload must be consumed exactly. Inside payloads:
//
//	uvarint   unsigned LEB128 as encoding/binary writes it, at most 64 bits
//	varint    zig-zag signed LEB128 (binary.PutVarint)
//	bool      u8, 0 or 1
//	str       uvarint index into the string table (section 1)
//	bytes     uvarint length, then that many bytes
//	list(T)   uvarint count, then count elements of T
//	id        16 bytes, a plan [ID]
//
// Every count and length read is checked against the bytes remaining in its
// section before anything is allocated, so memory stays proportional to the
// input and every loop is bounded by it. Int fields (indexes, line numbers,
// depths) are uvarints that must fit an int; the remaining checks are those of
// the Validate methods, which every reader runs.
//
// The sections:
//
//	1 strings   list(uvarint length, bytes): every string of the file, once,
//	            in order of first use by the writer (UTF-8 by convention;
//	            the reader does not check it)
//	2 plan      id ID, uvarint Method, str StartFunc, varint StartIndex,
//	            bool Attribution, uvarint StackDepth, varint Calibration,
//	            list(str What, uvarint Funcs, str Include) LeftOut,
//	            bool Uncounted
//	3 modules   list(str Name, str Path, str Arch, bytes BuildID, varint Size,
//	            varint ModTime, bool PIE, uvarint LinkBase, list(str) Files,
//	            list(str) CompDirs)
//	4 funcs     list(uvarint Module, str Name, str Source, uvarint Entry,
//	            uvarint Low, uvarint High, uvarint Frame, str File,
//	            uvarint Line),
//	            then list(uvarint Func, varint Parent, list(uvarint Low,
//	            uvarint High) Ranges) Inlined
//	5 lines     list(uvarint Module, uvarint File, uvarint Line,
//	            list(uvarint) Addrs),
//	            then list(uvarint Line, uvarint Addr, uvarint Target) Branches
//	6 counts    id PlanID, uvarint Method
//	7 runs      list(varint Time, str CommandLine, bool Incomplete, str Reason,
//	            bytes ID, varint Overhead): exactly one run in a .pbo (Counts.Run and
//	            Counts.Overhead), any number in a .pbt (Merged.Runs and
//	            Merged.Overheads, pairwise)
//	8 stats     uvarint CallDepth, varint TotalTime, varint OutsideTime,
//	            list(uvarint) Hits, list(varint) FuncTime,
//	            list(varint) ChildTime, list(uvarint Func, list(varint) Callers,
//	            uvarint Key, uvarint CallerKey, uvarint Hits, varint Time,
//	            varint ChildTime) Stacks,
//	            then the sampling figures (Stats.Sampling): varint Interval,
//	            uvarint Sampler (0 none, 1 perf events, 2 ptrace, 3 both), uvarint Outside, uvarint Lost, varint KernelTime,
//	            list(uvarint) Samples, list(uvarint) LineSamples,
//	            then varint CostUncertainty, varint CPUTime,
//	            then bool Waits measured (Stats.Waits not nil) and, only
//	            when it is 1, list(varint) FuncWait, list(varint) ChildWait,
//	            varint InsideWait, varint OutsideWait, list(varint Wait, varint ChildWait):
//	            the waits of the stacks, one per stack in the order of
//	            Stacks (its count must be theirs),
//	            then uvarint Overhead (Stats.Sampling),
//	            then uvarint Stacks, uvarint StacksCut (Stats.Sampling),
//	            then uvarint Kernel, list(uvarint) KernelSamples,
//	            list(uvarint) KernelChildSamples (Stats.Sampling),
//	            then list(uvarint) Branches, list(uvarint) Unprobed
//	9 discarded list(bytes ID): Merged.Discarded, the IDs of the runs of
//	            the databases phase I replaced with this one, and of the
//	            runs that waited beside them, never merged (none empty)
//
// Empty lists and byte strings read back as nil. The writer is canonical:
// equal values give equal bytes.
//
// # Older versions
//
// The writer writes version 15; the readers also read versions 14 to 3
// ([MinVersion]). Version 14 is version 15 but for sections 5 and 8,
// which end after the lines and after KernelChildSamples: its plans and
// runs have no branch (Branches read as nil). Version 13 is version 14
// but for section 4, which ends
// after the functions: its plans name no inlined call (Inlined reads as
// nil). Version 12 is version 13 but for section 8, which ends
// after StacksCut: its runs sampled no kernel code (Kernel and its lists
// read as 0 and nil). Version 11 is version 12 but for section 8, which
// ends after Overhead: its runs unwound no stack (Stacks and StacksCut
// read as 0). Version 10 is version 11 but for
// section 2, which ends after LeftOut (its plans count every call), and
// section 8, which ends after the waits (its runs place no sample in
// PROFILE's code: such samples were their functions'). Version 9 is
// version 10 but for section 8, which ends after CPUTime: its runs did not measure each call's time
// on a CPU (Stats.Waits reads as nil, the stacks' waits as 0). Version 8
// is version 9 but for section 8, which ends after CostUncertainty: its
// runs do not state their threads' time on a CPU (CPUTime reads as 0).
// Version 7 is version 8 but for section 8, which ends after the sampling
// figures: its runs state no cost uncertainty (it reads as 0). Version 6
// is version 7 but for section 2, which ends after Calibration: its plans
// say nothing of what the default selection left out. Version 5's stacks
// have no CallerKey (it reads as 0: the chain of callers beyond the two
// shown is not known). Version 4 is version 5 but for section 8, which
// ends after the stacks: its files hold no sampling figures. Version 3 is
// version 4 but for the .pbt, which ends after section 8: a database of
// version 3 has no discarded runs.
// Other versions are [ErrVersion].
//
// # Text form
//
// [WriteText] and [ReadText] give a canonical JSON form of the same values,
// for inspection and for the goldens of the report tests (see text.go).
//
// # Merging
//
// [NewMerged] starts a database from a plan and [Merged.Add] adds one run's
// counts to it; see [Merged.Add] for the contract. [Merged.Supersede]
// passes the runs of a database phase I replaces on to the new one, and
// [Merged.Pending] says whether a run is one the database can take and
// never took.
package datafile
