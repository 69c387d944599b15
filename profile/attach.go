// Attaching: profiling a process that is already running (profile
// --pid), for a window, then letting it go as it was.

package profile

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// An attached run is the run sequence (runTarget) over an attachment, its
// target. It differs from a run of a program PROFILE starts in four ways
// (docs/architecture.md, "Attaching to a running process"):
//
//   - Every thread is seized and stopped where it is (ptrace.Attach), and
//     planted as a program is at its exec stop; the libraries already
//     loaded are planted at once. Frames open at that moment are closed
//     by their returns, as the books close any frame whose entry they did
//     not see.
//   - What PROFILE runs on a thread of the program (the calibrations, its
//     system calls) starts below the thread's red zone, and never restarts
//     a system call the thread was in: the thread's registers, and the
//     system call it was in, come back as they were.
//   - Every byte PROFILE writes over the program's code is logged with the
//     bytes it replaced (undoMemory), and written back before PROFILE
//     detaches, with every thread stopped. The trampolines and the
//     counters stay mapped: a thread stopped in one finishes it, and one
//     inside the callee of a relocated call returns there, to its jump
//     back. They need no tracer, and no patch leads into them any more.
//   - The window ends after Config.Duration, at a signal to PROFILE
//     (Ctrl-C), or when the program ends. A signal PROFILE receives is
//     not passed on.

// attachment is an attached run: the target of the run sequence, and
// its state.
type attachment struct {
	t *tracer
	// attachProcess attaches to a process, every thread stopped
	// (attachPtrace; the tests' fake process).
	attachProcess func(pid int) (process, []int, map[int]bool, error)
	// quit is closed when the window ends.
	quit chan struct{}
	// undo is the program's memory as PROFILE writes it, logging what it
	// replaces.
	undo *undoMemory
	// bases are the thread bases (amd64's GS base) and thread pointers
	// (arm64's TPIDR_EL0, for Go) of the threads as PROFILE found them,
	// put back before it detaches; base is the main thread's, which
	// threads started during the window inherited.
	bases, pointers map[int]uint64
	base, pointer   uint64
	// pcs are where the threads were stopped: no patch covers one
	// (scanCode's landings); sps are their stack pointers then.
	pcs []uint64
	sps map[int]uint64
	// mask is the main thread's signal mask, every signal blocked while
	// PROFILE sets up (masked).
	mask   uint64
	masked bool
	// began is when the window began, as the threads were let go;
	// detached is set when PROFILE has let the process go, still running.
	began    time.Time
	detached bool
	// running is set once the threads were let go; windowEnded when the
	// window ended with the process running (loop).
	running, windowEnded bool
	// why is what ended the window, for the run record.
	why string
	// stopped is set when a SIGSTOP sent before PROFILE attached reached
	// a thread PROFILE stepped in its set-up: the process is being
	// stopped, and PROFILE refuses it as it refuses a stopped one, the
	// SIGSTOP held for its thread and delivered as PROFILE lets it go.
	stopped bool
}

// testHookSeized, set by tests alone, runs as soon as PROFILE has
// seized and stopped every thread of the process it attaches to, before
// it looks at them: what happens to the process in that moment (a
// SIGSTOP on its way, TestAttachStoppedDuringSetUp).
var testHookSeized func(pid int)

// newAttachment is the target of a run of process cfg.Attach.
func newAttachment(t *tracer) *attachment {
	return &attachment{
		t:             t,
		attachProcess: attachPtrace,
		quit:          make(chan struct{}),
		bases:         map[int]uint64{},
		pointers:      map[int]uint64{},
		sps:           map[int]uint64{},
	}
}

// obtain attaches to process cfg.Attach, every thread stopped, and
// seizes the processes that share its memory. A process stopped (a
// group-stop), or one it refuses (attachChecks), is let go.
func (a *attachment) obtain() error {
	t := a.t
	pid := t.cfg.Attach
	proc, tids, group, err := a.attachProcess(pid)
	if err != nil {
		return prf.CannotAttach(pid, err)
	}
	if testHookSeized != nil {
		testHookSeized(pid)
	}
	t.proc = proc
	if len(group) > 0 {
		// (Set-up steps the main thread, which a group-stop would take
		// back; detached, the threads stay stopped.)
		t.proc.detachStopped(tids)
		return prf.CannotAttach(pid, errors.New("it is stopped (SIGSTOP or SIGTSTP): continue it first (kill -CONT)"))
	}
	t.attach = a
	t.pid = pid
	for _, tid := range tids {
		t.threads[tid] = &thread{tid: tid, tgid: pid}
	}
	if err := a.attachChecks(); err != nil {
		a.letGo(nil)
		return err
	}
	a.knownChildren()
	return nil
}

