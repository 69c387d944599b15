// Line coverage costs its first hit only: a line site's jump is taken out
// once every line its trampoline counts is covered, its original bytes
// written back, so that the program runs its own code there from then
// on. Code can be rewritten safely only while no thread runs it, and
// PROFILE rewrites it only in a program of one thread, stopped for the
// purpose (a sweep): every few milliseconds while it waits, it reads the
// counters (shared memory, no stop), and when some patch's lines are all
// covered it interrupts the thread and, at that stop, writes them back
// in one go. A program of several threads keeps its jumps: a covered
// line then costs its jump and its trampoline's few instructions.

package profile

import "time"

// sweepEvery is how often PROFILE looks for covered patches while it
// waits, and the least time between two sweeps.
const sweepEvery = 5 * time.Millisecond

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
	// wanted is set once the thread was interrupted for a sweep; looked is
	// when the counters were last read.
	wanted bool
	looked time.Time
	swept  int
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

// covered reports whether every counter of cp is set, in any thread's
// block.
func (c *counters) covered(cp *coverPatch) bool {
	for _, k := range cp.counters {
		if c.count(k) == 0 {
			return false
		}
	}
	return true
}

// count is counter k summed over the blocks in use.
func (c *counters) count(k int) uint64 {
	mem := c.shared.Bytes()
	n := uint64(0)
	for b := 1; b < c.layout.Counted(c.next); b++ {
		n += c.layout.Count(mem, b, k)
	}
	return n
}

// sweepIdle is PROFILE's work while it waits, in line coverage: every
// sweepEvery, when the program has one thread and some live patch is
// covered, the thread is interrupted for a sweep (sweepStop). It reports
// whether it did anything.
func (lt *lineTrampolines) sweepIdle() bool {
	e, s := &lt.env, lt.sweep
	if s.wanted || len(s.live) == 0 || len(e.threads) != 1 || time.Since(s.looked) < sweepEvery {
		return false
	}
	s.looked = time.Now()
	for _, cp := range s.live {
		if cp.pins == 0 && e.counters.covered(cp) {
			for tid := range e.threads {
				if e.proc.interrupt(tid) == nil {
					s.wanted = true
				}
			}
			return true
		}
	}
	return false
}

// sweepStop takes out, at the stop an interrupt for a sweep brought, the
// jumps whose lines are all covered, as long as the program has that one
// thread: the original bytes are written back, and the patches are
// dropped from those the end of the run checks.
func (lt *lineTrampolines) sweepStop() {
	e, s := &lt.env, lt.sweep
	s.wanted = false
	if len(e.threads) != 1 {
		return
	}
	out := map[uint64]bool{}
	for changed := true; changed; {
		changed = false
		live := s.live[:0]
		for _, cp := range s.live {
			if cp.pins > 0 || !e.counters.covered(cp) {
				live = append(live, cp)
				continue
			}
			p := &cp.tr.patch
			if err := (*e.mem).WriteMem(p.Site, p.Orig[:p.Written()]); err != nil {
				live = append(live, cp)
				continue
			}
			for _, o := range cp.unpins {
				o.pins--
				changed = true
			}
			delete(s.at, p.Site)
			out[p.Site] = true
			s.swept++
		}
		clear(s.live[len(live):])
		s.live = live
	}
	e.told.note(sweptEvent{len(out)})
	if len(out) > 0 {
		w := e.watch.written[:0]
		for _, x := range e.watch.written {
			if !out[x.addr] {
				w = append(w, x)
			}
		}
		e.watch.written = w
	}
}

// waiting says whether a sweep may be due while PROFILE waits for stops:
// in line coverage, in a program of one thread, with a jump still live;
// every millisecond it looks (idleHook).
func (lt *lineTrampolines) waiting() (bool, time.Duration, bool) {
	s := lt.sweep
	return s != nil && len(s.live) > 0 && len(lt.env.threads) == 1, time.Millisecond, false
}

// idle interrupts the thread for a sweep, when one is due (idleHook).
func (lt *lineTrampolines) idle() bool { return lt.sweepIdle() }
