// The run sequence: a run gets its process from a target, a program
// PROFILE starts (launch) or a process it attaches to (attachment,
// attach.go), and goes the same way over either: memory and map opened,
// the plan planted, the overhead calibrated, the process let go, the
// loop, the end, the counts gathered.

package profile

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// target is where a run's process comes from, and what a run does
// differently for it, at the moments of the run sequence (runTarget)
// named by its methods. Each method that returns a function returns one
// to call when the sequence ends (never nil), whether or not it failed.
type target interface {
	// obtain gets the process, every thread of it stopped: tracer.proc,
	// tracer.pid and tracer.threads are set. When it fails, the
	// process is not PROFILE's (nothing to clean up).
	obtain() error
	// memory is what PROFILE writes the process's memory through, mem
	// being its memory opened.
	memory(mem taskMem) instr.Memory
	// opened is called once the memory and the map are open, before
	// --explain tells where the process stands (startedAt).
	opened()
	// hold is called before anything is planted; release when the
	// sequence ends (a target may release earlier: attachment.start).
	hold() (release func(), err error)
	// planted is called once the modules mapped at the start are
	// planted, before the calibration.
	planted() error
	// ready is called after the calibration, before the sampler
	// starts.
	ready() (done func(), err error)
	// start lets the threads go, the sampler started.
	start() (done func(), err error)
	// begun is called once the process runs planted, and told so.
	begun()
	// end is called when the loop has ended: the program ended, or
	// the window.
	end(res *Result) error
	// failed returns err, the failure of a step of the sequence once
	// the memory and the map are open, after undoing what was done to
	// the process, with the memory and the map still open.
	failed(err error) error
	// abandon cleans up after the sequence failed, the process
	// obtained: every file of the run closed but the trace.
	abandon()
}

// runTarget runs the plan over tg's process: it gets the process, plants
// the plan in it, lets it run, traces it to its end and gathers its
// counts. Whatever fails once the process is obtained, tg cleans up, in
// one place (abandon).
func (t *tracer) runTarget(tg target) (*Result, error) {
	start := t.cfg.Now()
	// (A window restarts it: attachment.start.)
	t.status.start = time.Now()
	t.told.note(planReadEvent{})
	if err := tg.obtain(); err != nil {
		return nil, err
	}
	defer func() { t.parts.trace.close(false) }()
	err := t.openTrace(start)
	var res *Result
	if err == nil {
		res, err = t.traceTarget(tg, start)
	}
	if err != nil {
		tg.abandon()
		return nil, err
	}
	t.parts.trace.close(true)
	return res, nil
}

// traceTarget plants the plan in tg's process, its threads stopped, lets
// it run and traces it to its end (start is when the run began).
func (t *tracer) traceTarget(tg target, start time.Time) (res *Result, err error) {
	pid := t.pid
	mem, err := t.proc.openMem(pid)
	if err != nil {
		return nil, fmt.Errorf("open memory of process %d: %w", pid, err)
	}
	defer mem.Close()
	t.mem = tg.memory(mem)
	if t.maps, err = t.proc.openMaps(pid); err != nil {
		return nil, fmt.Errorf("open memory map of process %d: %w", pid, err)
	}
	defer t.maps.Close()
	tg.opened()
	t.told.note(startedEvent{})
	defer func() { t.parts.counters.close() }()
	// Whatever fails from here, tg undoes it, before the memory, the map
	// and the counters are closed.
	defer func() {
		if err != nil {
			err = tg.failed(err)
		}
	}()
	release, err := tg.hold()
	defer release()
	if err != nil {
		return nil, err
	}
	if err = t.plantTarget(tg); err != nil {
		return nil, err
	}
	if t.parts.sampling != nil {
		// (Before the threads an attachment finds are made ready: each
		// is sampled as the main thread is, by the kernel or by ptrace.)
		t.parts.sampling.start(pid)
		defer t.parts.sampling.ended()
	}
	done, err := tg.ready()
	defer done()
	if err != nil {
		return nil, err
	}
	res = &Result{}
	done, err = tg.start()
	defer done()
	if err != nil {
		return nil, err
	}
	t.told.note(runningEvent{})
	tg.begun()
	if err = t.loop(res); err != nil {
		return nil, err
	}
	if err = tg.end(res); err != nil {
		return nil, err
	}
	t.finish(start, res)
	return res, nil
}

