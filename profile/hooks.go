package profile

import (
	"slices"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/profile/books"
)

// The hooks: how the parts of a run take part in it. The loop owns the
// threads, the tasks, the signals and the stops; it names no mechanism.
// At each moment of the run that a part may care about, it calls the
// hooks of that moment, in the parts' order. A part takes part in a
// moment by having its hook's method: the lists are found once, by type
// assertion, when the parts are chosen (choose), not at each event.
//
//	moment                 hook            who takes part
//	a module mapped        mechanism       the mechanisms plant it, in order
//	a breakpoint stop      mechanism       offered to each until one claims it
//	a module unmapped      mechanism       each forgets what it planted there
//	a thread born, ended   threadHook      the counters (a block), the books'
//	                                       clocks, the sampler (ended: the
//	                                       reverse order)
//	a thread's exit stop   exitHook        the books' clocks (its time on a
//	                                       CPU read)
//	a child made           childHook       the watch (its SIGCHLD the program's)
//	a vfork and its end    vforkHook       the rings (the child's records),
//	                                       the books in the program (the
//	                                       parent's book kept, put back)
//	the image replaced     execHook        the rings (read a last time), the
//	                                       line trampolines, the
//	                                       breakpoints, the counters, the
//	                                       sampler, the libraries, the watch
//	a stop seen            seenHook        the rings (its records), the
//	                                       books' clocks (the thread's
//	                                       waits), the line trampolines
//	an interrupt's stop,   holdHook        the line trampolines (a sweep
//	a group stop                           holds the thread stopped)
//	a thread let go        releaseHook     the books in the program (the
//	                                       time PROFILE held it)
//	a stop handled         handledHook     the books' clocks (the stop taken
//	                                       out), the trace writer, the line
//	                                       trampolines (a sweep made)
//	the program's end      mechanism,      each adds what it counted
//	                       endHook
//	the run's figures      statsHook       the counters, the books, the
//	                                       sampler (which reads the books')
//	PROFILE waiting        idleHook        the rings (read), the line
//	                                       trampolines (a sweep), the books'
//	                                       clocks (yielding), the sampler
//	                                       (ptrace's rounds), the trace
//	                                       writer, the narrator (first hits)
//
// A new part is its own file(s), with the hooks it needs, a field in
// parts made where the run sets it up (a mechanism: chooseMechanism,
// startCounters), and one line in choose.

// threadHook takes part in the lives of the program's threads.
type threadHook interface {
	// threadBorn is told of thread tid at its first stop, before it
	// runs; foreign marks a process that shares the program's memory
	// but is not the program (a vfork child before its exec).
	threadBorn(tid int, foreign bool) error
	// threadEnded is told that thread tid, or the foreign process tid,
	// has left the program: ended, or gone through exec.
	threadEnded(tid int)
}

// exitHook is told that thread th, of the program or a foreign process,
// is at its exit stop (PTRACE_EVENT_EXIT): the last moment the kernel
// still shows it, in /proc among others. Once it has gone on, it is
// gone (threadHook.threadEnded).
type exitHook interface{ threadExiting(th *thread) }

// vforkHook is told that thread th of the program made a vfork child,
// which runs on its stack in its memory until its exec or exit, and when
// th goes on (its vfork-done stop).
type vforkHook interface {
	vforking(th *thread)
	vforkDone(th *thread)
}

// childHook is told of a child the program made (a clone, fork or vfork
// event), before its first stop: the watch knows it, and the SIGCHLD it
// may send, as the program's.
type childHook interface{ childMade(pid int) }

// execHook is told that the program's image was replaced (exec): what a
// part wrote into the program is gone with it; what it counted stays.
type execHook interface{ execed() }

// seenHook is told of the stop of thread th, known to the tracer,
// before it is handled: what the thread did before it stopped comes
// first (its waits, the records of its ring).
type seenHook interface{ stopSeen(th *thread) }

