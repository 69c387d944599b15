package prf

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
)

// The catalogue. Every message has a number. Those of original.md §12 have
// the original's text ("not a portable executable file" said the Linux
// way) and the severity it printed. The messages this port added, for
// what the original never met, have numbers the original did not use, in
// the group of their neighbours: 1308, 1309 and 4305-4308 with the data
// files, 1402 with the programs PREP reads, 1445 and 1446 with PROFILE's
// start, 1483 and 4482 with PLIST's, 4623 and 4625 with debugging
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

// Overrides is warning PRF4101: a second /SF, or a second PLIST sort.
func Overrides(name string) *Diagnostic {
	return newDiag(4101, Warning, nil, "option %s overrides an earlier option", name)
}

// NoErrorFile is warning PRF4111: PROFILE /A without /E.
func NoErrorFile() *Diagnostic {
	return newDiag(4111, Warning, nil, "no error file (/E) specified for /A option")
}

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

// IncompleteRun warns that a merged .pbo holds a run that did not finish.
func IncompleteRun(path, reason string) *Diagnostic {
	if reason == "" {
		reason = "reason unknown"
	}
	return newDiag(4305, Warning, nil, "%s holds an incomplete run (%s): its counts stop where the run stopped", path, reason)
}

// RunsDiscarded warns that PREP phase I replaced a database holding runs.
func RunsDiscarded(pbt string, runs int) *Diagnostic {
	what := fmt.Sprintf("%d runs; they are", runs)
	if runs == 1 {
		what = "1 run; it is"
	}
	d := newDiag(4306, Warning, nil, "%s held %s discarded and the new %s is empty", pbt, what, filepath.Base(pbt))
	d.Hint = "to keep runs, copy the .pbt before preparing the program again"
	return d
}

// RunFilesCleared warns that PREP phase I discarded the runs waiting to
// be merged in the run files cleared (prog.pbo, prog.pbo.N), of the
// database pbt it replaced, and removed the numbered files among them
// (removed): PROFILE wrote those only to keep a run for prep /M.
func RunFilesCleared(cleared, removed []string, pbt string) *Diagnostic {
	what, verb := "runs", "they are"
	if len(cleared) == 1 {
		what, verb = "a run", "it is"
	}
	d := newDiag(4308, Warning, nil, "%s held %s of the earlier preparation, not merged into %s: %s discarded with it",
		andList(cleared), what, pbt, verb)
	switch {
	case len(removed) == 0:
	case len(removed) == len(cleared) && len(removed) == 1:
		d.Text += ", and the file removed"
	case len(removed) == len(cleared):
		d.Text += ", and the files removed"
	default:
		d.Text += ", and " + andList(removed) + " removed"
	}
	d.Hint = fmt.Sprintf("to keep runs, merge them (prep /M %s) before preparing the program again", strings.TrimSuffix(pbt, filepath.Ext(pbt)))
	return d
}

// MergeMissing warns PLIST that the runs of .pbo files are not in the
// .pbt it lists.
func MergeMissing(pbos []string, pbt, merge string) *Diagnostic {
	d := newDiag(4482, Warning, nil, "%s holds a run that %s does not: this report leaves it out", pbos[0], pbt)
	if len(pbos) > 1 {
		d.Text = fmt.Sprintf("%s hold runs that %s does not: this report leaves them out", strings.Join(pbos, ", "), pbt)
	}
	d.Hint = fmt.Sprintf("run '%s' to add them", merge)
	if len(pbos) == 1 {
		d.Hint = fmt.Sprintf("run '%s' to add it", merge)
	}
	return d
}

