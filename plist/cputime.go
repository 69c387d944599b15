package plist

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
)

// TimeView says which times the reports show of a function timing
// profile (--time).
type TimeView uint8

// The views.
const (
	// TimeElapsed shows the times as measured: elapsed, waits included
	// (the default, and the original's).
	TimeElapsed TimeView = iota
	// TimeCPU shows the times on a CPU: each figure less the waits of
	// its calls, which PROFILE measured ([CPUTimes]).
	TimeCPU
)

var timeViewNames = []string{"elapsed", "cpu"}

// String names v as --time spells it.
func (v TimeView) String() string {
	if int(v) < len(timeViewNames) {
		return timeViewNames[v]
	}
	return fmt.Sprintf("view(%d)", uint8(v))
}

// TimeViewNames returns the names of the views, as --time spells them, in
// the order of the TimeView constants.
func TimeViewNames() []string { return slices.Clone(timeViewNames) }

// ParseTimeView returns the view named name (--time).
func ParseTimeView(name string) (TimeView, error) {
	if i := slices.Index(timeViewNames, strings.ToLower(name)); i >= 0 {
		return TimeView(i), nil
	}
	return 0, fmt.Errorf("unknown time view %q (views: %s)", name, strings.Join(timeViewNames, ", "))
}

// ErrNoWaits is the error of [CPUTimes], and of the reports made with
// [TimeCPU], for a profile whose runs did not measure each call's time on
// a CPU.
var ErrNoWaits = errors.New("the profile's runs did not measure each call's time on a CPU")

// HasWaits reports whether m can be shown with [TimeCPU]: a function
// timing profile every run of which measured each call's time on a CPU
// ([datafile.Stats.Waits]).
func HasWaits(m *datafile.Merged) bool {
	return m.Plan.Method.IsTiming() && m.Stats.Waits != nil
}

// CPUTimes returns a copy of m whose times are times on a CPU, as
// --time=cpu lists them: each function's time, with its children or
// without, less the waits of its calls, and each attribution stack's the
// same; the time inside the outermost calls less their waits; and the
// total time less every wait, inside the outermost calls and outside
// (the threads' time on a CPU as the total counts it, PROFILE's costs
// taken out), never less than the time inside, the rest outside. No figure goes below 0. The copy has no waits left to
// take out (Stats.Waits nil), and shares m's plan; m is not modified. A
// profile without waits ([HasWaits]) is [ErrNoWaits].
func CPUTimes(m *datafile.Merged) (*datafile.Merged, error) {
	if !HasWaits(m) {
		return nil, ErrNoWaits
	}
	w := m.Stats.Waits
	c := *m
	st := &c.Stats
	st.FuncTime = less(m.Stats.FuncTime, w.FuncWait)
	st.ChildTime = less(m.Stats.ChildTime, w.ChildWait)
	st.Stacks = slices.Clone(m.Stats.Stacks)
	for i := range st.Stacks {
		s := &st.Stacks[i]
		s.Time, s.ChildTime = max(s.Time-s.Wait, 0), max(s.ChildTime-s.ChildWait, 0)
		s.Wait, s.ChildWait = 0, 0
	}
	inside := max(m.Stats.TotalTime-m.Stats.OutsideTime-w.InsideWait, 0)
	st.TotalTime = max(m.Stats.TotalTime-w.InsideWait-w.OutsideWait, inside)
	st.OutsideTime = st.TotalTime - inside
	st.Waits = nil
	return &c, nil
}

// less returns times less waits, pairwise, none below 0, in a new slice;
// a time without its wait is kept.
func less(times, waits []int64) []int64 {
	if times == nil {
		return nil
	}
	out := slices.Clone(times)
	for i := range min(len(out), len(waits)) {
		out[i] = max(out[i]-waits[i], 0)
	}
	return out
}

// inView returns m as the view o.Time shows it: m itself, elapsed, or
// its times on a CPU ([CPUTimes]).
func inView(m *datafile.Merged, o Options) (*datafile.Merged, error) {
	if o.Time != TimeCPU {
		return m, nil
	}
	c, err := CPUTimes(m)
	if err != nil {
		return nil, fmt.Errorf("--time=cpu: %w", err)
	}
	return c, nil
}

// cpuLine is the Program Statistics' line of a listing made with
// --time=cpu, where the elapsed view's "Threads on a CPU" line would be.
const cpuLine = "    Times on a CPU (--time=cpu): the calls' waits left out"

// waitedLine returns the Program Statistics' line of a function timing
// profile of statistics st whose threads spent less than half its total
// time on a CPU (the elapsed view): the times are mostly waits, and the
// line names the view that shows the work: --time=cpu when the runs
// measured the waits, else function sampling.
func waitedLine(st *datafile.Stats) string {
	how := "function sampling (/FS) shows where the CPU time went"
	if st.Waits != nil {
		how = "plist --time=cpu shows the time on a CPU"
	}
	return fmt.Sprintf("    Threads on a CPU %s%% of the total time: the times are elapsed, waits included; %s",
		fixed(percent(float64(st.CPUTime), float64(st.TotalTime)), 1), how)
}

// viewWords is what the heading of a comparison adds for the view:
// nothing for the elapsed times.
func viewWords(o Options) string {
	if o.Time == TimeCPU {
		return ", times on a CPU"
	}
	return ""
}
