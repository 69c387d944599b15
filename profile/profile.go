// Package profile runs a program under the profiler, or attaches to a
// running process, writes the plan's instrumentation into it through
// ptrace, follows it to its end (or the end of its window), and returns
// one run's [datafile.Counts]. It reads nothing but the plan: it never
// imports package dwarf or package prep, nor an ELF reader; what it must
// learn of the files on the machine that runs the program (their identity,
// the span an instance takes, the dynamic linker's rendezvous, function
// starts) package internal/elfid reads for it.
//
// How it works (docs/architecture.md tells it at length):
//
//   - A run is one loop over a process (tracer.go), behind one seam
//     (process.go): the program started stopped at its exec, or a process
//     seized where it is (target.go). The loop owns the threads, the tasks,
//     the signals and the stops; the mechanisms and the other parts take
//     part through hooks (hooks.go), chosen in one place.
//   - Where a jump fits, a function's entry, exit or line site jumps to a
//     trampoline that counts in memory shared with PROFILE, or records the
//     time in the thread's ring, which PROFILE reads into the books
//     (package profile/books); where none fits, a breakpoint. Function
//     sampling samples each thread, by the kernel's clock events or by
//     ptrace stops.
//   - Only the thread that stops stops (a non-stop tracer). A breakpoint is
//     never lifted while other threads run: the instruction under it is
//     emulated, or executed from the site's slot, a relocated copy followed
//     by a jump back (package instr decides which, once per site).
//   - Every ptrace request comes from one goroutine locked to its OS thread.
package profile

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// Config describes one run.
type Config struct {
	// Plan is what to profile, read from PlanPath (named in messages).
	Plan     *datafile.Plan
	PlanPath string
	// Path is the program file to execute (already resolved through PATH).
	Path string
	// Args is the program's argv, argv[0] as typed.
	Args []string
	// CommandLine is the program's command line as typed after PROFILE's
	// options, for the run record.
	CommandLine string
	// Env and Dir are the program's environment and working directory.
	Env []string
	Dir string
	// Stdin, Stdout and Stderr are the program's standard streams.
	Stdin, Stdout, Stderr *os.File
	// Signals, when not nil, delivers the signals PROFILE receives
	// (SIGINT, SIGTERM, SIGHUP): each is passed on to the program, once.
	Signals <-chan os.Signal
	// Warn receives the warnings; nil discards them.
	Warn func(*prf.Diagnostic)
	// Breakpoints counts every function entry with a breakpoint, a stop
	// per call, instead of in-process trampolines (profile --breakpoints).
	Breakpoints bool
	// NoCPUTime measures no call's time on a CPU in a function timing
	// run that keeps its books in the program (profile --no-cpu-time):
	// no task clock a thread, and no stop each time a thread comes back
	// onto a CPU, some 90 µs each (ledger_waits.go).
	NoCPUTime bool
	// NoStacks samples program counters alone in function sampling
	// (profile --no-stacks): no call stack is taken with a sample, and
	// without /AT a function's time with children is its own.
	NoStacks bool
	// UserOnly samples user space alone in function sampling (profile
	// --user-only): the kernel's ticks are not asked for, and the run
	// records the kernel time no sample saw (sampling_kernel.go).
	UserOnly bool
	// EveryLineSite gives every line site a probe of its own in-process:
	// none shares the count of an earlier site of its block (a test mode,
	// whose counts the default's must equal).
	EveryLineSite bool
	// Verbose warns about each entry that keeps a breakpoint, with why.
	Verbose bool
	// Explain, when not nil, receives PROFILE's narration of what it does
	// as it does it (profile --explain, explain.go); nil narrates nothing.
	// ExplainLimit is how many sites it describes in full, and how many
	// first hits (and ring drains, threads, signals) it tells: the rest
	// are summarised. 0 means no limit.
	Explain      io.Writer
	ExplainLimit int
	// SampleInterval is the sampling interval of function sampling, in
	// the thread's CPU time (profile /S); 0 means DefaultInterval.
	SampleInterval time.Duration
	// Trace, when not empty, is the execution trace (.pbx) to write: every
	// call and return of a function profile, as the run goes (trace.go).
	// TraceLimit bounds its size in bytes (0: no limit).
	Trace      string
	TraceLimit int64
	// Attach, when not 0, is the process to profile instead of starting
	// Path: PROFILE attaches to it, profiles it for Duration (0: until a
	// signal to PROFILE, or its end), and detaches, leaving it running as
	// it was (attach.go). Path is then its executable, and Args, Env,
	// Dir and the streams are not used.
	Attach   int
	Duration time.Duration
	// Attached, when not nil, is called once the process runs planted,
	// with the number of its threads: the window has begun.
	Attached func(threads int)
	// Progress, when not nil, is told how the run goes every half second
	// once it has run two seconds (a status line on a terminal).
	Progress func(Progress)
	// Now returns the time of the run; nil means time.Now.
	Now func() time.Time
}

// Result is what a run produced.
type Result struct {
	// Counts is the run's data, also when the run was incomplete.
	Counts *datafile.Counts
	// Exited is true when the program exited normally with ExitCode;
	// otherwise it was killed by Signal.
	Exited   bool
	ExitCode int
	Signal   syscall.Signal
	// Hits is the number of breakpoint traps handled (for benchmarks),
	// FullRings the stops of threads whose ring of records was full, and
	// ReturnSites the places where calls return patched to record the
	// exits of functions whose own exits could not all be (timing
	// in-process); Books is set where the run kept its books in the
	// program (ledger.go), BookStops counts the events their code left
	// to PROFILE (another stack, a shadow stack full), and ClockStops
	// those it left for a thread back on its CPU (ledger_waits.go).
	Hits        uint64
	FullRings   uint64
	ReturnSites int
	Books       bool
	BookStops   uint64
	ClockStops  uint64
	// RolledBack counts the threads a signal stopped inside
	// instrumentation code that saves registers in the thread's block,
	// rolled out of it before their handler ran (for tests).
	RolledBack uint64
	// EndCheck is what comparing the program's code with PROFILE's
	// patches took when the program ended (watch.go; for benchmarks).
	EndCheck time.Duration
}

