package profile

import "github.com/sourceprofiler/sprof/profile/books"

// The holds: the time PROFILE keeps a thread stopped is not the
// program's. From the moment the thread stopped (an event of the book
// code's time, or, for any other stop, when PROFILE saw it less a stop's
// cost) to the moment PROFILE lets it go, the hold is added to its book
// (BookHeld), and its next exit takes it out of the calls open.

// stopSeen notes when PROFILE saw thread th's stop (seenHook), for
// releasing.
func (l *ledgers) stopSeen(th *thread) {
	if _, ok := l.seen[th.tid]; !ok {
		l.seen[th.tid] = seenStop{at: l.clocks.waited}
	}
}

// seenStop is when PROFILE saw a thread's stop, at, and whether the stop
// was at an event of the book code, atEvent (inCode.pass): its hold then
// starts at the event's time, which the code read just before it
// stopped.
type seenStop struct {
	at      int64
	atEvent bool
}

// releasing adds to the book of thread th, about to go on, the time
// PROFILE held it since it saw it stop: from a stop's cost before it
// was seen (what the thread lost before PROFILE saw it, measured at
// start-up) to now (releaseHook). Each of the thread's stops is added
// once, as it goes on, and no other: an exit takes out what was held
// since its entry. A stop PROFILE single-steps the thread out of its
// code from is one hold, added as it goes on after the steps: the code
// it steps through has read the counter before the stop (leaveAtStop).
// The hold is noted in the thread too (bookHold), for its own clock to
// take out the same (clocks.charge). A thread past its exit stop, whose
// life ended there, is held in no book.
func (l *ledgers) releasing(th *thread) {
	stop, ok := l.seen[th.tid]
	delete(l.seen, th.tid)
	seen := stop.at
	if !ok || th.foreign || l.counters == nil || l.scale == 0 || th.ended != 0 {
		return // (nothing timed, or a life ended at its exit stop: no hold)
	}
	p, g, ok := l.heldBooks(th)
	if !ok {
		return
	}
	lost := l.lost(th, p, g, stop)
	clockPages{l}.settle(th, p, l.now(seen)-uint64(lost), false) // (a wait the code saw, its event undone)
	held := uint64(max(l.clocks.clock()-seen+lost, 0))
	p.SetHeld(p.Held() + held)
	th.bookHold = bookHold{from: seen - lost, seen: seen}
	if g != nil {
		l.gos.hold(g, held)
	}
	clockPages{l}.released(th, p)
}

// threadExiting settles the waits of thread th at its exit stop
// (exitHook), where its life ends (clocks.stopped): the kernel shows its
// time on a CPU until it is gone, and the book code runs no more.
func (l *ledgers) threadExiting(th *thread) {
	if p, _, ok := l.heldBooks(th); ok && !th.foreign {
		clockPages{l}.settle(th, p, l.now(l.clocks.stopped(th)), true)
	}
}

// heldBooks returns the book of thread th's block, checked, and the
// book of the goroutine it runs, if any: the books a hold of th goes to.
func (l *ledgers) heldBooks(th *thread) (p, g *books.ProgramBook, ok bool) {
	b, ok := l.blockOf[th.tid]
	p = l.open[b]
	if !ok || p == nil || b == 0 {
		return nil, nil, false
	}
	l.check(p)
	return p, l.gos.held(th, b), true
}

// lost returns the time thread th, seen stopped at seen, lost before
// PROFILE saw it, its book p's and its goroutine's g (or nil).
func (l *ledgers) lost(th *thread, p, g *books.ProgramBook, stop seenStop) int64 {
	// (What the thread lost before PROFILE saw it is a stop's cost,
	// measured at start-up; but no more than the time since its last
	// event, its goroutine's where it runs one: the cost is a
	// breakpoint's, and a busy machine makes it long, where a stop a
	// system call makes, a signal raised, may be seen at once. A stop at
	// an event loses all the time since: the event is its start, and a
	// busy machine's longer stop is not the program's.)
	last := p.LastTime()
	if g != nil {
		last = max(last, g.LastTime())
	}
	since := max(int64(l.now(stop.at)-last), 0)
	if stop.atEvent {
		return since
	}
	return min(l.clocks.stopCost(th), since)
}
