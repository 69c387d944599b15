// Progress: what a long run has done so far, for a status line.

package profile

import (
	"os"
	"time"

	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// Progress is what a run has done so far (Config.Progress).
type Progress struct {
	// Elapsed is the time since the program started, or since PROFILE
	// attached.
	Elapsed time.Duration
	// Hits counts the hits so far: breakpoint stops, and the in-process
	// counters (calls, or passes of lines) as they read now.
	Hits uint64
	// InProcess and Breakpoints count the sites planted each way.
	InProcess, Breakpoints int
}

const (
	// progressAfter is how long a run goes before its first progress:
	// a short run shows none.
	progressAfter = 2 * time.Second
	// progressEvery is how often it is told after that.
	progressEvery = 500 * time.Millisecond
)

// progress tells Config.Progress how the run goes, at most every
// progressEvery, from progressAfter on. It runs on the tracer's thread,
// between stops and while it waits.
func (t *tracer) progress() {
	if t.cfg.Progress == nil {
		return
	}
	now := time.Now()
	if now.Sub(t.status.start) < progressAfter || now.Sub(t.status.last) < progressEvery {
		return
	}
	t.status.last = now
	p := Progress{Elapsed: now.Sub(t.status.start), InProcess: len(t.parts.watch.written)}
	for _, s := range t.parts.bp.sites {
		if !s.rendezvous {
			p.Breakpoints++
		}
	}
	hits := t.counted.hits
	if t.parts.books != nil {
		hits = t.parts.books.Figures().Hits // (timing, /SF, /AT: the calls booked)
	}
	for _, n := range hits {
		p.Hits += n
	}
	if c := t.parts.counters; c != nil {
		switch {
		case t.parts.lines != nil:
			lt := t.parts.lines
			for k, n := range c.totals(len(lt.lines)) {
				p.Hits += n * uint64(len(lt.lines[k]))
			}
		case t.plan.Method.IsFunction() && t.parts.rings == nil:
			for _, n := range c.totals(t.plan.NumItems()) {
				p.Hits += n
			}
		}
	}
	t.cfg.Progress(p)
}

// waitTelling is wait for a run that tells its progress, or is attached:
// the parts' idle work (every, at most, as they ask: idleHook), the
// signals given back and the progress told every few
// milliseconds, until the next stop, or the end of an attached run's
// window (ptrace.ErrQuit). It polls as long as the run's own way of
// waiting would: spin, or where a part yields, yieldWindow; then it waits
// for the next stop's SIGCHLD.
func (t *tracer) waitTelling(spin, every time.Duration, yields bool) (int, ptrace.WaitStatus, error) {
	tell := 20 * time.Millisecond
	if every > 0 {
		tell = min(tell, every)
	}
	idle := func() bool {
		work := t.parts.idleWork() // (the trace written among them)
		t.signals.requeuedIdle(t.proc, t.pid)
		t.progress()
		return work
	}
	var quit chan struct{}
	if t.attach != nil {
		quit = t.attach.quit
	}
	limit := spin
	if yields {
		limit = yieldWindow
	}
	return t.proc.wait(quitWait(limit, tell, idle, quit))
}

// IsTerminal reports whether f is a terminal, where PROFILE shows its
// progress.
func IsTerminal(f *os.File) bool { return ptrace.IsTerminal(f) }