// handledHook is told that the stop of thread tid has been handled, the
// thread let go or left stopped (the time of the stop taken out of its
// clock; the trace writer writes what was booked).
type handledHook interface{ stopHandled(tid int) }

// releaseHook is told that thread th, stopped, is about to go on: the
// books kept in the program get the time PROFILE held it.
type releaseHook interface{ releasing(th *thread) }

// holdHook may hold a thread stopped where the loop would let it go: a
// sweep of line coverage's jumps, made once no thread runs
// (linesweep_hold.go). interrupted is told that an interrupt of
// PROFILE's stopped thread th, whichever wait took the stop; holds, at
// the loop's own interrupt stop, reports whether the part holds th (the
// loop leaves it stopped, and the part lets it go); parked is told that
// thread tid is in a group stop, left listening.
type holdHook interface {
	interrupted(th *thread)
	holds(th *thread) bool
	parked(tid int)
}

// idleHook is a part's work while PROFILE waits for the next stop: the
// rings read, the ptrace sampler's rounds, a sweep of covered lines, the
// trace written, the narration's first hits. waiting says whether it has
// work now and how often, at most, it wants it done (every; 0: between
// two polls), and whether PROFILE should poll, yielding its CPU, before
// it sleeps (yields: the part's stops come fast, or its records must be
// read soon); a part may yield with no work. idle does the work, and
// reports whether there was any.
type idleHook interface {
	waiting() (now bool, every time.Duration, yields bool)
	idle() bool
}

// endHook is told that the run has ended, before the mechanisms collect
// their counts: the last of what the program wrote is read.
type endHook interface{ ended() }

// statsHook gives the run's figures what the part measured (the .pbo's
// statistics), once the run has ended.
type statsHook interface{ stats(s *datafile.Stats) }

// parts are the parts of a run, in order, and their hooks.
type parts struct {
	// The parts, nil where the run has none: the mechanisms (the entries'
	// trampolines, the exits' patches, the rings, the lines' trampolines,
	// the breakpoints), the planting engine and the system calls it runs
	// in the program, the shared libraries, the counters, the books, the
	// sampler, the trace writer and the watch on what the program does
	// behind PROFILE's back.
	entries  *entryTrampolines
	exits    *exitPatches
	rings    *rings
	ledgers  *ledgers
	lines    *lineTrampolines
	bp       *breakpoints
	plant    *planter
	calls    *injector
	modules  *modules
	counters *counters
	books    *books.Books
	sampling *sampler
	trace    *traceFile
	watch    watch
	hooks
}

// hooks are the lists of the parts that take part in each moment, in
// order (choose).
type hooks struct {
	mechs   []mechanism
	threads []threadHook
	exiting []exitHook
	execs   []execHook
	vforks  []vforkHook
	kids    []childHook
	seen    []seenHook
	handled []handledHook
	release []releaseHook
	holders []holdHook
	ends    []endHook
	stats   []statsHook
	idlers  []idleHook
	// idleWork is the idlers' work as one function, made once (idleAll).
	idleWork func() bool
}

