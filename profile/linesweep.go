// Line coverage costs its first hit only: a line site's jump is taken out
// once every line its trampoline counts is covered, its original bytes
// written back, so that the program runs its own code there from then
// on. Code is rewritten only while no thread of the program can run it:
// every thread stopped for the purpose (a sweep). While PROFILE waits,
// it reads the counters now and then (shared memory, no stop); when some
// patch's lines are all covered, it interrupts every thread, holds each
// at its interrupt's stop until all are stopped (linesweep_hold.go),
// writes back in one go every covered patch no stopped thread is inside
// of, and lets them all go. The trampolines stay: a thread stopped in
// one runs on through it, and back into the program's own code. A
// program of n threads is looked at every n times sweepEvery, so that
// its sweeps cost it about what a program of one thread pays, and each
// look that finds nothing new covered doubles the time to the next, up
// to sweepGapMost. While another process shares the memory (a vfork
// child), no sweep is made. (Rewriting code while threads run it, as
// the kernel's text_poke_bp does, needs every CPU that runs them
// serialised between the steps, membarrier's in the program itself:
// stopping the threads is simpler, and cheap at a few sweeps a run.)

package profile

import (
	"slices"
	"time"
)

// sweepEvery is how often PROFILE looks for covered patches in a program
// of one thread, and the least time between two of its sweeps; sweepGap
// scales it with the threads.
const sweepEvery = 5 * time.Millisecond

// sweepGapMost is the longest time between two looks, however many
// threads the program has and however long nothing was found.
const sweepGapMost = 200 * time.Millisecond

// sweepGap is the least time between two looks for covered patches in a
// program of n threads: a sweep stops every thread, so the looks are
// made n times rarer, and the program pays about one thread's stop every
// sweepEvery, whatever its threads.
func sweepGap(n int) time.Duration {
	return min(sweepEvery*time.Duration(max(n, 1)), sweepGapMost)
}

// gap is the time between two looks of s in a program of n threads:
// sweepGap, doubled at each look that found nothing covered since the
// last sweep (a look reads every live patch's counters in every thread's
// block: late in a run, when few lines are covered for the first time,
// most looks find nothing), up to sweepGapMost.
func (s *sweeper) gap(n int) time.Duration {
	return min(sweepGap(n)<<min(s.quiet, 8), sweepGapMost)
}

// coverPatch is a line coverage jump that may be taken out: its
// trampoline (with the patch), the counters of its sites, and the punned
// jumps whose last bytes are its own (each holds it in place until taken
// out itself).
type coverPatch struct {
	tr       *tramp
	counters []int
	// pins counts the punned jumps that share this patch's bytes; unpins
	// are the patches this one, a punned jump, shares bytes with.
	pins   int
	unpins []*coverPatch
}

// sweeper is line coverage's taking out of covered jumps.
type sweeper struct {
	live []*coverPatch
	// at is where each live patch is, for pinning (by site).
	at map[uint64]*coverPatch
	// hold is the sweep under way, its threads stopping
	// (linesweep_hold.go); nil between sweeps. looked is when the
	// counters were last read (in the future after a sweep given up).
	hold   *sweepHold
	looked time.Time
	// swept counts the jumps taken out, sweeps the sweeps made, gaveUp
	// those given up (a thread did not stop in time); quiet the looks
	// since the last that found a patch covered.
	swept, sweeps, gaveUp, quiet int
	// sums are the lines' counters summed over the blocks, as the last
	// look read them (sumCounters).
	sums []uint64
	// clock is the time (time.Now; a test's own).
	clock func() time.Time
}

// now is the time on the sweeper's clock.
func (s *sweeper) now() time.Time {
	if s.clock != nil {
		return s.clock()
	}
	return time.Now()
}

// add notes a coverage patch: its trampoline tr and its sites' counters;
// shares lists the sites of the patches a punned jump shares bytes with,
// added before it.
func (s *sweeper) add(tr *tramp, counters []int, shares []uint64) {
	cp := &coverPatch{tr: tr, counters: counters}
	if s.at == nil {
		s.at = map[uint64]*coverPatch{}
	}
	for _, a := range shares {
		if o := s.at[a]; o != nil {
			o.pins++
			cp.unpins = append(cp.unpins, o)
		}
	}
	s.at[tr.patch.Site] = cp
	s.live = append(s.live, cp)
}

// forget drops the patches in [lo, hi), gone with their module.
func (s *sweeper) forget(lo, hi uint64) {
	live := s.live[:0]
	for _, cp := range s.live {
		if cp.tr.patch.Site >= lo && cp.tr.patch.Site < hi {
			delete(s.at, cp.tr.patch.Site)
			continue
		}
		live = append(live, cp)
	}
	clear(s.live[len(live):])
	s.live = live
}

// due reports whether some live patch, held by no other, is covered, by
// the counters the last look read.
func (s *sweeper) due() bool {
	return slices.ContainsFunc(s.live, func(cp *coverPatch) bool { return cp.pins == 0 && s.covered(cp) })
}