// Status is the program's status as a shell reports it: the exit code, or
// 128+N when it died of signal N.
func (r *Result) Status() int {
	if r.Exited {
		return r.ExitCode
	}
	return 128 + int(r.Signal)
}

// Run runs the program under the profiler until it ends and returns the
// run's counts. An error means the program could not be profiled at all; a
// program that crashes or is killed still gives a Result whose run is marked
// incomplete. Every error is a numbered diagnostic ([numbered]).
func Run(cfg Config) (*Result, error) {
	res, err := run(cfg)
	if err != nil {
		return nil, numbered(cfg.Path, err)
	}
	return res, nil
}

// numbered gives an error of the tracer that carries no PRF number of its
// own one that says what happened to the program: PRF1645 when Linux
// denied PROFILE the program's process (its /proc files, a ptrace
// request), PRF1646 when the process went away under PROFILE, PRF1005 when
// memory ran out, and PRF1644, naming the program, for every other
// failure of PROFILE's; the cause, which names the step, follows the
// message. A numbered diagnostic is returned as it is.
func numbered(program string, err error) error {
	if prf.Code(err) != 0 {
		return err
	}
	switch {
	case errors.Is(err, fs.ErrPermission):
		return prf.ProcessDenied(program, err)
	case errors.Is(err, syscall.ESRCH):
		return prf.ProcessLost(program, err)
	case errors.Is(err, syscall.ENOMEM):
		return prf.OutOfMemory(err)
	}
	return prf.TraceFailed(program, err)
}

// run is Run before its errors are numbered.
func run(cfg Config) (*Result, error) {
	if cfg.Plan == nil {
		return nil, errors.New("run: no plan")
	}
	// PREP writes a module at least, of an architecture it knows; a plan
	// made otherwise is refused here, before anything indexes it.
	if len(cfg.Plan.Modules) == 0 {
		return nil, prf.CannotRead(cfg.PlanPath, errors.New("the plan names no module"))
	}
	if m := &cfg.Plan.Modules[0]; !knownArch(m.Arch) {
		return nil, prf.UnsupportedArch(cmp.Or(m.Path, m.Name), m.Arch)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Warn == nil {
		cfg.Warn = func(*prf.Diagnostic) {}
	}
	if err := checkProgram(cfg); err != nil {
		return nil, err
	}
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	// ptrace ties a tracee to the OS thread that traced it: the whole trace,
	// child start included, runs on one locked thread. The goroutine never
	// unlocks it, so the thread ends with the goroutine.
	go func() {
		runtime.LockOSThread()
		t, err := newTracer(cfg)
		if err != nil {
			done <- outcome{nil, err}
			return
		}
		var tg target = newLaunch(t)
		if cfg.Attach != 0 {
			tg = newAttachment(t)
		}
		res, err := t.runTarget(tg)
		done <- outcome{res, err}
	}()
	o := <-done
	return o.res, o.err
}

// knownArch reports whether package instr knows the architecture named
// arch (GOARCH spelling).
func knownArch(arch string) bool {
	_, err := instr.ForName(arch)
	return err == nil
}

// checkProgram refuses a program changed since PREP (PRF1442) and warns
// when the program is not one of the plan's modules (PRF4541): it then runs
// unprofiled, as when only its libraries are profiled. A process to attach
// to that runs no program of the plan is refused (PRF1651).
func checkProgram(cfg Config) error {
	base := filepath.Base(cfg.Path)
	for i := range cfg.Plan.Modules {
		m := &cfg.Plan.Modules[i]
		if m.Name != base {
			continue
		}
		same, err := checkIdentity(cfg.Path, m)
		if err != nil {
			return prf.CannotOpen(cfg.Path, err)
		}
		if !same {
			return prf.ProgramChanged(cfg.Path, cfg.PlanPath)
		}
		return nil
	}
	if cfg.Attach != 0 {
		// (A program PROFILE starts may be run for its libraries alone;
		// a process is attached to for its program.)
		return prf.CannotAttach(cfg.Attach, fmt.Errorf("it runs %s, which %s does not plan: prepare it with prep, or name its plan with /I", cfg.Path, cfg.PlanPath))
	}
	cfg.Warn(prf.NotInPlan(cfg.Path, cfg.PlanPath))
	return nil
}

// describeSignal names a signal the way a user reads it: "SIGSEGV
// (segmentation fault)".
func describeSignal(sig syscall.Signal) string {
	name := signalName(sig)
	return fmt.Sprintf("%s (%s)", name, sig.String())
}

func signalName(sig syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
		syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
		syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
		syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
		syscall.SIGCHLD: "SIGCHLD", syscall.SIGCONT: "SIGCONT", syscall.SIGSTOP: "SIGSTOP",
		syscall.SIGTSTP: "SIGTSTP", syscall.SIGTTIN: "SIGTTIN", syscall.SIGTTOU: "SIGTTOU",
		syscall.SIGURG: "SIGURG", syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ",
		syscall.SIGVTALRM: "SIGVTALRM", syscall.SIGPROF: "SIGPROF", syscall.SIGWINCH: "SIGWINCH",
		syscall.SIGIO: "SIGIO", syscall.SIGSYS: "SIGSYS",
	}
	if n, ok := names[sig]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}