// choose makes the run's parts from the mechanisms and parts set up so
// far: at the start of the run, when the mechanisms are chosen for the
// program (plantAll), and when one gives up (noRings). It is the one
// place that says which parts a run has, and in what order.
func (t *tracer) choose() {
	var all []any
	add := func(ok bool, part any) {
		if ok {
			all = append(all, part)
		}
	}
	// The mechanisms, in the order a breakpoint stop is offered to
	// them (mechanism.go).
	if e := t.parts.entries; e != nil {
		e.env.counters, e.env.timer = t.parts.counters, t.parts.timer() // (nil once the rings gave up)
		e.env.leaves = e.env.timer == nil && t.parts.books == nil && t.parts.exits == nil
	}
	add(t.parts.entries != nil, t.parts.entries)
	add(t.parts.exits != nil, t.parts.exits)
	add(t.parts.rings != nil, t.parts.rings)
	if t.parts.lines != nil {
		t.parts.lines.env.counters = t.parts.counters // (made after the lines are numbered)
	}
	add(t.parts.lines != nil, t.parts.lines)
	if bp := t.parts.bp; bp != nil {
		bp.env.books, bp.env.rings, bp.env.modules = t.parts.books, t.parts.rings, t.parts.modules // (nil where the run has none)
		bp.env.timer, bp.env.ledgers = t.parts.timer(), t.parts.ledgers
	}
	add(true, t.parts.bp)
	// The parts that are no mechanism.
	if t.parts.counters != nil {
		t.parts.counters.env.rings = t.parts.rings // (nil once they gave up)
	}
	add(t.parts.counters != nil, t.parts.counters)
	if t.parts.books != nil {
		// (After the counters: a thread's books open once it has its
		// block, and the books' call depth is the one kept; before the
		// sampler, which reads the books' figures.) Function timing
		// reads the threads' times on a CPU as well (cputime.go).
		if m := t.plan.Method; m.IsTiming() && m.IsFunction() {
			t.clocks.lives.cpu.proc = t.proc
		}
		add(true, &timedRun{clocks: &t.clocks, threads: t.threads, books: t.parts.books, rings: t.parts.rings, plan: t.plan})
	}
	// (After the books' clocks: a thread's book is read, and what its
	// code cost it known, before they close its clock; its stops' claims
	// are its code's own.)
	add(t.parts.ledgers != nil, t.parts.ledgers)
	if t.parts.ledgers != nil && t.clocks.lives.cpu.proc != nil {
		t.clocks.lives.cpu.opened = clockPages{t.parts.ledgers}.opened
	}
	// (The books in the program have a sampler too: of PROFILE's own
	// code's share, owncode.go.)
	t.parts.sampling = t.parts.ownCodeSampling(samplerEnv{plan: t.plan, threads: t.threads, warn: t.cfg.Warn})
	if l := t.parts.ledgers; l != nil {
		l.ownCode = t.parts.sampling.ownCode // (nil-safe: ok is false where no sampler runs)
	}
	if s := t.parts.sampling; s != nil {
		s.env.proc, s.env.counters, s.env.own = t.proc, t.parts.counters, t.parts.ownMaps
	}
	add(t.parts.sampling != nil, t.parts.sampling)
	add(t.parts.trace != nil, t.parts.trace)
	add(t.parts.modules != nil, t.parts.modules)
	add(true, &t.parts.watch)
	for _, o := range t.told {
		// (An observer may take part too: the narration reads the
		// counters for first hits while PROFILE waits.)
		add(true, o)
	}
	t.parts.hooks = hooksOf(all)
	t.parts.idleWork = t.parts.idleAll
}

// hooksOf sorts parts into the lists of the hooks each has.
func hooksOf(all []any) hooks {
	var p hooks
	for _, part := range all {
		if m, ok := part.(mechanism); ok {
			p.mechs = append(p.mechs, m)
		}
		if h, ok := part.(threadHook); ok {
			p.threads = append(p.threads, h)
		}
		if h, ok := part.(exitHook); ok {
			p.exiting = append(p.exiting, h)
		}
		if h, ok := part.(execHook); ok {
			p.execs = append(p.execs, h)
		}
		if h, ok := part.(childHook); ok {
			p.kids = append(p.kids, h)
		}
		if h, ok := part.(vforkHook); ok {
			p.vforks = append(p.vforks, h)
		}
		if h, ok := part.(seenHook); ok {
			p.seen = append(p.seen, h)
		}
		if h, ok := part.(handledHook); ok {
			p.handled = append(p.handled, h)
		}
		if h, ok := part.(releaseHook); ok {
			p.release = append(p.release, h)
		}
		if h, ok := part.(holdHook); ok {
			p.holders = append(p.holders, h)
		}
		if h, ok := part.(endHook); ok {
			p.ends = append(p.ends, h)
		}
		if h, ok := part.(statsHook); ok {
			p.stats = append(p.stats, h)
		}
		if h, ok := part.(idleHook); ok {
			p.idlers = append(p.idlers, h)
		}
	}
	return p
}

