package profile

import (
	"math"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/profile/books"
)

// The cost of the book code (ledger.go): measured in the run from the
// samples of the threads' program counters in PROFILE's own code, or
// alone at start-up (calibrate), and how uncertain what is taken out is.

// ledgerCosts is what the books in the program know of their code's
// cost (costs).
type ledgerCosts struct {
	// calibrated is what a call's code costs, measured alone at
	// start-up (calibrate).
	calibrated books.Costs
	// ownCode, when not nil, returns the samples of the threads' program
	// counters taken so far in PROFILE's own code and in all, and their
	// interval (the sampler's: ok is false where none ran).
	ownCode func() (own, all uint64, interval time.Duration, ok bool)
	// measured is the cost the run measured, once it has (costs), and
	// uncertainty how far, in nanoseconds a call, the cost taken out may
	// be from what the code cost (datafile.Stats.CostUncertainty).
	measured    *books.Costs
	uncertainty int64
	// discarded counts the calls booked in the discard block, or area,
	// which are no thread's of the program (a signal's alternate stack's
	// on arm64, a thread's beyond the blocks, a vfork child's on amd64):
	// their figures are dropped, but their code's cost is in the samples
	// the run measures its cost by (costs).
	discarded uint64
}

// costs returns what the book code cost a call in the run: the time the
// threads spent in PROFILE's own code, as its samples of their program
// counters found it (ownCode), over the calls the code booked, split
// between the inside and the outside of the measured intervals as the
// calibration split it (the samples do not tell the two apart); or the
// calibrated cost where too few samples were taken to measure it (a run
// of a few milliseconds, the kernel's sampler refused).
func (l *ledgers) costs() books.Costs {
	if l.measured != nil {
		// (Measured at an exec, over the calls before it: the sampler
		// samples no image after it.)
		return *l.measured
	}
	// (Unmeasured in the run, the calibrated cost is uncertain by as much
	// as it is: the run's code may cost twice what the calibration's
	// did, or less.)
	l.uncertainty = int64(math.Round(l.calibrated.Call()))
	if l.ownCode == nil {
		return l.calibrated
	}
	own, all, interval, ok := l.ownCode()
	// (The calibration ran before the sampler started: its calls are
	// in no sample.)
	var calls uint64
	for _, f := range l.figs {
		calls += f.Calls
	}
	// (And the calls booked in the discard block, or area, whose code
	// ran and was sampled all the same: discarded.)
	calls += l.discarded
	if !ok || own < minOwnSamples || all == 0 || calls == 0 {
		return l.calibrated
	}
	c := l.calibrated.Scaled(float64(own) * float64(interval) / float64(calls))
	l.measured = &c
	l.uncertainty = costUncertainty(c.Call(), l.calibrated.Call(), own)
	return c
}

// costUncertainty is how far a call's cost measured in the run, from own
// samples, may be from what the code cost each call: the two measures'
// difference (the calibration's, alone, and the run's, on average over
// the calls), and twice the samples' own error (a count of own samples
// is off by some √own from chance), to the nanosecond.
func costUncertainty(measured, calibrated float64, own uint64) int64 {
	return int64(math.Ceil(math.Abs(measured-calibrated) + 2*measured/math.Sqrt(float64(own))))
}

// stats states the uncertainty of the cost taken out (statsHook).
func (l *ledgers) stats(s *datafile.Stats) {
	if l.plan.Method.IsTiming() {
		s.CostUncertainty = l.uncertainty
	}
}

// minOwnSamples is the fewest samples in PROFILE's code that measure the
// book code's cost in a run: a tenth of it, at worst, from chance.
const minOwnSamples = 100