// covered reports whether every counter of cp is set, in any thread's
// block, by the counters the last look read (what a vfork child counted
// left out, as the run's counts leave it).
func (s *sweeper) covered(cp *coverPatch) bool {
	for _, k := range cp.counters {
		if k >= len(s.sums) || s.sums[k] == 0 {
			return false
		}
	}
	return true
}

// look reads the lines' counters into the sweeper (sums).
func (lt *lineTrampolines) look() {
	lt.sweep.sums = sumCounters(lt.env.counters, lt.counters(), lt.sweep.sums)
}

// sweepIdle is PROFILE's work while it waits, in line coverage: with a
// sweep under way, it asks again the threads that have not stopped, or
// gives the sweep up (settle); else, every gap, when some thread runs,
// no other process shares the memory and some live patch is covered, it
// begins a sweep: every thread is interrupted. It reports whether it
// began one.
func (lt *lineTrampolines) sweepIdle() bool {
	e, s := &lt.env, lt.sweep
	if s.hold != nil {
		lt.settle()
		return false
	}
	if len(s.live) == 0 || s.now().Sub(s.looked) < s.gap(len(e.threads)) {
		return false
	}
	s.looked = s.now()
	if sharesMemory(e.threads) || !anyRuns(e.threads) {
		return false
	}
	if lt.look(); !s.due() {
		s.quiet++
		return false
	}
	s.quiet = 0
	s.begin(e)
	return true
}

// sweepNow takes out, every thread of the program stopped, the jumps
// whose lines are all covered, but for one that a stopped thread's PC
// (pcs) is inside of, after its first byte: the original bytes are
// written back, and the patches are dropped from those the end of the
// run checks. A jump that leans on another goes first, and the other
// in the same sweep. It returns how many it took out.
func (lt *lineTrampolines) sweepNow(pcs []uint64) int {
	e, s := &lt.env, lt.sweep
	out := map[uint64]bool{}
	lt.look()
	for changed := true; changed; {
		changed = false
		live := s.live[:0]
		for _, cp := range s.live {
			p := &cp.tr.patch
			if cp.pins > 0 || !s.covered(cp) || inside(p.Site, p.Written(), pcs) {
				live = append(live, cp)
				continue
			}
			delete(s.at, p.Site)
			if err := (*e.mem).WriteMem(p.Site, p.Orig[:p.Written()]); err != nil {
				// (Left in, and no longer looked at: the end of the run
				// checks it as written.)
				continue
			}
			for _, o := range cp.unpins {
				o.pins--
				changed = true
			}
			out[p.Site] = true
			s.swept++
		}
		clear(s.live[len(live):])
		s.live = live
	}
	if len(out) > 0 {
		w := e.watch.written[:0]
		for _, x := range e.watch.written {
			if !out[x.addr] {
				w = append(w, x)
			}
		}
		e.watch.written = w
	}
	return len(out)
}

// inside reports whether any of pcs is among the n bytes at site, after
// the first: a thread stopped there would go on in the middle of what
// is written back.
func inside(site uint64, n int, pcs []uint64) bool {
	return slices.ContainsFunc(pcs, func(pc uint64) bool { return pc > site && pc < site+uint64(n) })
}

// sharesMemory reports whether another process shares the program's memory
// (a vfork child before its exec): it runs the code too, and is not
// stopped for a sweep.
func sharesMemory(threads map[int]*thread) bool {
	for _, th := range threads {
		if th.foreign {
			return true
		}
	}
	return false
}

// anyRuns reports whether some thread of threads may still run code:
// one not yet at its exit stop. (Once none may, no sweep is worth its
// stops.)
func anyRuns(threads map[int]*thread) bool {
	for _, th := range threads {
		if !th.exiting {
			return true
		}
	}
	return false
}

// waiting says whether a sweep may be due while PROFILE waits for stops:
// in line coverage, with a jump still live, looked for every fifth of
// the gap between looks (idleHook); with a sweep under way, PROFILE
// polls for its threads' stops, yielding its CPU, as long as they take
// to come: every thread waits for the last. (Sleeping a millisecond
// between polls held zstd's four threads three times as long, 100 ms
// in 18 sweeps of a 5 s run on a busy machine against 30 ms.)
func (lt *lineTrampolines) waiting() (bool, time.Duration, bool) {
	s := lt.sweep
	switch {
	case s == nil:
		return false, 0, false
	case s.hold != nil:
		return true, time.Millisecond, true
	}
	return len(s.live) > 0, s.gap(len(lt.env.threads)) / 5, false
}

// idle looks for a sweep due, or sees to the one under way (idleHook).
func (lt *lineTrampolines) idle() bool { return lt.sweepIdle() }

// execed forgets the coverage jumps, gone with the image (execHook), and
// the sweep under way: the threads it held are gone with it.
func (lt *lineTrampolines) execed() {
	if s := lt.sweep; s != nil {
		clear(s.at)
		s.live, s.hold = nil, nil
	}
}
