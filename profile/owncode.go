// PROFILE's own code in the program: the share of the program's CPU time
// its threads spend in the code PROFILE wrote into it, measured by the
// sampler (sampling.go). Function timing with the books in the program
// (ledger.go) runs code at every timed entry and exit, inside the
// intervals it measures; its cost calibrated alone, at start-up, is far
// below what it costs in the run, where its counter reads and stores
// contend with the program's. The sampler measures that cost in the run:
// the samples whose program counter lies in PROFILE's code, of all those
// of the program's threads.
//
// PROFILE's code is exactly the executable areas it maps in the program
// (planter.mmap, which notes each in planter.ownMaps): the areas next to
// the modules with their trampolines and slots, the rooms' pages, the
// books' closer's page, the calibration's code and the counters' name
// page. What it writes over the program's own code (the entries' jumps,
// the hops in its padding, the breakpoints) is not counted: a jump or a
// trap, where the program's code was. The program's own instructions a
// trampoline carries out of line (a function's first ones, its return)
// are counted: a share of the samples in PROFILE's code, some 2 % on Lua,
// that is the program's work.

package profile

import (
	"cmp"
	"slices"
	"time"
)

// newOwnCodeSampler returns the sampler of a function-timing run whose
// books are kept in the program: every DefaultInterval of each thread's
// CPU time, by perf alone, it samples for the share of PROFILE's own code
// (ownCode), and gives the run's figures nothing. (The interval is
// function sampling's default, whose cost to the program is known: the
// kernel's interrupt, a fraction of a percent; it gives a run of a
// tenth of a second a hundred samples.)
func newOwnCodeSampler(env samplerEnv) *sampler {
	s := newSampler(env, DefaultInterval)
	s.timing = true
	return s
}

// ownCodeSampling returns the run's sampler as the parts p now are
// (choose): function sampling's where the plan samples; where the books
// are kept in the program for timing, the one sampling PROFILE's own
// code, made once, with env; else none (the books in the program given
// up take it with them).
func (p *parts) ownCodeSampling(env samplerEnv) *sampler {
	s := p.sampling
	switch {
	case s != nil && !s.timing:
		return s
	case p.ledgers == nil || !env.plan.Method.IsTiming():
		return nil
	case s != nil:
		return s
	}
	return newOwnCodeSampler(env)
}

// ownMaps returns the executable areas PROFILE mapped in the program, as
// [start, size] (planter.ownMaps), as they are now.
func (p *parts) ownMaps() [][2]uint64 {
	if p.plant == nil {
		return nil
	}
	return p.plant.ownMaps
}

// ownCode returns the samples of the run's threads taken so far in
// PROFILE's own code and in all, and the sampling interval; ok is
// false where no sampler ran (perf refused, not a timing run...), or
// where a thread went unsampled (the kernel refused its event: the
// samples are then not of every thread's calls). The samples the rings
// lost (full before PROFILE read them) are counted as the others fell. It
// reads the rings up to now first, with the goroutine that reads them
// kept out: it may be called before the sampler's own end (the ledgers'
// end hook comes first), and after it, when the tally is what it was at
// the end. The samples of function sampling's ptrace sampler are weighed
// by the intervals each stands for, as its figures are.
func (s *sampler) ownCode() (own, all uint64, interval time.Duration, ok bool) {
	if s == nil {
		return 0, 0, 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return 0, 0, 0, false
	}
	places := s.places.Load()
	for _, ps := range s.perf {
		s.drainOne(ps, places)
	}
	if s.partial {
		return 0, 0, 0, false
	}
	own, all = s.tally.own, s.tally.all
	if lost := s.tally.lost; lost > 0 && all > 0 {
		own += uint64(float64(own) * float64(lost) / float64(all))
		all += lost
	}
	return own, all, s.interval, true
}

// withOwn returns a table whose own code is the areas maps, as [start,
// size], in place of p's; p is not changed.
func (p *placeTable) withOwn(maps [][2]uint64) *placeTable {
	q := *p
	q.own = slices.Clone(maps)
	slices.SortFunc(q.own, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	return &q
}

// inOwn reports whether pc is in PROFILE's own code. (The areas do not
// overlap: each is a mapping of its own.)
func (p *placeTable) inOwn(pc uint64) bool {
	i, found := slices.BinarySearchFunc(p.own, pc, func(a [2]uint64, pc uint64) int { return cmp.Compare(a[0], pc) })
	if !found {
		i--
	}
	return i >= 0 && pc-p.own[i][0] < p.own[i][1]
}