// tell calls f for each hook of hs, in order.
func tell[H any](hs []H, f func(H)) {
	for _, h := range hs {
		f(h)
	}
}

// threadBorn tells the parts of thread tid's birth.
func (p *hooks) threadBorn(tid int, foreign bool) error {
	for _, h := range p.threads {
		if err := h.threadBorn(tid, foreign); err != nil {
			return err
		}
	}
	return nil
}

// threadEnded tells the parts that thread tid has left the program, in
// the reverse order of its birth: what a part set up for the thread is
// still there for those told before it (the books read the thread's
// last records from the block the counters then take back).
func (p *hooks) threadEnded(tid int) {
	for i := len(p.threads) - 1; i >= 0; i-- {
		p.threads[i].threadEnded(tid)
	}
}

// threadExiting tells the parts that thread th is at its exit stop.
func (p *hooks) threadExiting(th *thread) { tell(p.exiting, func(h exitHook) { h.threadExiting(th) }) }

// childMade tells the parts of a child the program made.
func (p *hooks) childMade(pid int) { tell(p.kids, func(h childHook) { h.childMade(pid) }) }

// vforking tells the parts that thread th made a vfork child.
func (p *hooks) vforking(th *thread) { tell(p.vforks, func(h vforkHook) { h.vforking(th) }) }

// vforkDone tells the parts that thread th's vfork child let its memory
// go.
func (p *hooks) vforkDone(th *thread) { tell(p.vforks, func(h vforkHook) { h.vforkDone(th) }) }

// execed tells the parts that the program's image was replaced.
func (p *hooks) execed() { tell(p.execs, execHook.execed) }

// stopSeen tells the parts of thread th's stop, before it is handled.
func (p *hooks) stopSeen(th *thread) { tell(p.seen, func(h seenHook) { h.stopSeen(th) }) }

// stopHandled tells the parts that thread tid's stop was handled.
func (p *hooks) stopHandled(tid int) { tell(p.handled, func(h handledHook) { h.stopHandled(tid) }) }

// releasing tells the parts that thread th is about to go on.
func (p *hooks) releasing(th *thread) { tell(p.release, func(h releaseHook) { h.releasing(th) }) }

// interrupted tells the parts that an interrupt stopped thread th.
func (p *hooks) interrupted(th *thread) { tell(p.holders, func(h holdHook) { h.interrupted(th) }) }

// holds reports whether a part holds thread th at its interrupt's stop.
func (p *hooks) holds(th *thread) bool {
	return slices.ContainsFunc(p.holders, func(h holdHook) bool { return h.holds(th) })
}

// parked tells the parts that thread tid is in a group stop.
func (p *hooks) parked(tid int) { tell(p.holders, func(h holdHook) { h.parked(tid) }) }

// ended tells the parts that the run has ended, then has the mechanisms
// add what they counted to res.
func (p *hooks) ended(res *Result) {
	tell(p.ends, endHook.ended)
	tell(p.mechs, func(m mechanism) { m.collect(res) })
}

// addStats has the parts give the run's figures what they measured.
func (p *hooks) addStats(s *datafile.Stats) { tell(p.stats, func(h statsHook) { h.stats(s) }) }

// waiting sums up the idlers' needs while PROFILE waits for the next
// stop: whether any has work now, the shortest period asked for (0: none
// asked one), and whether any wants PROFILE to poll, yielding, first.
func (p *hooks) waiting() (working bool, every time.Duration, yields bool) {
	for _, h := range p.idlers {
		now, e, y := h.waiting()
		yields = yields || y
		if !now {
			continue
		}
		working = true
		if e > 0 && (every == 0 || e < every) {
			every = e
		}
	}
	return working, every, yields
}

// idleAll does the work of the idlers that have work now, in order, and
// reports whether there was any.
func (p *hooks) idleAll() bool {
	did := false
	for _, h := range p.idlers {
		if now, _, _ := h.waiting(); now {
			did = h.idle() || did
		}
	}
	return did
}