// plantTarget plants the plan in tg's process, stopped, and calibrates
// what PROFILE's stops and records cost it.
func (t *tracer) plantTarget(tg target) error {
	t.clocks.startCounter()
	if err := t.plantAll(); err != nil {
		return err
	}
	if err := tg.planted(); err != nil {
		return err
	}
	if err := t.clocks.calibrateAll(t.timed, calibration{proc: t.proc, pid: t.pid, arch: t.arch, borrow: t.parts.calls.borrow, borrowed: t.parts.calls.borrowed, counters: t.parts.counters, rings: t.parts.rings, ledgers: t.parts.ledgers, imposed: t.plan.Calibration}); err != nil {
		return err
	}
	t.told.note(calibratedEvent{})
	t.clocks.refineCounter()
	return nil
}

// launch is the target of a run of a program PROFILE starts: started
// under ptrace, stopped at its exec, switched to PTRACE_SEIZE tracing
// once planted, and traced to its end. Whatever fails, it is killed.
type launch struct {
	t *tracer
	// startProcess starts the program stopped at its exec (startPtrace;
	// the tests' fake process).
	startProcess func(path string, argv, env []string, dir string, files []*os.File) (process, int, error)
}

// newLaunch is the target of the run of t's program.
func newLaunch(t *tracer) *launch { return &launch{t: t, startProcess: startPtrace} }

func nothing() {}

// obtain starts the program, its standard streams Config's (PROFILE's
// own where Config gives none).
func (l *launch) obtain() error {
	t := l.t
	files := []*os.File{t.cfg.Stdin, t.cfg.Stdout, t.cfg.Stderr}
	for i, f := range files {
		if f == nil {
			files[i] = []*os.File{os.Stdin, os.Stdout, os.Stderr}[i]
		}
	}
	proc, pid, err := l.startProcess(t.cfg.Path, t.cfg.Args, t.cfg.Env, t.cfg.Dir, files)
	if err != nil {
		return prf.CannotRun(t.cfg.Path, err)
	}
	t.proc, t.pid = proc, pid
	t.threads[pid] = &thread{tid: pid, tgid: pid}
	return nil
}

func (l *launch) memory(mem taskMem) instr.Memory { return mem }
func (l *launch) opened()                         {}
func (l *launch) hold() (func(), error)           { return nothing, nil }
func (l *launch) planted() error                  { return nil }

// ready switches the program to PTRACE_SEIZE tracing (ptrace.Seize), and
// passes the signals PROFILE receives on to it from then on.
func (l *launch) ready() (func(), error) {
	t := l.t
	if err := t.proc.seize(t.pid); err != nil {
		return nothing, prf.CannotRun(t.cfg.Path, err)
	}
	t.signals.ownCont = true
	return t.signals.forward(t.cfg.Signals, t.proc, t.pid, t.told), nil
}

// start lets the program go from its exec stop.
func (l *launch) start() (func(), error) {
	t := l.t
	if err := t.proc.cont(t.pid, 0); err != nil {
		return nothing, fmt.Errorf("start program: %w", err)
	}
	t.clocks.openThreadBooks(t.threads[t.pid], t.parts.books)
	t.clocks.startWaits(t.timed, t.parts.books, t.pid, t.arch)
	return nothing, nil
}

func (l *launch) begun() {}

// end lets go the processes that outlive the program (releaseSurvivors).
func (l *launch) end(res *Result) error {
	l.t.releaseSurvivors()
	return nil
}

func (l *launch) failed(err error) error { return err }

// abandon kills the program and reaps it.
func (l *launch) abandon() {
	t := l.t
	t.proc.kill(t.pid, 0, syscall.SIGKILL)
	t.reapKilled()
}
