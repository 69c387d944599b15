package prf

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sourceprofiler/sprof/datafile"
)

// The catalogue. Every message has a number. Those of original.md §12 have
// the original's text ("not a portable executable file" said the Linux
// way) and the severity it printed. The messages this port added, for
// what the original never met, have numbers the original did not use, in
// the group of their neighbours: 1308, 1309 and 4305-4308 with the data
// files, 1402 with the programs PREP reads, 1445 and 1446 with PROFILE's
// start, 1483, 1484 and 4482 with PLIST's, 4623 and 4625 with debugging
// information, 1644
// to 1650 and 4643 to 4656 with PROFILE's run (1647 to 1650, which the
// other tools print too, were free there) (docs/linux.md lists them). No
// message is without a number: an error the catalogue does not cover is
// printed as PRF1001, the original's "unknown error" ([Unknown]).

// The command line. Every one is a usage diagnostic (exit status 2).

// MissingOptionSpecifier is PRF1101: a lone / or -.
func MissingOptionSpecifier() *Diagnostic { return usage(1101, "missing option specifier") }

// InvalidOption is PRF1102; word is the token without its first character
// (bogus for /bogus), or a long option whole.
func InvalidOption(word string) *Diagnostic { return usage(1102, "%s: invalid option", word) }

// AmbiguousOption is PRF1102 for a long option cut short to a prefix of
// several (--tra: --trace or --trace-limit); candidates are those options,
// written whole.
func AmbiguousOption(word string, candidates []string) *Diagnostic {
	d := usage(1102, "%s: invalid option", word)
	d.Err = fmt.Errorf("ambiguous option, could be %s", orList(candidates))
	return d
}

// orList joins words as "a, b or c".
func orList(words []string) string { return joinList(words, " or ") }

// andList joins words as "a, b and c".
func andList(words []string) string { return joinList(words, " and ") }

// joinList joins words with commas, and last before the last word.
func joinList(words []string, last string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + last + words[len(words)-1]
}

// MissingArgument is PRF1103 for the option named name (STACK, --stack).
func MissingArgument(name string) *Diagnostic {
	return usage(1103, "%s option requires an additional argument", name)
}

// NotNumeric is PRF1104.
func NotNumeric(name string) *Diagnostic {
	return usage(1104, "%s option requires a numeric parameter", name)
}

// RepeatedOption is PRF1105: the option was given more than max times.
func RepeatedOption(name string, max int) *Diagnostic {
	return usage(1105, "%s option specified more than %d times", name, max)
}

// MissingResponseFile is PRF1201: an @ without a name.
func MissingResponseFile() *Diagnostic { return usage(1201, "missing filename after @") }

// NestedResponseFiles is PRF1202.
func NestedResponseFiles() *Diagnostic { return usage(1202, "response files nested too deeply") }

// CannotOpenResponseFile is PRF1011 for a response file, a command-line
// error.
func CannotOpenResponseFile(name string, err error) *Diagnostic {
	d := CannotOpen(name, err)
	d.Usage = true
	return d
}

// NoInput is PRF1421: PREP phase I without a module.
func NoInput() *Diagnostic { return usage(1421, "no input specified") }

// TooManyModules is PRF1423.
func TooManyModules(max int) *Diagnostic { return usage(1423, "number of modules exceeds %d", max) }

// NoPBTOutput is PRF1461: PREP phase II without /OT (or /M).
func NoPBTOutput() *Diagnostic { return usage(1461, "no PBT output file specified") }

// NoPBTInput is PRF1462: PREP phase II without /IT (or /M).
func NoPBTInput() *Diagnostic { return usage(1462, "no PBT input file specified") }

// Files.

// CannotOpen is PRF1011. The cause keeps the system's reason ("no such file
// or directory") without repeating the path.
func CannotOpen(path string, err error) *Diagnostic {
	return newDiag(1011, Fatal, pathCause(err), "cannot open file %s", path)
}

// ToolsIniMissing is PRF1011 as a warning: $INIT names a directory without
// a tools.ini, as the original warned.
func ToolsIniMissing(path string) *Diagnostic {
	return newDiag(1011, Warning, nil, "cannot open file %s", path)
}

