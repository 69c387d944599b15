package profile

// The run's total time, which the report's percentages are of
// (docs/linux.md, "Timing"): elapsed for one thread, the threads' lives
// added up where they ran side by side.

import "github.com/sourceprofiler/sprof/profile/books"

// elapsed is the run's total time: from its first thread's start to its
// last thread's end, less the time PROFILE held any thread (the union of
// the stops), and less the cost of the records of the thread or
// goroutine that made the most (the threads that ran side by side paid
// theirs at the same time; the goroutines that ran one after the other
// paid more, which is left in: a record costs some ten nanoseconds); but
// never less than the longest life of a thread on its own clock, from its
// start to its end less its own stops and records. The union counts every
// stop as one the whole run waited for; where threads run side by side,
// a thread held while the others go on delays the run by less, and a
// thread that waits for the others (main in pthread_join) lives through
// the run: its time, and its functions', are within the total. The
// goroutines' are in the rings r, when timing in-process.
func (c *clocks) elapsed(r *rings) int64 {
	debt := c.debt + c.lives.perCall*float64(c.lives.debtMade)
	if r != nil {
		for _, g := range r.goroutines {
			debt = max(debt, g.clock.debt)
		}
	}
	longest := c.longest - int64(c.lives.perCall*float64(c.lives.longestMade))
	return max(c.ended-c.started-c.held.sum()-int64(debt), longest, 0)
}

// lives are the threads' lives, for the total time: their sum on their
// own clocks, of n threads that ended. With the books in the program,
// perCall is what a call's code cost beyond the calibrated cost the
// threads' clocks took out as they ended (ledgers.debt), which the run
// measured at its end; made counts the calls the ended threads made,
// longestMade and debtMade the calls of the thread of the longest life
// and of the most debt. cpu are their times on a CPU (cputime.go), which
// the lives, elapsed, include with their waits.
type lives struct {
	sum                         int64
	n                           int
	perCall                     float64
	made, longestMade, debtMade uint64
	cpu                         onCPU
}

// total is the run's total time, of which the report's percentages are
// (docs/linux.md, "Timing": total time): the one thread's elapsed time, as the
// original's was; where threads ran side by side, their lives on their
// own clocks added up. A goroutine's life PROFILE does not see (it is
// born and ends in the runtime's code, and its g is used again): where
// goroutines were timed, the run's elapsed time, or the time within the
// goroutines' and threads' outermost calls where that is more (a Go
// program's threads are the goroutines' carriers: their lives are not
// added again). Never less than the time within outermost calls, which
// the function times add up to: no function takes more than the whole.
func (c *clocks) total(r *rings, f books.Figures) int64 {
	t := c.elapsed(r)
	if c.lives.n > 1 && !f.Goroutines {
		t = c.lives.sum - int64(c.lives.perCall*float64(c.lives.made))
	}
	return max(t, f.Inside)
}