// memory logs every write over the program's code (undoMemory), to be
// written back before PROFILE detaches.
func (a *attachment) memory(mem taskMem) instr.Memory {
	a.undo = &undoMemory{Memory: mem, maps: a.t.readMaps}
	return a.undo
}

// opened notes the threads' bases and where they are (saveBases).
func (a *attachment) opened() { a.saveBases() }

// hold blocks every signal of the main thread, which runs PROFILE's
// set-up: one that comes meanwhile waits, and is delivered once its
// mask is back (unmask, as the threads go, or release).
func (a *attachment) hold() (release func(), err error) {
	t, pid := a.t, a.t.pid
	if a.mask, err = t.proc.sigMask(pid); err == nil {
		err = t.proc.setSigMask(pid, ^uint64(0))
	}
	if err != nil {
		return nothing, fmt.Errorf("block the signals of thread %d: %w", pid, err)
	}
	a.masked = true
	return a.unmask, nil
}

// unmask gives the main thread its signal mask back, once.
func (a *attachment) unmask() {
	if a.masked {
		a.t.proc.setSigMask(a.t.pid, a.mask)
		a.masked = false
	}
}

// planted plants the libraries loaded already, followed from here as in
// any run.
func (a *attachment) planted() error { return a.t.parts.modules.syncLibraries() }

// ready gives every thread but the main thread, which has them already,
// its counters, and the threads their stacks' pages above them
// (ownFramesAbove).
func (a *attachment) ready() (func(), error) {
	t := a.t
	for _, tid := range threadIDs(t.threads) {
		if tid == t.pid {
			continue
		}
		if err := t.parts.threadBorn(tid, false); err != nil && !ptrace.IsNoProcess(err) {
			return nothing, fmt.Errorf("give thread %d its counters: %w", tid, err)
		}
	}
	if err := stacksOf(t).ownFramesAbove(a.sps, t.readMaps); err != nil {
		return nothing, fmt.Errorf("give the threads their stacks: %w", err)
	}
	if a.stopped {
		// Let go, its thread takes the SIGSTOP held (letGo), and the
		// process is left in the group-stop it makes.
		a.unmask()
		err := errors.Join(prf.CannotAttach(t.pid, errors.New("it was stopped (SIGSTOP) as PROFILE attached: continue it first (kill -CONT)")), a.letGo(nil))
		t.proc.waitStopped(threadIDs(t.threads))
		return nothing, err
	}
	return nothing, nil
}

// heldStop takes, in the set-up, a SIGSTOP that thread tid dequeued as
// it was stepped (ws its signal-delivery stop): sent before PROFILE
// attached, it was pending then. The step is made again without it, the
// signal held for the thread, and the process refused once set up
// (ready).
func (a *attachment) heldStop(tid int, ws ptrace.WaitStatus) bool {
	th := a.t.threads[tid]
	if a.running || th == nil || !ws.Stopped() || ws.StopSignal() != syscall.SIGSTOP || ws.Event() != 0 || ws.GroupStop() {
		return false
	}
	a.stopped, th.pendingSig = true, syscall.SIGSTOP
	return true
}

// start begins the window (endWindow; done stops watching for its end)
// and lets the threads go, the main thread's mask back.
func (a *attachment) start() (done func(), err error) {
	t := a.t
	a.began = time.Now()
	done = a.endWindow()
	a.unmask()
	t.clocks.startWaits(t.timed, t.parts.books, t.pid, t.arch)
	for _, tid := range threadIDs(t.threads) {
		t.clocks.openThreadBooks(t.threads[tid], t.parts.books)
		if err = t.resume(tid, 0); err != nil {
			return done, err
		}
	}
	a.running = true
	t.status.start = time.Now()
	return done, nil
}

// begun tells Config.Attached that the window has begun.
func (a *attachment) begun() {
	if t := a.t; t.cfg.Attached != nil {
		t.cfg.Attached(len(t.threads))
	}
}

// end lets the process go when the window ended with it running
// (detachAll), and the processes that outlive it when it ended.
func (a *attachment) end(res *Result) error {
	t := a.t
	if a.windowEnded {
		if err := a.detachAll(res); err != nil {
			return err
		}
	}
	if !a.detached {
		t.releaseSurvivors()
	}
	return nil
}