// CannotRead is PRF1012: a data file that is truncated, corrupted or
// malformed.
func CannotRead(path string, err error) *Diagnostic {
	return newDiag(1012, Fatal, err, "cannot read expected number of bytes from file %s", path)
}

// CannotWrite is PRF1013, with a hint for the causes a user can remove: a
// full file system or quota, a read-only one, a place the user may not
// write. A directory in which no file can be made ([datafile.DirError]:
// the data files are written through a temporary file beside them) is
// named as the cause, whatever wraps it. [OutputOption] adds to the hint
// the option that names another file.
func CannotWrite(path string, err error) *Diagnostic {
	var de *datafile.DirError
	if errors.As(err, &de) {
		err = de
	}
	d := newDiag(1013, Fatal, err, "cannot write expected number of bytes to file %s", path)
	d.Hint = writeHint(err, "")
	return d
}

// writeHint is the hint of PRF1013 for err, with the option that names
// another file when there is one ("" for none).
func writeHint(err error, option string) string {
	elsewhere := "run in a directory you can write, or name another file"
	if option != "" {
		elsewhere += " with " + option
	}
	var de *datafile.DirError
	var nr *datafile.NotRegularError
	switch {
	case errors.As(err, &nr):
		if option != "" {
			return "a data file is written as a regular file: name another with " + option
		}
		return "a data file is written as a regular file: name another"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "the file system is full, or your disk quota used up: make room, then run again"
	case errors.Is(err, syscall.EROFS):
		return "the file system is read-only: " + elsewhere
	case errors.Is(err, fs.ErrPermission) && errors.As(err, &de):
		return elsewhere // the message names the directory
	case errors.Is(err, fs.ErrPermission):
		return "you may not write there: " + elsewhere
	}
	return ""
}

// OutputOption returns err with the hint of a PRF1013 that says to name
// another file saying how: with option, the tool's option that names the
// file written ("/O", "/OI and /OT"). Other errors are returned as they
// are.
func OutputOption(err error, option string) error {
	var d *Diagnostic
	if errors.As(err, &d) && d.Code == 1013 && d.Hint != "" {
		if h := writeHint(d.Err, option); h != "" {
			d.Hint = h
		}
	}
	return err
}

// OutOfMemory is PRF1005: the system refused memory, to PROFILE or to the
// program PROFILE asked for some (counters, trampolines, slots).
func OutOfMemory(err error) *Diagnostic {
	d := newDiag(1005, Fatal, err, "operating system ran out of memory")
	d.Hint = "free memory, or raise the limits that refused it (ulimit -v for the program's address space, a cgroup's memory.max), then run again"
	return d
}

// Unknown is PRF1001, the original's "unknown error": an error the
// catalogue has no message of its own for, which is a fault of the tool's.
// [Write] prints every error without a number as Unknown, so that no fatal
// error is ever printed without one.
func Unknown(err error) *Diagnostic {
	d := newDiag(1001, Fatal, err, "unknown error")
	d.Hint = "this version has no better message for it: please report it, with the command line that caused it"
	return d
}

// NoWorkingDir is PRF1647: the tool cannot find its current directory,
// which names the data files and is the program's.
func NoWorkingDir(err error) *Diagnostic {
	d := newDiag(1647, Fatal, err, "cannot find the current directory")
	d.Hint = "it was removed, or a directory above it cannot be read: change to an existing directory and run again"
	return d
}

// BadSignature is PRF1301: the file is not a profiler data file.
func BadSignature(path string, err error) *Diagnostic {
	return newDiag(1301, Fatal, err, "file %s has an incorrect (old) signature", path)
}

// OldPBI is PRF1302: a .pbi of another version, or another kind of file
// where a .pbi was expected.
func OldPBI(path string, err error) *Diagnostic {
	return newDiag(1302, Fatal, err, "PBI file %s has an incorrect (old) version number", path)
}

// OldPBT is PRF1303: the same for a .pbt.
func OldPBT(path string, err error) *Diagnostic {
	return newDiag(1303, Fatal, err, "PBT file %s has an incorrect (old) version number", path)
}

// Conflicts is PRF1304: a run of another profile type, or with attribution
// data the plan did not ask for.
func Conflicts(path string, err error) *Diagnostic {
	return newDiag(1304, Fatal, err, "PBT or PBO file %s conflicts with current profiling state", path)
}