// RunKept warns that PROFILE wrote its run beside pbo, which holds a run
// not merged yet.
func RunKept(pbo, written, base string) *Diagnostic {
	d := newDiag(4307, Warning, nil, "%s holds a run not merged yet: this run is written to %s", pbo, written)
	d.Hint = fmt.Sprintf("'prep /M %s' merges both", base)
	if !strings.HasSuffix(written, ".pbo.2") {
		d.Hint = fmt.Sprintf("'prep /M %s' merges them all", base)
	}
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

// BadInterval is PRF1464: PROFILE's /S outside the intervals it samples
// at.
func BadInterval(us, lo, hi int) *Diagnostic {
	return newDiag(1464, Fatal, nil, "sampling interval of %d microseconds: PROFILE samples every %d to %d microseconds", us, lo, hi)
}

// PtraceSampler warns, once, that the kernel refused its clock events
// (perf_event_open): PROFILE samples by stopping every thread in turn.
func PtraceSampler(err error, every time.Duration) *Diagnostic {
	d := newDiag(4675, Warning, err, "cannot sample with the kernel's clock events: PROFILE stops each thread every %v to read its program counter", every)
	d.Hint = "this costs each running thread some 50 to 100 microseconds per sample, and a thread's samples are taken at its stops, weighed by the CPU time it used since the last one; allow perf_event_open (perf_event_paranoid at most 2, no seccomp filter refusing it) for cheaper and finer samples"
	return d
}

// LostSamples warns that the kernel dropped samples: its buffer was full
// before PROFILE read it.
func LostSamples(lost, taken uint64) *Diagnostic {
	return newDiag(4676, Warning, nil, "%d samples were lost (the kernel's buffer was full), %d were taken: the times are estimated from fewer samples", lost, taken)
}

// GmonLibraries warns that gmon.out leaves out the functions of the
// shared libraries libs: gprof reads the program's own only.
func GmonLibraries(libs string) *Diagnostic {
	d := newDiag(4483, Warning, nil, "gmon.out leaves out the functions of %s: gprof reads the program's own functions only", libs)
	d.Hint = "plist's listing and --format=pprof show them"
	return d
}

// GmonNoCallers warns that a gmon.out of a profile without /AT has no
// arcs: gprof counts no calls.
func GmonNoCallers() *Diagnostic {
	d := newDiag(4484, Warning, nil, "gmon.out has no callers without /AT: gprof shows every function <spontaneous> and counts no calls")
	d.Hint = "prepare with prep /FS /AT for gprof's call graph and calls column; plist's listing has the exact calls"
	return d
}

// UnsampledThreads warns that n threads were not sampled: the kernel
// refused their clock events after it had given the main thread one.
func UnsampledThreads(n int, err error) *Diagnostic {
	d := newDiag(4678, Warning, err, "%d threads were not sampled: the kernel refused their clock events", n)
	d.Hint = "each sampled thread takes a ring of the kernel's locked memory: raise RLIMIT_MEMLOCK (ulimit -l) or perf_event_mlock_kb, or sample less often (profile /S)"
	return d
}

// SamplesUnreadable warns that a thread's samples could no longer be
// read: its ring held a record the reader does not take.
func SamplesUnreadable(err error) *Diagnostic {
	return newDiag(4679, Warning, err, "the samples of a thread could not be read to the end: its later samples are missing")
}

// IntervalIgnored warns that /S was given for a profile that does not
// sample.
func IntervalIgnored(method string) *Diagnostic {
	return newDiag(4677, Warning, nil, "/S ignored: the sampling interval applies to function sampling (prep /FS), not to %s", method)
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

// ExportsOnly warns that a module has neither debugging information nor
// a symbol table, but exports functions (a stripped program that exports
// a few, such as /usr/bin/sort, or a stripped library): only those n are
// profiled, and the calls its code makes inside itself are not seen.
// The hint is Stripped's.
func ExportsOnly(module, buildID string, n int) *Diagnostic {
	what := fmt.Sprintf("the %d functions it exports are", n)
	if n == 1 {
		what = "the one function it exports is"
	}
	d := newDiag(4625, Warning, nil, "%s has no debugging information and no symbol table (stripped): only %s known, and the rest of its code is not profiled", module, what)
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

// NeverMatched is warning PRF4106; near are the names of the program near
// the one typed, which the hint suggests ("did you mean is_prime?").
func NeverMatched(spec string, near []string) *Diagnostic {
	d := newDiag(4106, Warning, nil, "function/source/object/lib %s was never matched", spec)
	d.Hint = didYouMean(near)
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

// StartIgnored is warning PRF4107: /SF with a line or sampling profile.
func StartIgnored() *Diagnostic {
	return newDiag(4107, Warning, nil, "/SF option not valid for line-level or sample profiles")
}

// StartNotFound is warning PRF4524: nothing will be counted. near are the
// names of the plan near name, which the hint suggests.
func StartNotFound(name string, near []string) *Diagnostic {
	d := newDiag(4524, Warning, nil, "entry function %s not found", name)
	d.Hint = didYouMean(near)
	return d
}

// CannotProfileFunction is warning PRF4525: the function's site cannot take
// a breakpoint (it does not decode, or is a trap).
func CannotProfileFunction(fn, file string, err error) *Diagnostic {
	return newDiag(4525, Warning, err, "cannot profile function %s in file %s", fn, file)
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

// CannotProfileLine is warning PRF4624: an address of a line's statement
// rows cannot take a breakpoint (not on an instruction boundary).
func CannotProfileLine(line int, file, module string, err error) *Diagnostic {
	return newDiag(4624, Warning, err, "cannot profile line %d of %s in file %s", line, file, module)
}

// DebugInfo passes on a warning of the ELF and DWARF reader, which says
// what it could not read and what it did instead.
func DebugInfo(text string) *Diagnostic { return newDiag(4623, Warning, nil, "%s", text) }

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

// NotInPlan is warning PRF4541: the program is not a module of the .pbi;
// it runs unprofiled.
func NotInPlan(path, pbi string) *Diagnostic {
	return newDiag(4541, Warning, nil, "%s not found in PBI file %s", path, pbi)
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

// NoSlots warns that PROFILE found no memory for relocated instructions:
// the functions whose first instruction needs one are not counted.
func NoSlots(err error) *Diagnostic {
	return newDiag(4644, Warning, err, "no out-of-line slots: instructions that need one are not profiled")
}

// OwnTraps warns that the program uses SIGTRAP itself while breakpoints
// were hit: where a thread blocks or ignores SIGTRAP, Linux unblocks it and
// resets its handler when the thread hits a breakpoint (a trap signal is
// forced), so the program's own SIGTRAP may behave otherwise than natively.
func OwnTraps() *Diagnostic {
	d := newDiag(4645, Warning, nil, "the program uses SIGTRAP itself: a breakpoint hit where it blocks or ignores SIGTRAP resets that to the default")
	d.Hint = "see docs/linux.md, \"Signals\", for what breakpoints can change"
	return d
}

// BreakpointEntries warns that some function entries could not be
// patched in-process and are counted with breakpoints, a stop each; why,
// by reason ("too short: 2, branch into: 1").
func BreakpointEntries(n, total int, reasons string) *Diagnostic {
	d := newDiag(4646, Warning, nil, "%d of %d function entries are counted with breakpoints, a stop per call (%s)", n, total, reasons)
	d.Hint = "profile --verbose lists them"
	return d
}

// EntryNotPatched is one entry counted with a breakpoint, listed by
// profile --verbose.
func EntryNotPatched(fn, file string, err error) *Diagnostic {
	return newDiag(4647, Warning, err, "function %s in file %s is counted with a breakpoint", fn, file)
}

// BreakpointLines warns that some line sites could not be patched
// in-process and are counted with breakpoints, a stop each; why, by
// reason.
func BreakpointLines(n, total int, reasons string) *Diagnostic {
	d := newDiag(4673, Warning, nil, "%d of %d line sites are counted with breakpoints, a stop per pass (%s)", n, total, reasons)
	d.Hint = "profile --verbose lists them"
	return d
}

// LineNotPatched is one line site counted with a breakpoint, listed by
// profile --verbose.
func LineNotPatched(line int, file, module string, addr uint64, err error) *Diagnostic {
	return newDiag(4674, Warning, err, "line %d of file %s in %s is counted with a breakpoint at %#x", line, file, module, addr)
}

// NoInProcess warns that the program cannot be counted in-process at all:
// every entry gets a breakpoint.
func NoInProcess(err error) *Diagnostic {
	return newDiag(4648, Warning, err, "cannot count in-process: every function entry is counted with a breakpoint")
}

// SharedBlocks warns that more threads ran at once than there are counter
// blocks: the threads beyond shared one, and may have lost counts.
func SharedBlocks(n int) *Diagnostic {
	return newDiag(4649, Warning, nil, "more than %d threads ran at once: the threads beyond shared counters, and counts may be missing", n-1)
}

// BooksWithBreakpoints warns that what the run keeps (function timing,
// a start function, attribution) is taken with breakpoints in this
// version: a stop at every profiled call's entry, and with timing at its
// exit too.
func BooksWithBreakpoints(what string, exits bool) *Diagnostic {
	where := "entry"
	if exits {
		where = "entry and at its exit"
	}
	d := newDiag(4650, Warning, nil, "%s is kept with breakpoints in this version: every profiled call stops the program at its %s", what, where)
	d.Hint = "expect the program to run much slower than natively; see docs/performance.md"
	return d
}

// BreakpointExits warns that some exits of timed functions keep a
// breakpoint, with how many and why.
func BreakpointExits(n, total int, reasons string) *Diagnostic {
	d := newDiag(4651, Warning, nil, "%d of %d function exits are timed with breakpoints, a stop per return (%s)", n, total, reasons)
	d.Hint = "profile --verbose lists them"
	return d
}

// ExitNotPatched is one exit timed with a breakpoint, listed by profile
// --verbose.
func ExitNotPatched(fn, file string, pc uint64, err error) *Diagnostic {
	return newDiag(4652, Warning, err, "the exit of function %s at %#x in file %s is timed with a breakpoint", fn, pc, file)
}

// ExitTakenOut warns that a hot exit's breakpoint was taken out.
func ExitTakenOut(fn string, n int) *Diagnostic {
	return newDiag(4653, Warning, nil, "an exit of function %s kept a breakpoint and was hit %d times: it is taken out, the function's calls end at their thread's next event", fn, n)
}

// LibraryChanged warns that a shared library of the plan, loaded by the
// program, is not the file PREP read: it is not profiled.
func LibraryChanged(path, pbi string) *Diagnostic {
	d := newDiag(4654, Warning, nil, "timestamp of %s has changed since PREP was run: it is not profiled", path)
	d.Hint = fmt.Sprintf("%s was rebuilt or replaced since prep read it: run prep again to write a new %s", path, pbi)
	return d
}

// LibrariesNotFollowed warns that the libraries of the plan cannot be
// followed as the program loads them (no dynamic linker, or none PROFILE
// knows): their counts stay zero.
func LibrariesNotFollowed(names string, err error) *Diagnostic {
	return newDiag(4655, Warning, err, "shared libraries %s are not profiled: cannot follow the dynamic linker", names)
}

// BreakpointBack warns that a breakpoint PROFILE had removed was found in
// the program's memory again, and removed again: a fault of PROFILE's or
// of the machine's, reported so that it is not silent.
func BreakpointBack(addr uint64) *Diagnostic {
	return newDiag(4656, Warning, nil, "a breakpoint removed at %#x was found in memory again: removed again", addr)
}

// ThreadBaseChanged warns that a thread of the program set its own GS
// base (x86-64), which in-process counting points at the thread's
// counter block: its counts went to the program's own memory.
func ThreadBaseChanged(tid int, base uint64) *Diagnostic {
	d := newDiag(4666, Warning, nil, "thread %d set its own GS base (%#x): its calls were counted into the program's own memory, not PROFILE's", tid, base)
	d.Hint = "profile a program that uses GS with 'profile --breakpoints'; see docs/linux.md, \"What PROFILE cannot see\""
	return d
}

// CodeChanged warns that the program wrote its own code where PROFILE
// had patched it: the instructions PROFILE moved ran as they were.
func CodeChanged(addr uint64, what string) *Diagnostic {
	d := newDiag(4667, Warning, nil, "the program changed its own code at %#x%s, where PROFILE had patched it: the instructions PROFILE moved ran as they were before", addr, aside(what))
	d.Hint = "exclude the code the program changes (prep /EXC NAME); see docs/linux.md, \"What PROFILE cannot see\""
	return d
}

// CodeWritable warns that the program made code PROFILE patched
// writable (mprotect), as a program does to change its own code.
func CodeWritable(path string, addr uint64) *Diagnostic {
	d := newDiag(4668, Warning, nil, "the program made its code in %s at %#x writable: if it changed code PROFILE had patched, the instructions PROFILE moved ran as they were before", path, addr)
	d.Hint = "exclude the code the program changes (prep /EXC NAME); see docs/linux.md, \"What PROFILE cannot see\""
	return d
}

// CodeCopied warns that the program ran a copy of code PROFILE had
// patched: the copy's jump or breakpoint does not work where it is.
func CodeCopied(copyAt, from uint64, what string) *Diagnostic {
	d := newDiag(4669, Warning, nil, "the program ran, at %#x, a copy of code PROFILE had patched at %#x%s", copyAt, from, aside(what))
	d.Hint = "exclude the code the program copies (prep /EXC NAME); see docs/linux.md, \"What PROFILE cannot see\""
	return d
}

// aside is ", what", or "" for no what.
func aside(what string) string {
	if what == "" {
		return ""
	}
	return ", " + what
}

// UntracedChild warns that the program made a child PROFILE was never
// told of (clone with CLONE_UNTRACED): it ran with PROFILE's patches.
func UntracedChild(pid int, killed string) *Diagnostic {
	how := ""
	if killed != "" {
		how = "; it was killed by " + killed
	}
	d := newDiag(4670, Warning, nil, "child process %d was made out of PROFILE's sight (clone with CLONE_UNTRACED): it ran with PROFILE's patches, and its calls may be counted as the program's%s", pid, how)
	d.Hint = "see docs/linux.md, \"What PROFILE cannot see\""
	return d
}

// SignalStops warns that the program received signals fast: each is a
// stop for PROFILE, of about stop each, which took some share of the run.
func SignalStops(n int, rate float64, stop time.Duration, share float64) *Diagnostic {
	d := newDiag(4671, Warning, nil, "the program received %d signals, %.0f a second: each stopped it for PROFILE (about %d µs), some %.0f%% of the run",
		n, rate, (stop+time.Microsecond/2)/time.Microsecond, 100*share)
	d.Hint = "every signal to a traced program is a stop: see docs/performance.md, \"Signals\""
	return d
}

// SharedDamaged warns that the program wrote over the memory it shares
// with PROFILE (a wild write): what showed it (rings of records not as
// their protocol leaves them, a guard PROFILE keeps) is what. The run
// went on, and ended; what the write reached is wrong.
func SharedDamaged(what string) *Diagnostic {
	d := newDiag(4690, Warning, nil, "the program wrote over the memory it shares with PROFILE: %s", what)
	d.Hint = "a stray pointer or an overrun of the program's reached PROFILE's counters (/memfd:sprof-counters in its memory map): the counts and times there may be wrong, and the program's own data near it too; see docs/linux.md, \"What PROFILE cannot see\""
	return d
}

// StaleCode warns that the processor ran a breakpoint PROFILE had
// removed, again and again, though the memory holds the original
// instruction: it runs a stale copy of the code. The instruction is then
// carried out of line at each pass, a stop each: the counts stay right,
// the run is slower.
func StaleCode(addr uint64) *Diagnostic {
	d := newDiag(4672, Warning, nil, "the processor still runs the breakpoint removed at %#x (a stale copy of the code): each pass there stops the thread", addr)
	d.Hint = "seen under qemu's emulation of arm64; see docs/linux.md, \"What PROFILE cannot see\""
	return d
}

// EntryRefused is warning PRF4657: the plan puts a function's entry
// where the program's code, decoded, has no instruction boundary (inside
// an instruction, of its function or of another), or its code does not
// decode from the start to the end the plan gives: nothing is planted
// there, and the function counts nothing.
func EntryRefused(fn, file string, err error) *Diagnostic {
	d := newDiag(4657, Warning, err, "function %s in file %s is not profiled: the plan does not match the program's code", fn, file)
	d.Hint = "the plan was written for other code than this program's: run prep again"
	return d
}

// SiteRefused is warning PRF4658: an exit or return site PROFILE would
// plant is not on an instruction boundary of the program's code.
func SiteRefused(what string, addr uint64, fn, file string, err error) *Diagnostic {
	return newDiag(4658, Warning, err, "the %s at %#x of function %s in file %s is not planted: it is not on an instruction boundary", what, addr, fn, file)
}

// SeccompFiltered is warning PRF4659: a thread of the program runs under a
// seccomp filter of its own that PROFILE cannot suspend, which might kill
// the program for a system call PROFILE would have the thread make (the
// mmap of a library's area): the call is not made, and what needs it is
// not profiled.
func SeccompFiltered(tid int, err error) *Diagnostic {
	d := newDiag(4659, Warning, err, "thread %d runs under a seccomp filter of its own, which PROFILE cannot suspend: PROFILE makes no system call in it, and what needs one is not profiled", tid)
	d.Hint = "suspending the filter for PROFILE's own calls needs CAP_SYS_ADMIN, and PROFILE under no filter of its own: run profile as root, or have the program load its libraries before it installs its filter"
	return d
}

// NotMapped is PRF1660: the program's file is not in the memory map of
// the process that runs it (another file at its path, or a file system
// that names it otherwise).
func NotMapped(path string, pid int) *Diagnostic {
	d := newDiag(1660, Fatal, nil, "%s is not mapped in process %d", path, pid)
	d.Hint = "the file at that path changed as the program started, or the process maps it under another name: profile the file itself"
	return d
}

// ExecEnded warns that the program replaced itself with exec.
func ExecEnded() *Diagnostic {
	return newDiag(4643, Warning, nil, "the program called exec: profiling ended there, the counts up to it are kept")
}

// Reports (PLIST).

// ClockZero is warning PRF4481: a timing profile that was never run.
func ClockZero() *Diagnostic { return newDiag(4481, Warning, nil, "clock frequency is zero") }

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

// CounterNotShared warns that the CPUs' counter is not known to be one
// clock across CPUs, so that a goroutine's records, made on several CPUs,
// cannot be put in order by their times.
func CounterNotShared(source string) *Diagnostic {
	d := newDiag(4680, Warning, nil, "Go functions are timed with breakpoints: the kernel's clock source is %s, not the time stamp counter, which is then not known to be one clock across CPUs", source)
	d.Hint = "a goroutine's calls are in the rings of every thread that ran it, put in order by the counter's times"
	return d
}

// TraceLines warns that /TRACE was given for a line profile: a trace is of
// function calls.
func TraceLines(method string) *Diagnostic {
	d := newDiag(4681, Warning, nil, "/TRACE ignored: an execution trace is of function calls, and this is a %s profile", method)
	d.Hint = "prepare a function profile (prep /FT, /FC, /FV or /FS) to trace the calls"
	return d
}

// TraceCut warns that the execution trace reached its size limit: the
// calls after it are counted, not traced.
func TraceCut(path string, limit int64) *Diagnostic {
	d := newDiag(4682, Warning, nil, "the execution trace %s was cut at its limit of %d MiB: the later calls are counted but not in it", path, limit>>20)
	d.Hint = "raise the limit with --trace-limit=MIB (0: none)"
	return d
}

// TraceWrite warns that the execution trace could not be written to the
// end: what was written before stays readable.
func TraceWrite(path string, err error) *Diagnostic {
	return newDiag(4683, Warning, err, "cannot write the execution trace %s to the end: it holds the calls before the failure", path)
}

// TraceBusy warns that another PROFILE is writing the trace: this run
// writes none.
func TraceBusy(path string) *Diagnostic {
	d := newDiag(4684, Warning, nil, "another PROFILE is writing the execution trace %s: this run writes none", path)
	d.Hint = "name another .pbo with /O: its trace goes beside it"
	return d
}

// TraceNotMerged warns that the trace is of a run the .pbt does not hold
// (PLIST /TRACE): its times are that run's, not the report's.
func TraceNotMerged(pbx, pbt string) *Diagnostic {
	d := newDiag(4485, Warning, nil, "the execution trace %s is of a run not merged into %s: its times are that run's alone", pbx, pbt)
	d.Hint = "merge the run (prep /M) to list it with the report it belongs to"
	return d
}

// TraceIncomplete warns that the trace ends before its run did (PLIST
// /TRACE): PROFILE was killed, or the trace was cut.
func TraceIncomplete(pbx, why string) *Diagnostic {
	return newDiag(4486, Warning, nil, "the execution trace %s is not whole: %s", pbx, why)
}

// SourcesLeftOut warns that the listing leaves out the source files it
// cannot find (PLIST): files names each with the number of the profile's
// lines it holds ("bc.y (125 lines)"), which count in the statistics but
// are not listed.
func SourcesLeftOut(files []string, lines int) *Diagnostic {
	what := "a source file"
	if len(files) > 1 {
		what = fmt.Sprintf("%d source files", len(files))
	}
	d := newDiag(4487, Warning, nil, "the listing leaves out %s it cannot find, with %d of the profile's lines: %s",
		what, lines, strings.Join(files, ", "))
	d.Hint = "name the directories that hold them with /D DIR (repeatable); the line counts are in the statistics all the same"
	return d
}

// DiffOtherType warns that --diff-base compares profiles of two types
// (PLIST): only what both count is compared, and the rest is listed as
// appearing or vanishing.
func DiffOtherType(base, baseType, thisType string) *Diagnostic {
	d := newDiag(4488, Warning, nil, "--diff-base %s is a %s profile, and this one a %s profile: only what both count is compared, and what one alone counts is listed as a change",
		base, baseType, thisType)
	d.Hint = "compare two profiles of one type: prepare the program with the type of the other (prep /FC, /FT, /FV, /FS, /LC or /LV), profile it, and compare again"
	return d
}

// TraceOtherPlan is PRF1306 for a trace (PLIST /TRACE): a run of another
// PREP than the .pbt's.
func TraceOtherPlan(pbx, pbt string) *Diagnostic {
	d := newDiag(1306, Fatal, nil, "PBT or PBO file %s is not derived from same PBI file", pbx)
	d.Hint = "the trace is of a run of another preparation than " + pbt + "'s: profile the program again with /TRACE"
	return d
}
