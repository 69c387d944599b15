package profile

// The books' clocks as a part of a run (hooks.go): what they are told
// of the run's threads and stops.

import (
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/profile/books"
)

// timedRun is the books' clocks as a part of a run that keeps books
// (hooks.go): what they read of the run, as choose wired it.
type timedRun struct {
	clocks  *clocks
	threads map[int]*thread
	books   *books.Books
	rings   *rings
	plan    *datafile.Plan
}

// threadBorn opens the books of thread tid, the program's (threadHook).
func (r *timedRun) threadBorn(tid int, foreign bool) error {
	if th := r.threads[tid]; th != nil && !foreign {
		r.clocks.openThreadBooks(th, r.books)
	}
	return nil
}

// threadEnded closes the books of thread tid (threadHook). Its time on
// a CPU was read at its exit stop, if it had one: gone, it is read no
// more.
func (r *timedRun) threadEnded(tid int) {
	r.clocks.lives.cpu.forget(tid)
	if th := r.threads[tid]; th != nil {
		r.clocks.closeThreadBooks(th, r.threads, r.books, r.rings)
	}
}

// threadExiting ends the life of thread th at its exit stop (exitHook):
// its time on a CPU read now, and its clock stopped (clocks.stopped), at
// its first exit stop (a thread that calls exec takes its process's
// first thread's ID, and that thread's exit stop before it).
func (r *timedRun) threadExiting(th *thread) {
	r.clocks.lives.cpu.close(th)
	if !th.foreign && th.ended == 0 {
		th.ended = r.clocks.stopped(th)
	}
}

// waiting says whether PROFILE polls for stops yielding its CPU before it
// sleeps, as timing with breakpoints does (yielding): within a yield
// window of the last stop at a breakpoint it booked, where the next is
// likely soon. Other stops do not make it poll: the stops of the book
// code for a thread back on its CPU (ledger_waits.go) come every few
// milliseconds, and PROFILE polling between them would take a CPU,
// whose own threads, woken, would then take the program off its CPU
// more often. No work of the books' (idleHook).
func (r *timedRun) waiting() (bool, time.Duration, bool) {
	c := r.clocks
	return false, 0, c.yielding && c.clock()-c.booked < int64(yieldWindow)
}

// idle does nothing: the books have no work while PROFILE waits.
func (r *timedRun) idle() bool { return false }

// stopSeen settles thread th's wait before its stop (seenHook). (The
// rings, when they read records of its, settle it first.)
func (r *timedRun) stopSeen(th *thread) { r.clocks.settleWait(th) }

// stopHandled takes thread tid's stop out of its clock, and reads the
// waits due (handledHook).
func (r *timedRun) stopHandled(tid int) {
	r.clocks.charge(r.threads[tid], r.rings)
	r.clocks.waitTick(r.threads, r.books)
}

// stats gives the run's figures what the books kept (statsHook).
func (r *timedRun) stats(s *datafile.Stats) {
	r.clocks.timingStats(s, r.plan, r.threads, r.books, r.rings)
}