// NotSamePlan is PRF1306: a run of another PREP.
func NotSamePlan(path string, err error) *Diagnostic {
	d := newDiag(1306, Fatal, err, "PBT or PBO file %s is not derived from same PBI file", path)
	d.Hint = "the program was prepared again since that run: profile it again before merging"
	if ext := filepath.Ext(path); ext != ".pbo" && strings.HasSuffix(strings.TrimSuffix(path, ext), ".pbo") {
		// A numbered run file (prog.pbo.2) is PROFILE's, kept for
		// prep /M: profiling again writes another beside it.
		d.Hint = fmt.Sprintf("its run is of another preparation of the program, which prep /M cannot add: remove %s and merge again", path)
	}
	return d
}

// AlreadyMerged refuses a .pbo whose run the .pbt already holds: merging it
// again would count the run twice (the original did so silently).
func AlreadyMerged(pbo, pbt string) *Diagnostic {
	d := newDiag(1308, Fatal, nil, "the run in %s is already in %s", pbo, pbt)
	d.Hint = "each run is merged once; run profile again for another run"
	return d
}

// DiscardedRun refuses, in PREP /M, a .pbo whose run was merged into a
// .pbt that phase I then replaced: its counts were discarded with it, and
// it is not a run to merge. The hint says how to add it all the same.
func DiscardedRun(pbo, pbt string) *Diagnostic {
	d := newDiag(1309, Fatal, nil, "the run in %s was discarded when %s was prepared again: it is not merged", pbo, pbt)
	d.Hint = fmt.Sprintf("run profile again for a new run; to add this one all the same: prep /IT %s /IO %s /OT %s", pbt, pbo, pbt)
	return d
}

// NoPlan is PRF1011 for the .pbi PROFILE reads: prep has not prepared the
// program (or not under that name).
func NoPlan(pbi, program string, err error) *Diagnostic {
	d := CannotOpen(pbi, err)
	if errors.Is(err, fs.ErrNotExist) {
		d.Hint = fmt.Sprintf("%s is written by prep: run 'prep /FC %s' (or another profile type) first", pbi, program)
	}
	return d
}

// NoTrace is PRF1011 for the execution trace PLIST reads (/TRACE,
// --format=chrome): only a run of profile /TRACE writes one, which the
// hint says, or, for a line profile (lines: its trace is of no calls),
// that a trace needs a function profile. program is the base name of
// the files.
func NoTrace(pbx, program string, lines bool, err error) *Diagnostic {
	d := CannotOpen(pbx, err)
	switch {
	case !errors.Is(err, fs.ErrNotExist):
	case lines:
		d.Hint = fmt.Sprintf("an execution trace is of function calls, and this is a line profile: prepare a function profile (prep /FT %s), then run the program with 'profile /TRACE %s ...' and 'prep /M %s'", program, program, program)
	default:
		d.Hint = fmt.Sprintf("%s is written by profile /TRACE: run the program with 'profile /TRACE %s ...', then 'prep /M %s'", pbx, program, program)
	}
	return d
}

// NotSampling is PRF1483: PLIST --format=gmon of a profile that has no
// samples, which gmon.out holds; method is the profile's type in words.
func NotSampling(pbt, method string) *Diagnostic {
	d := newDiag(1483, Fatal, nil, "--format=gmon needs a function sampling profile, and %s is a %s profile", pbt, method)
	d.Hint = "gmon.out holds sampled time: prepare the program for function sampling (prep /FS), profile it and merge, then write gmon.out; --format=callgrind or pprof take any profile"
	return d
}

// DataFile gives an error of datafile's Open and Save functions its number:
// PRF1011 when the file cannot be opened, PRF1301 when it is not a profiler
// file, PRF1302 or PRF1303 when a .pbi or .pbt is of another version or
// kind, PRF1013 when it cannot be written, PRF1012 for everything else (a
// .pbo of another kind included: the original had no message for it).
// Other errors are returned as they are.
func DataFile(err error) error {
	var fe *datafile.FileError
	if !errors.As(err, &fe) {
		return err
	}
	switch {
	case fe.Op == datafile.OpOpen:
		return CannotOpen(fe.Path, fe.Err)
	case fe.Op == datafile.OpWrite:
		return CannotWrite(fe.Path, fe.Err)
	case errors.Is(fe.Err, datafile.ErrSignature):
		return BadSignature(fe.Path, fe.Err)
	case errors.Is(fe.Err, datafile.ErrVersion), errors.Is(fe.Err, datafile.ErrKind):
		switch fe.Kind {
		case datafile.KindPlan:
			return OldPBI(fe.Path, fe.Err)
		case datafile.KindMerged:
			return OldPBT(fe.Path, fe.Err)
		}
	}
	return CannotRead(fe.Path, fe.Err)
}