// failed takes out what was planted and lets the process go, its threads
// stopped first if they run.
func (a *attachment) failed(err error) error {
	if !a.detached {
		if a.running {
			a.haltAll()
		}
		err = errors.Join(err, a.letGo(nil))
	}
	return err
}

// abandon lets the process go if failed has not: nothing was planted yet.
func (a *attachment) abandon() {
	if !a.detached {
		a.letGo(nil)
	}
}

// threadIDs returns the threads' IDs in order.
func threadIDs(threads map[int]*thread) []int { return slices.Sorted(maps.Keys(threads)) }

// saveBases notes the thread bases and pointers of the threads as PROFILE
// found them (attachment.bases), and where they are: their PCs, and those
// their signal handlers return to (framePCs), no patch covers.
func (a *attachment) saveBases() {
	t := a.t
	maps, _ := t.readMaps()
	for tid := range t.threads {
		var regs ptrace.Regs
		if err := t.proc.getRegs(tid, &regs); err == nil {
			if regs.RestartEINTR() {
				// (Its call failed for the attach's interrupt.)
				t.proc.setRegs(tid, &regs)
			}
			a.bases[tid] = regs.ThreadBase()
			a.pcs = append(a.pcs, regs.PC())
			a.pcs = append(a.pcs, stacksOf(t).framePCs(&regs, maps)...)
			a.sps[tid] = t.arch.SP(&regs)
		}
		if p, err := t.proc.threadPointer(tid); err == nil {
			a.pointers[tid] = p
		}
	}
	a.base, a.pointer = a.bases[t.pid], a.pointers[t.pid]
}

// endWindow starts what ends the window: Config.Duration, a signal to
// PROFILE, whichever comes first. It returns the function that stops
// watching.
func (a *attachment) endWindow() (stop func()) {
	t := a.t
	done := make(chan struct{})
	var timeout <-chan time.Time
	if t.cfg.Duration > 0 {
		timer := time.NewTimer(t.cfg.Duration)
		defer func() { stop = func() { timer.Stop(); close(done) } }()
		timeout = timer.C
	} else {
		defer func() { stop = func() { close(done) } }()
	}
	go func() {
		select {
		case <-done:
			return
		case <-timeout:
			a.why = fmt.Sprintf("for %s", seconds(t.cfg.Duration))
		case s := <-t.cfg.Signals:
			a.why = fmt.Sprintf("until PROFILE received %s after %s", signalName(s.(syscall.Signal)), seconds(time.Since(a.began)))
		}
		close(a.quit)
	}()
	return stop
}

// seconds writes d as a user reads a window: "0.25 s", "1.5 s", three
// digits, or whole seconds from 100 s on ("3600 s").
func seconds(d time.Duration) string {
	s := d.Seconds()
	if s >= 99.95 {
		return strconv.FormatFloat(math.Round(s), 'f', -1, 64) + " s"
	}
	return strconv.FormatFloat(s, 'g', 3, 64) + " s"
}

// knownChildren notes the children the process had when PROFILE attached
// (/proc/PID/task/TID/children): their SIGCHLD is no sign of a child made
// out of PROFILE's sight (PRF4670).
func (a *attachment) knownChildren() {
	t := a.t
	for tid, th := range t.threads {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", th.tgid, tid))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if child, err := strconv.Atoi(f); err == nil {
				t.parts.watch.noteChild(child)
			}
		}
	}
}

// threadGone forgets thread tid, ended (loop).
func (t *tracer) threadGone(tid int) {
	t.parts.threadEnded(tid)
	delete(t.threads, tid)
	delete(t.signals.requeued, tid)
}

// reason is the run record's word on an attached run: the window its
// counts cover.
func (a *attachment) reason(pid int, res *Result) string {
	d := seconds(time.Since(a.began))
	switch {
	case a.detached && a.why != "":
		return fmt.Sprintf("attached to process %d %s: the counts cover that window", pid, a.why)
	case a.detached:
		return fmt.Sprintf("attached to process %d for %s: the counts cover that window", pid, d)
	case res.Exited:
		return fmt.Sprintf("attached to process %d for the last %s of its run, until it exited with status %d", pid, d, res.ExitCode)
	}
	return fmt.Sprintf("attached to process %d for the last %s of its run, until it was terminated by signal %s", pid, d, describeSignal(res.Signal))
}
