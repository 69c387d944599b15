package profile

import (
	"errors"
	"os"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// The execution trace (profile /TRACE, Config.Trace).
//
// The books see every call and return of a timed run, in each thread and
// goroutine, at the times of the report: the trace is what they book,
// written as they book it (books.trace). A function profile of another
// type asked for a trace is run as timing is (its exits recorded too, the
// rings timed), and reported as its own type: its counts are the same.
//
// The file is written as the run goes, a chunk at a time
// (datafile.TraceWriter), and at least every traceFlushEvery, also while
// no thread stops (tracer.wait: ptrace.WaitTicking), so that a run that
// ends badly keeps what came before; past Config.TraceLimit it is cut,
// with a warning (PRF4682).

// traceFlushEvery is how long booked events may wait in memory.
const traceFlushEvery = 200 * time.Millisecond

// DefaultTraceLimit is the trace's size limit unless told otherwise: some
// 90 million calls and returns, which PLIST reads in some 1.4 GiB of
// memory.
const DefaultTraceLimit = 256 << 20

// traceFile is the trace being written, and where its warnings go.
type traceFile struct {
	path    string
	f       *os.File
	w       *datafile.TraceWriter
	flushed time.Time
	closed  bool
	limit   int64
	warn    func(*prf.Diagnostic)
}

// tracing reports whether the run writes a trace: one asked for, of a
// function profile.
func tracing(cfg *Config) bool {
	return cfg.Trace != "" && cfg.Plan.Method.IsFunction()
}

// openTrace creates the trace file and writes its header, once the
// program is started and stopped at its exec, before it runs: a trace
// that cannot be written is known at once, and a program that cannot be
// started leaves the trace of the last run as it was.
func (t *tracer) openTrace(start time.Time) error {
	if t.cfg.Trace == "" {
		return nil
	}
	if !tracing(&t.cfg) {
		t.cfg.Warn(prf.TraceLines(t.plan.Method.Words()))
		return nil
	}
	tf, err := createTrace(&t.cfg, t.plan, t.runID, start)
	switch {
	case errors.Is(err, datafile.ErrBusy):
		t.cfg.Warn(prf.TraceBusy(t.cfg.Trace))
		t.untraced()
		return nil
	case err != nil:
		t.untraced()
		return err
	}
	t.parts.trace = tf
	t.parts.books.Trace = tf.w
	return nil
}

// untraced makes a run asked for a trace that writes none the run it
// would have been without /TRACE: not timed, without books, unless its
// plan needs them.
func (t *tracer) untraced() {
	t.timed = t.plan.Method.IsTiming()
	if !keepsBooks(t.plan) {
		t.parts.books = nil
	}
}

// createTrace creates the trace file of cfg's run and writes its
// header. The file is a new one that takes the trace's name at once
// ([datafile.CreateLive]): what is written survives PROFILE, and a
// symbolic link of that name is replaced, not followed. Two runs at once
// write their .pbo files apart (pbo.N); a trace has one name, which the
// first run keeps: the other gets datafile.ErrBusy, and runs without.
func createTrace(cfg *Config, plan *datafile.Plan, runID datafile.Hex, start time.Time) (*traceFile, error) {
	f, err := datafile.CreateLive(cfg.Trace, 0o666, true)
	if errors.Is(err, datafile.ErrBusy) {
		return nil, err
	}
	if err != nil {
		return nil, prf.CannotWrite(cfg.Trace, err)
	}
	h := datafile.TraceHeader{PlanID: plan.ID, RunID: runID, Method: plan.Method, Start: start, Funcs: len(plan.Funcs)}
	w, err := datafile.NewTraceWriter(f, h, cfg.TraceLimit)
	if err != nil {
		f.Close()
		return nil, prf.CannotWrite(cfg.Trace, err)
	}
	return &traceFile{path: cfg.Trace, f: f, w: w, flushed: time.Now(), limit: cfg.TraceLimit, warn: cfg.Warn}, nil
}

// flush writes the events booked since the last chunk when they have
// waited long enough (after each stop, and while PROFILE waits for the
// next). A run without a trace has a nil one.
func (tr *traceFile) flush() {
	if tr != nil && time.Since(tr.flushed) >= traceFlushEvery {
		tr.w.Flush()
		tr.flushed = time.Now()
	}
}

// waiting says that the trace is written at least every
// traceFlushEvery, also while no thread stops (idleHook): a program that
// runs or waits long without a stop keeps its events if PROFILE is
// killed.
func (tr *traceFile) waiting() (bool, time.Duration, bool) { return true, traceFlushEvery / 2, false }

// idle writes what was booked, when it has waited long enough (idleHook).
func (tr *traceFile) idle() bool {
	tr.flush()
	return false
}

// stopHandled flushes the trace after a stop (handledHook).
func (tr *traceFile) stopHandled(int) { tr.flush() }

// close ends the trace: the run is over and every event booked (whole is
// set), or PROFILE gives up on the run (what was written stays, without
// an end). It warns when the trace was cut or could not be written.
func (tr *traceFile) close(whole bool) {
	if tr == nil || tr.closed {
		return
	}
	tr.closed = true
	var err error
	if whole {
		err = tr.w.Close()
	} else {
		tr.w.Flush()
	}
	if cerr := tr.f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		tr.warn(prf.TraceWrite(tr.path, err))
	case tr.w.Cut():
		tr.warn(prf.TraceCut(tr.path, tr.limit))
	}
}