// Merge gives an error of [datafile.Merged.Add] its number, naming the
// .pbo added (pbo) to the database (pbt).
func Merge(err error, pbo, pbt string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, datafile.ErrNotSamePlan):
		return NotSamePlan(pbo, err)
	case errors.Is(err, datafile.ErrConflict):
		return Conflicts(pbo, err)
	case errors.Is(err, datafile.ErrInterval):
		return OtherInterval(pbo, pbt, err)
	case errors.Is(err, datafile.ErrDuplicateRun):
		return AlreadyMerged(pbo, pbt)
	case errors.Is(err, datafile.ErrOverflow):
		return SumOverflow(pbo, pbt, err)
	}
	return Unknown(fmt.Errorf("merge %s: %w", pbo, err))
}

// OtherInterval is PRF1463: a sampling run taken at another interval than
// the runs the database holds.
func OtherInterval(pbo, pbt string, err error) *Diagnostic {
	d := newDiag(1463, Fatal, err, "%s: different clock/sampling frequency", pbo)
	d.Hint = fmt.Sprintf("profile again with the interval of the runs in %s (profile /S), or merge into another database", pbt)
	return d
}

// UncountedNeedsSampling is PRF1466: prep --no-call-counts with a
// profile type other than function sampling, or with /SF or /AT, which
// need every call.
func UncountedNeedsSampling() *Diagnostic {
	return usage(1466, "--no-call-counts needs function sampling (/FS), without /SF or /AT")
}

// BadInterval is PRF1464: PROFILE's /S outside the intervals it samples
// at.
func BadInterval(us, lo, hi int) *Diagnostic {
	return newDiag(1464, Fatal, nil, "sampling interval of %d microseconds: PROFILE samples every %d to %d microseconds", us, lo, hi)
}

// SumOverflow is PRF1650: the counts of a .pbo added to a .pbt would not
// fit (more than 2^64 hits, or 292 years of time).
func SumOverflow(pbo, pbt string, err error) *Diagnostic {
	d := newDiag(1650, Fatal, err, "the counts of %s cannot be added to %s", pbo, pbt)
	d.Hint = fmt.Sprintf("%s holds too much to add more: merge into another database (prep /IT %s /IO %s /OT OTHER), or prepare the program again for an empty one", pbt, pbt, pbo)
	return d
}

// Programs and selection (PREP).

// NotELF is PRF1401 (the original's "not a portable executable file").
func NotELF(path string) *Diagnostic {
	return newDiag(1401, Fatal, nil, "%s: not an ELF executable or shared library", path)
}

// UnsupportedArch is PRF1402: a program of an architecture the profiler
// does not know (a 32-bit one, say).
func UnsupportedArch(path, arch string) *Diagnostic {
	d := newDiag(1402, Fatal, nil, "%s: %s programs cannot be profiled", path, arch)
	d.Hint = "the profiler runs amd64 (x86-64) and arm64 programs"
	return d
}

// OtherCPU is PRF1307: the modules are not of one architecture.
func OtherCPU(path string) *Diagnostic {
	return newDiag(1307, Fatal, nil, "CPU type of module %s is different from initial one", path)
}

// SpecSyntax is PRF1422.
func SpecSyntax(text string) *Diagnostic {
	return newDiag(1422, Fatal, nil, "syntax error in /EXC or /INC specification: %s", text)
}

// NoFunctions is PRF1521: the selection left nothing to profile.
func NoFunctions(module string) *Diagnostic {
	return newDiag(1521, Fatal, nil, "no functions marked for profiling in module %s", module)
}

// Stripped is PRF1521 for a module that has neither debugging information
// nor a symbol table, with where they can come from. buildID is the
// module's GNU build ID in hexadecimal, or empty.
func Stripped(module, buildID string) *Diagnostic {
	d := NoFunctions(module)
	d.Err = errors.New("it has no debugging information and no symbol table (stripped)")
	d.Hint = debugInfoHint(module, buildID)
	return d
}

