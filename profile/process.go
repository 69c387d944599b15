// The process seam: what PROFILE asks of the program it traces, its
// threads and the tasks it makes, as one interface. ptraceProcess
// (process_ptrace.go) is the only implementation outside the tests, a
// thin adapter over package ptrace; the tests' fake process
// (fakeprocess_test.go) answers from a memory, registers and a script of
// events, so that a stop's path through the tracer runs without a kernel.

package profile

import (
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// process is a traced program: every thread and task PROFILE traces,
// named by their IDs. All its methods but kill run on the tracer's
// locked thread (package ptrace says why). A process comes from starting
// a program (startPtrace) or attaching to one (attachPtrace); the tracer
// keeps it in tracer.proc.
type process interface {
	// getRegs and setRegs read and write the registers of a stopped
	// thread; threadPointer and setThreadPointer its thread pointer
	// where it is no register of ptrace.Regs (arm64's TPIDR_EL0;
	// errors.ErrUnsupported elsewhere).
	getRegs(tid int, r *ptrace.Regs) error
	setRegs(tid int, r *ptrace.Regs) error
	threadPointer(tid int) (uint64, error)
	setThreadPointer(tid int, v uint64) error

	// cont resumes a stopped thread, delivering sig unless it is 0; step
	// single-steps it; interrupt stops a running thread (its stop is an
	// EventStop); listen leaves a thread in a group-stop stopped.
	cont(tid int, sig syscall.Signal) error
	step(tid int) error
	interrupt(tid int) error
	listen(tid int) error
	// detach lets a stopped task go, delivering sig unless it is 0;
	// detachStopped lets go the threads of a process in a group-stop,
	// and waits until each is back in it.
	detach(tid int, sig syscall.Signal) error
	detachStopped(tids []int)
	// waitStopped waits, a second at most, until each of the threads
	// tids, detached, is stopped or gone.
	waitStopped(tids []int)
	// seize switches the program started stopped at its exec, pid, to
	// PTRACE_SEIZE tracing (ptrace.Seize).
	seize(pid int) error
	// kill sends sig to thread tid of process tgid, or to the process
	// when tid is 0. It may be called from any goroutine.
	kill(tgid, tid int, sig syscall.Signal) error

	// wait waits for the next change of any traced thread, as w says;
	// waitFor for the next of thread tid alone, polling and yielding its
	// CPU for up to yield first (none when 0).
	wait(w waitPolicy) (tid int, ws ptrace.WaitStatus, err error)
	waitFor(tid int, yield time.Duration) (ptrace.WaitStatus, error)

	// eventMsg is the message of a thread's last ptrace event (the new
	// task's ID at a clone, fork or vfork). sigInfo reads the signal a
	// thread is stopped for, rawSigInfo the whole of its siginfo, and
	// setSigInfo gives it another.
	eventMsg(tid int) (uint64, error)
	sigInfo(tid int) (ptrace.SigInfo, error)
	rawSigInfo(tid int) (ptrace.RawSigInfo, error)
	setSigInfo(tid int, info ptrace.RawSigInfo) error

	// sigMask and setSigMask read and write a stopped thread's signal
	// mask; signals returns one of the sets of signals of a thread and
	// its process, 0 when it cannot be read.
	sigMask(tid int) (uint64, error)
	setSigMask(tid int, mask uint64) error
	signals(tid int, set sigSet) uint64

	// attach seizes and stops every thread of another process, pid, one
	// that shares the memory of the process attached to, as
	// ptrace.Attach does. sameMemory reports whether two tasks share
	// their memory (kcmp). tgid is the process of thread tid (tid when
	// unknown). inSyscall reports whether thread tid of process tgid,
	// stopped, is in a system call.
	attach(pid int) (tids []int, group map[int]bool, err error)
	sameMemory(a, b int) (bool, error)
	tgid(tid int) int
	inSyscall(tgid, tid int) bool

	// seccomp reads the seccomp state of thread tid (of PROFILE's own
	// thread when tid is 0); suspendSeccomp suspends a stopped thread's
	// filter (on) or lets it act again, attached saying whether the
	// thread was traced by attaching.
	seccomp(tid int) (ptrace.Seccomp, error)
	suspendSeccomp(tid int, attached, on bool) error

	// openMem opens the memory of task tid; openMaps the memory map of
	// process pid, read again at each Read.
	openMem(tid int) (taskMem, error)
	openMaps(pid int) (memoryMap, error)
	// mapShared maps here the size bytes of the memfd that stopped
	// thread tid holds as its descriptor fd.
	mapShared(tid, fd, size int) (*ptrace.Shared, error)
	// auxValue is an entry of process pid's auxiliary vector,
	// stackLimit its main thread's stack limit (RLIMIT_STACK).
	auxValue(pid int, typ uint64) (uint64, error)
	stackLimit(pid int) (uint64, error)
	// cpuTime is the time thread tid of process tgid has spent on a
	// CPU so far, in nanoseconds (/proc/PID/task/TID/schedstat): an
	// error once the thread is gone.
	cpuTime(tgid, tid int) (int64, error)
	// openSampler opens the kernel's sampler of thread tid's program
	// counter, and of its stack where o asks (function sampling).
	openSampler(tid int, o ptrace.SamplerOptions) (*ptrace.Sampler, error)
	// pacMask is the pointer-authentication mask of stopped thread tid's
	// return addresses (arm64; 0 where none).
	pacMask(tid int) uint64
}

// taskMem is the memory of a task, open until closed.
type taskMem interface {
	instr.Memory
	Close() error
}

// memoryMap is the memory map of a process, as the kernel prints it at
// each Read (/proc/PID/maps).
type memoryMap interface {
	Read() ([]byte, error)
	Close() error
}

// sigSet names a set of signals of a thread and its process.
type sigSet int

const (
	// sigPending are the signals pending for the thread itself (SigPnd
	// of /proc/TID/status).
	sigPending sigSet = iota
	// sigSharedPending are those pending for its process, any of whose
	// threads may take them (ShdPnd).
	sigSharedPending
	// sigBlocked are those the thread blocks, running or not (SigBlk).
	sigBlocked
	// sigSharedQueued are those queued for the process of the stopped
	// thread, as a ptrace request sees them (PTRACE_PEEKSIGINFO): cheaper
	// than reading /proc.
	sigSharedQueued
)

// waitPolicy is how a wait for the next stop of any thread spends the
// time until it comes: one of package ptrace's waits, whose polling,
// yielding and sleeping are measured behaviour (the ptrace functions
// say which run needs which), made here by the function of its name.
type waitPolicy struct {
	kind waitKind
	// spin is how long the wait polls before it sleeps (sleepWait,
	// pollWait), or polls giving up its CPU between two polls (the
	// others' limit).
	spin  time.Duration
	every time.Duration
	idle  func() bool
	quit  <-chan struct{}
}

// waitKind is which of package ptrace's waits a waitPolicy is.
type waitKind int

const (
	waitSleeping waitKind = iota // ptrace.Wait
	waitYielding                 // ptrace.WaitYielding
	waitIdling                   // ptrace.WaitIdle
	waitTicking                  // ptrace.WaitTicking
	waitQuitting                 // ptrace.WaitUntil
	waitPolling                  // ptrace.WaitPolling
)

// sleepWait polls for spin without sleeping, then sleeps (ptrace.Wait).
func sleepWait(spin time.Duration) waitPolicy { return waitPolicy{kind: waitSleeping, spin: spin} }

// yieldWait polls for up to limit, yielding between polls, then sleeps
// (ptrace.WaitYielding).
func yieldWait(limit time.Duration) waitPolicy { return waitPolicy{kind: waitYielding, spin: limit} }

// idleWait is yieldWait with idle work between polls (ptrace.WaitIdle).
func idleWait(limit time.Duration, idle func() bool) waitPolicy {
	return waitPolicy{kind: waitIdling, spin: limit, idle: idle}
}

// tickWait is idleWait that, after limit, waits for the next stop's
// SIGCHLD, calling idle every every meanwhile (ptrace.WaitTicking).
func tickWait(limit, every time.Duration, idle func() bool) waitPolicy {
	return waitPolicy{kind: waitTicking, spin: limit, every: every, idle: idle}
}

// quitWait is tickWait that returns ptrace.ErrQuit once quit is closed
// (ptrace.WaitUntil).
func quitWait(limit, every time.Duration, idle func() bool, quit <-chan struct{}) waitPolicy {
	return waitPolicy{kind: waitQuitting, spin: limit, every: every, idle: idle, quit: quit}
}

// pollWait polls for spin without sleeping, then every every, calling
// idle between polls (ptrace.WaitPolling).
func pollWait(spin, every time.Duration, idle func() bool) waitPolicy {
	return waitPolicy{kind: waitPolling, spin: spin, every: every, idle: idle}
}