// debugInfoHint says where the debugging information of a stripped
// module can come from.
func debugInfoHint(module, buildID string) string {
	where := []string{
		"its -dbgsym (or -dbg) package, which installs them under /usr/lib/debug",
		fmt.Sprintf("a %s.debug file beside it or in %s, named by its .gnu_debuglink",
			filepath.Base(module), filepath.Join(filepath.Dir(module), ".debug")),
	}
	if len(buildID) > 2 {
		where = append(where, fmt.Sprintf("/usr/lib/debug/.build-id/%s/%s.debug (its build ID)", buildID[:2], buildID[2:]))
	}
	where = append(where, "or a build without strip (-g keeps the line numbers too)")
	return "debugging information can come from " + strings.Join(where, "; ")
}

// TwoStartFunctions is PRF1522.
func TwoStartFunctions(a, b string) *Diagnostic {
	return newDiag(1522, Fatal, nil, "more than one function matched entry specification: %s and %s", a, b)
}

// BadIni is PRF1648: a profiler.ini or tools.ini that cannot be read or is
// malformed (its line is in the cause). A malformed specification in it is
// PRF1422, as on the command line.
func BadIni(name string, err error) *Diagnostic {
	d := newDiag(1648, Fatal, err, "cannot read the selections of %s", name)
	d.Hint = "its [profiler] section holds lines 'exclude:SPEC' and 'include:SPEC', and comments starting with ';' or '#' (docs/linux.md, \"Selection\")"
	return d
}

// BadDebugInfo is PRF1649: a program whose ELF file or debugging
// information PREP cannot read (damaged, or in a form it does not know),
// beyond what it can work around with a warning.
func BadDebugInfo(module string, err error) *Diagnostic {
	d := newDiag(1649, Fatal, err, "cannot read the debugging information of %s", module)
	d.Hint = "the file, or its separate debug file, is damaged or in a form prep does not read: rebuild it; a function profile (/FC) reads no line tables"
	return d
}

// didYouMean is the hint that suggests the names near one typed, or "" for
// none.
func didYouMean(near []string) string {
	if len(near) == 0 {
		return ""
	}
	return "did you mean " + orList(near) + "?"
}

// NoLines is PRF1622: the selection left no source line to profile.
func NoLines(module string) *Diagnostic {
	return newDiag(1622, Fatal, nil, "no source lines marked for profiling in module %s", module)
}

// NoDebugInfo is PRF1621: a line profile of a module without line
// tables.
func NoDebugInfo(module string) *Diagnostic {
	d := newDiag(1621, Fatal, nil, "no debugging information in file %s", module)
	d.Hint = "line profiles need the module built with -g, or its debugging information beside it"
	return d
}

// Runs (PROFILE).

// ProgramChanged is PRF1442: the program is not the file PREP read (its
// build ID, size or modification time differ).
func ProgramChanged(path, pbi string) *Diagnostic {
	d := newDiag(1442, Fatal, nil, "timestamp of executable file has changed since PREP was run")
	d.Hint = fmt.Sprintf("%s was rebuilt or replaced since prep read it: run prep again to write a new %s", path, pbi)
	return d
}

// TraceFailed is PRF1644: PROFILE failed while tracing the program, for a
// cause the catalogue has no message of its own for. The cause names the
// step ("plant breakpoints: ...", "read memory map: ...").
func TraceFailed(program string, err error) *Diagnostic {
	d := newDiag(1644, Fatal, err, "cannot profile %s", program)
	d.Hint = "the program was stopped and no run was written; this is a failure of PROFILE's, not the program's: please report it, with the command line (profile --breakpoints may get around it)"
	return d
}

// CannotAttach is PRF1651: PROFILE cannot attach to the running process
// pid (profile --pid): it is gone, not the user's, or a ptrace policy
// denies it. The process is left as it was.
func CannotAttach(pid int, err error) *Diagnostic {
	d := newDiag(1651, Fatal, err, "cannot attach to process %d", pid)
	d.Hint = "the process must exist and be yours, and not be traced already (by gdb, strace or another PROFILE); kernel.yama.ptrace_scope 1, Debian's default, lets only a parent trace: run profile as root, or set it to 0 (docs/linux.md, \"Attaching to a running process\")"
	return d
}

// AttachFiltered is PRF1651 for a process whose main thread runs under a
// seccomp filter of its own that PROFILE cannot suspend: the system calls
// of the set-up might kill it. Nothing was planted; the process is left
// as it was.
func AttachFiltered(pid int, err error) *Diagnostic {
	d := newDiag(1651, Fatal, err, "cannot attach to process %d", pid)
	d.Hint = "suspending a seccomp filter for PROFILE's own calls needs CAP_SYS_ADMIN, and PROFILE under no filter of its own: run profile as root, or profile the program from its start (docs/linux.md, \"Attaching to a running process\")"
	return d
}

// ProcessDenied is PRF1645: Linux denied PROFILE the files of the
// program's process (/proc/PID/maps, /proc/PID/mem) or a ptrace request.
func ProcessDenied(program string, err error) *Diagnostic {
	d := newDiag(1645, Fatal, err, "cannot profile %s: access to its process was denied", program)
	d.Hint = "a program that makes itself non-dumpable (prctl(PR_SET_DUMPABLE, 0), as ssh-agent and gpg-agent do) or takes other credentials (set-user-ID) closes its /proc files to a tracer without CAP_SYS_PTRACE, and a ptrace policy (kernel.yama.ptrace_scope, a security module) can deny them too: run profile as root, or profile a build that stays dumpable (docs/linux.md)"
	return d
}

// ProcessLost is PRF1646: the program's process went away, or stopped
// being PROFILE's, while PROFILE held it.
func ProcessLost(program string, err error) *Diagnostic {
	d := newDiag(1646, Fatal, err, "cannot profile %s: its process is gone or no longer traced", program)
	d.Hint = "it was killed from outside (SIGKILL, the OOM killer) or taken by another tracer while PROFILE held it; no run was written: run it again"
	return d
}

// CannotRun is PRF1443.
func CannotRun(path string, err error) *Diagnostic {
	return newDiag(1443, Fatal, err, "cannot run program %s", path)
}

// Incomplete is PRF1643: the run did not finish; what was counted is
// written all the same. With PROFILE /X it is a warning ([Diagnostic.AsWarning]).
func Incomplete(reason, pbo string) *Diagnostic {
	return newDiag(1643, Fatal, nil, "%s; the counts written to %s are incomplete", reason, pbo)
}

// OtherArch refuses a program of another architecture than PROFILE's.
func OtherArch(program, host string) *Diagnostic {
	return newDiag(1445, Fatal, nil, "cannot profile an %s program on %s", program, host)
}

// CannotTrace is a system that does not let PROFILE trace programs.
func CannotTrace(system string, err error) *Diagnostic {
	return newDiag(1446, Fatal, err, "cannot trace programs on %s", system)
}

// aside is ", what", or "" for no what.
func aside(what string) string {
	if what == "" {
		return ""
	}
	return ", " + what
}

// NotMapped is PRF1660: the program's file is not in the memory map of
// the process that runs it (another file at its path, or a file system
// that names it otherwise).
func NotMapped(path string, pid int) *Diagnostic {
	d := newDiag(1660, Fatal, nil, "%s is not mapped in process %d", path, pid)
	d.Hint = "the file at that path changed as the program started, or the process maps it under another name: profile the file itself"
	return d
}

// Reports (PLIST).

// SortMismatch is PRF1481, a warning as the original printed it: the sort
// does not fit the profile type, whose default is used.
func SortMismatch(path string) *Diagnostic {
	return newDiag(1481, Warning, nil, "%s inconsistent with sorting type", path)
}

// pathCause drops the *fs.PathError around an error, whose operation and
// path the message already says: "cannot open file x: no such file or
// directory".
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// TraceOtherPlan is PRF1306 for a trace (PLIST /TRACE): a run of another
// PREP than the .pbt's.
func TraceOtherPlan(pbx, pbt string) *Diagnostic {
	d := newDiag(1306, Fatal, nil, "PBT or PBO file %s is not derived from same PBI file", pbx)
	d.Hint = "the trace is of a run of another preparation than " + pbt + "'s: profile the program again with /TRACE"
	return d
}
