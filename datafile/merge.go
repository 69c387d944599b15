package datafile

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// NewMerged returns a database of plan p that was never run: no runs and
// zero statistics sized for the plan, with function times only for a timing
// plan. The database shares p's slices; neither it nor [Merged.Add] modifies
// them.
func NewMerged(p *Plan) *Merged {
	m := &Merged{Plan: *p}
	m.Stats.Hits = zeros[uint64](p.NumItems())
	m.Stats.Branches = zeros[uint64](2 * len(p.Branches))
	if p.Method.HasTimes() {
		m.Stats.FuncTime = zeros[int64](len(p.Funcs))
		m.Stats.ChildTime = zeros[int64](len(p.Funcs))
	}
	if p.Method.IsSampling() {
		m.Stats.Sampling.Samples = zeros[uint64](len(p.Funcs))
		m.Stats.Sampling.LineSamples = zeros[uint64](len(p.Lines))
	}
	return m
}

// zeros returns n zero values, or nil for none (as the readers do).
func zeros[T any](n int) []T {
	if n == 0 {
		return nil
	}
	return make([]T, n)
}

// Add adds the counts of one run to m: phase II of PREP (original.md §10).
//
// The counts must come from m's plan (the same [PlanID]; [ErrNotSamePlan]
// otherwise, PRF1306) made with m's method ([ErrConflict] otherwise,
// PRF1304); counts carrying attribution stacks for a plan without /AT are a
// conflict too. Then:
//
//   - the run and its overhead are appended to Runs and Overheads: one
//     record per run, in the order of the calls;
//   - hits, function and child times, total, outside and CPU time add up, so
//     coverage flags count the runs that covered an item;
//   - CallDepth becomes the larger of the two;
//   - the waits ([Stats.Waits]) add up when both the database and the run
//     measured them; a database without runs takes the run's; a run that
//     did not measure them leaves the database without waits (nil, its
//     stacks' waits 0), and so does every run after it, since a database
//     with runs and no waits has a run that did not measure them;
//   - stacks with equal Func, Callers and Key add their hits and times,
//     keep the smaller CallerKey of the two (either leads to the same
//     callers: 0, not known, only when both are), and the stacks are kept
//     sorted by Func, Callers and Key.
//
// Addition is associative and, but for the order of the runs, commutative:
// adding runs in any grouping or order gives the same figures. A run m
// already holds (the same [Run.ID]) is refused with [ErrDuplicateRun]: the
// original added the same .pbo twice, counting its run twice. A sum that
// would overflow is [ErrOverflow]. A failed Add leaves m unchanged.
func (m *Merged) Add(c *Counts) error {
	if err := m.check(c); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	stacks, err := mergeStacks(m.Stats.Stacks, c.Stats.Stacks)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	if err := checkSums(&m.Stats, &c.Stats); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	waits := addWaits(m.Stats.Waits, c.Stats.Waits, len(m.Runs) == 0)
	if waits == nil {
		for i := range stacks {
			stacks[i].Wait, stacks[i].ChildWait = 0, 0
		}
	}
	m.Runs = append(m.Runs, c.Run)
	m.Overheads = append(m.Overheads, c.Overhead)
	s, cs := &m.Stats, &c.Stats
	for i, h := range cs.Hits {
		s.Hits[i] += h
	}
	for i, h := range cs.Branches {
		s.Branches[i] += h
	}
	if len(cs.Unprobed) > 0 && len(s.Unprobed) == 0 {
		s.Unprobed = make([]uint64, len(cs.Unprobed))
	}
	for i, h := range cs.Unprobed {
		s.Unprobed[i] += h
	}
	s.FuncTime = addTimes(s.FuncTime, cs.FuncTime)
	s.ChildTime = addTimes(s.ChildTime, cs.ChildTime)
	s.TotalTime += cs.TotalTime
	s.CPUTime += cs.CPUTime
	s.OutsideTime += cs.OutsideTime
	s.CallDepth = max(s.CallDepth, cs.CallDepth)
	s.CostUncertainty = max(s.CostUncertainty, cs.CostUncertainty)
	s.Stacks = stacks
	s.Waits = waits
	s.Sampling.add(&cs.Sampling)
	return nil
}

// addWaits returns the waits of a database after adding a run's: nil
// when the run did not measure them, or when the database, which holds
// runs (first false), has none; else the sum, in a's slices or in new
// ones when a is nil. It modifies neither b nor, when it returns nil, a.
func addWaits(a, b *WaitStats, first bool) *WaitStats {
	if b == nil || (a == nil && !first) {
		return nil
	}
	if a == nil {
		a = &WaitStats{}
	}
	a.FuncWait = addTimes(a.FuncWait, b.FuncWait)
	a.ChildWait = addTimes(a.ChildWait, b.ChildWait)
	a.InsideWait += b.InsideWait
	a.OutsideWait += b.OutsideWait
	return a
}

// add adds the sampling figures of a run to those of a database; check
// made sure they fit (same interval, same lengths).
func (s *SamplingStats) add(c *SamplingStats) {
	if c.Interval == 0 {
		return // not a sampling run
	}
	s.Interval = c.Interval
	switch {
	case s.Sampler == NoSampler:
		s.Sampler = c.Sampler
	case s.Sampler != c.Sampler:
		s.Sampler = MixedSamplers
	}
	for i, n := range c.Samples {
		s.Samples[i] += n
	}
	for i, n := range c.LineSamples {
		s.LineSamples[i] += n
	}
	s.Outside += c.Outside
	s.Overhead += c.Overhead
	s.Stacks += c.Stacks
	s.StacksCut += c.StacksCut
	s.Lost += c.Lost
	s.KernelTime += c.KernelTime
	s.Kernel += c.Kernel
	s.KernelSamples = addCounts(s.KernelSamples, c.KernelSamples)
	s.KernelChildSamples = addCounts(s.KernelChildSamples, c.KernelChildSamples)
}

// addCounts adds the counts of b to those of a, one list of the same
// length or none, and returns the sum: a where b is empty, a new list
// where a is.
func addCounts(a, b []uint64) []uint64 {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return slices.Clone(b)
	}
	for i, n := range b {
		a[i] += n
	}
	return a
}

// check refuses counts that do not belong to m, and an m whose statistics
// do not fit its plan (which would make the sums index out of range).
func (m *Merged) check(c *Counts) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if err := m.Stats.check(m.Plan.Method, m.Plan.NumItems(), len(m.Plan.Funcs)); err != nil {
		return fmt.Errorf("invalid merged profile: %w", err)
	}
	switch {
	case c.PlanID != m.Plan.ID:
		// The database's plan ID is not printed: it is what a forged
		// .pbo would need.
		return fmt.Errorf("%w: counts of plan %s, not the database's", ErrNotSamePlan, c.PlanID)
	case c.Method != m.Plan.Method:
		return fmt.Errorf("%w: %s counts, %s database", ErrConflict,
			strings.ToLower(c.Method.Words()), strings.ToLower(m.Plan.Method.Words()))
	case len(c.Stats.Hits) != len(m.Stats.Hits):
		return fmt.Errorf("%w: counts of %d items, database of %d", ErrNotSamePlan, len(c.Stats.Hits), len(m.Stats.Hits))
	case len(c.Stats.Branches) != len(m.Stats.Branches):
		return fmt.Errorf("%w: counts of %d branch ways, database of %d", ErrNotSamePlan, len(c.Stats.Branches), len(m.Stats.Branches))
	case len(c.Stats.Stacks) > 0 && !m.Plan.Attribution && c.Stats.Sampling.Stacks == 0:
		return fmt.Errorf("%w: attribution stacks for a plan without attribution, not sampled", ErrConflict)
	case m.HasRun(c.Run.ID):
		return fmt.Errorf("%w: run %s", ErrDuplicateRun, c.Run.ID)
	}
	return m.checkSampling(&c.Stats.Sampling)
}

// checkSampling checks that a run's sampling figures fit the database's:
// the same interval as the runs before (PRF1463), the kernel's time
// sampled as theirs was, or not (its shares would otherwise be of samples
// of which some could not be the kernel's), and a count for each of the
// plan's functions and lines.
func (m *Merged) checkSampling(c *SamplingStats) error {
	s := &m.Stats.Sampling
	switch {
	case !m.Plan.Method.IsSampling():
		return nil
	case c.Interval <= 0:
		return fmt.Errorf("%w: sampling counts without a sampling interval", ErrConflict)
	case s.Interval != 0 && c.Interval != s.Interval:
		return fmt.Errorf("%w: sampled every %v, the database's runs every %v", ErrInterval,
			time.Duration(c.Interval), time.Duration(s.Interval))
	case s.Interval != 0 && c.KernelSampled() != s.KernelSampled():
		did := map[bool]string{true: "sampled", false: "did not sample"}
		return fmt.Errorf("%w: a run that %s the kernel's time, a database whose runs %s it", ErrConflict,
			did[c.KernelSampled()], did[s.KernelSampled()])
	case len(c.Samples) != len(s.Samples) || len(c.LineSamples) != len(s.LineSamples):
		return fmt.Errorf("%w: samples of %d functions and %d lines, database of %d and %d", ErrNotSamePlan,
			len(c.Samples), len(c.LineSamples), len(s.Samples), len(s.LineSamples))
	}
	for _, t := range []struct{ a, b []uint64 }{{s.Samples, c.Samples}, {s.LineSamples, c.LineSamples},
		{s.KernelSamples, c.KernelSamples}, {s.KernelChildSamples, c.KernelChildSamples}} {
		if len(t.a) == 0 {
			continue // (a list the database starts with the run's: Validate checked its length)
		}
		for i, n := range t.b {
			if t.a[i] > math.MaxUint64-n {
				return fmt.Errorf("samples of item %d: %w", i, ErrOverflow)
			}
		}
	}
	if s.Outside > math.MaxUint64-c.Outside || s.Overhead > math.MaxUint64-c.Overhead || s.Lost > math.MaxUint64-c.Lost ||
		s.Stacks > math.MaxUint64-c.Stacks || s.Kernel > math.MaxUint64-c.Kernel || !canAdd(s.KernelTime, c.KernelTime) {
		return fmt.Errorf("outside, PROFILE's, lost or kernel samples, stacks, or kernel time: %w", ErrOverflow)
	}
	return nil
}

// HasStacks reports whether m has caller stacks: the calls' (/AT), or
// the samples' (function sampling without /AT, where PROFILE unwound
// them: SampledStacks).
func (m *Merged) HasStacks() bool { return m.Plan.Attribution || m.SampledStacks() }

// SampledStacks reports whether m's stacks are its samples' (function
// sampling without /AT): they have times and no hits, and a function's
// time with children is its samples with it on the stack.
func (m *Merged) SampledStacks() bool {
	return !m.Plan.Attribution && m.Stats.Sampling.Stacks > 0
}

// HasRun reports whether m holds the run with the given ID. No run has an
// empty ID: runs of files written before IDs existed are never found.
func (m *Merged) HasRun(id Hex) bool {
	if len(id) == 0 {
		return false
	}
	for i := range m.Runs {
		if bytes.Equal(m.Runs[i].ID, id) {
			return true
		}
	}
	return false
}

// HasMerged reports whether the run with the given ID was merged into m,
// or into a database m replaced ([Merged.Discarded]). No run has an empty
// ID.
func (m *Merged) HasMerged(id Hex) bool {
	if m.HasRun(id) {
		return true
	}
	if len(id) == 0 {
		return false
	}
	for _, d := range m.Discarded {
		if bytes.Equal(d, id) {
			return true
		}
	}
	return false
}

// Pending reports whether c holds a run that m can take and has never
// taken: counts of m's plan and method whose run was merged neither into
// m nor into a database m replaced ([Merged.HasMerged]). A run without an
// ID (a file written before run IDs existed) is never pending: nothing
// tells whether it was merged.
//
// PROFILE keeps a pending run rather than write over it, PREP /M merges
// the pending runs, PLIST warns about them (docs/linux.md, "Merging and
// concurrent runs"). A run merged into a database that phase I then
// replaced is not pending: its counts were discarded on purpose.
func (m *Merged) Pending(c *Counts) bool {
	return c.PlanID == m.Plan.ID && c.Method == m.Plan.Method && len(c.Run.ID) > 0 && !m.HasMerged(c.Run.ID)
}

// Supersede records that m, a database phase I just made, replaces old,
// the database that was there: when old is of the same plan ID, the runs
// old held and those it had discarded itself become m's [Merged.Discarded],
// in that order (old's discarded first) and each once, so that the .pbo
// files of those runs do not count as pending. A database of another plan
// passes nothing on: runs of another plan are never pending. m's own
// discarded runs are kept.
func (m *Merged) Supersede(old *Merged) {
	if old == nil || old.Plan.ID != m.Plan.ID {
		return
	}
	seen := make(map[string]bool, len(m.Runs)+len(m.Discarded)+len(old.Runs)+len(old.Discarded))
	for i := range m.Runs {
		seen[string(m.Runs[i].ID)] = true
	}
	for _, id := range m.Discarded {
		seen[string(id)] = true
	}
	add := func(id Hex) {
		if len(id) > 0 && !seen[string(id)] {
			seen[string(id)] = true
			m.Discarded = append(m.Discarded, slices.Clone(id))
		}
	}
	for _, id := range old.Discarded {
		add(id)
	}
	for i := range old.Runs {
		add(old.Runs[i].ID)
	}
}

// checkSums reports whether adding b to a would overflow.
func checkSums(a, b *Stats) error {
	for i, h := range b.Hits {
		if a.Hits[i] > math.MaxUint64-h {
			return fmt.Errorf("hits of item %d: %w", i, ErrOverflow)
		}
	}
	for i, h := range b.Branches {
		if a.Branches[i] > math.MaxUint64-h {
			return fmt.Errorf("counts of branch way %d: %w", i, ErrOverflow)
		}
	}
	for i, h := range b.Unprobed {
		if i < len(a.Unprobed) && a.Unprobed[i] > math.MaxUint64-h {
			return fmt.Errorf("unprobed runs of branch %d: %w", i, ErrOverflow)
		}
	}
	if err := perFunctionSums(perFunction{"function time", a.FuncTime, b.FuncTime}, perFunction{"child time", a.ChildTime, b.ChildTime}); err != nil {
		return err
	}
	if !canAdd(a.TotalTime, b.TotalTime) || !canAdd(a.OutsideTime, b.OutsideTime) {
		return fmt.Errorf("total or outside time: %w", ErrOverflow)
	}
	if !canAdd(a.CPUTime, b.CPUTime) {
		return fmt.Errorf("CPU time: %w", ErrOverflow)
	}
	return checkWaitSums(a.Waits, b.Waits)
}

// perFunction is a figure of each function, named, of two sets of stats
// to be added.
type perFunction struct {
	name string
	a, b []int64
}

// perFunctionSums reports whether adding each figure's b to its a would
// overflow.
func perFunctionSums(figs ...perFunction) error {
	for _, t := range figs {
		for i := range t.b {
			if i < len(t.a) && !canAdd(t.a[i], t.b[i]) {
				return fmt.Errorf("%s of function %d: %w", t.name, i, ErrOverflow)
			}
		}
	}
	return nil
}

// checkWaitSums reports whether adding the waits b to a would overflow
// (nothing is added unless both are measured).
func checkWaitSums(a, b *WaitStats) error {
	if a == nil || b == nil {
		return nil
	}
	if err := perFunctionSums(perFunction{"function wait", a.FuncWait, b.FuncWait}, perFunction{"child wait", a.ChildWait, b.ChildWait}); err != nil {
		return err
	}
	if !canAdd(a.InsideWait, b.InsideWait) || !canAdd(a.OutsideWait, b.OutsideWait) {
		return fmt.Errorf("inside or outside wait: %w", ErrOverflow)
	}
	return nil
}

// canAdd reports whether the sum of two non-negative values fits.
func canAdd(a, b int64) bool { return a <= math.MaxInt64-b }

// addTimes returns a plus b, allocating a when it is nil and b is not.
func addTimes(a, b []int64) []int64 {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		a = make([]int64, len(b))
	}
	for i, t := range b {
		a[i] += t
	}
	return a
}

// stackKey identifies the stacks that merge: equal Func, Callers and Key.
type stackKey struct {
	fn      int
	n       int
	callers [maxCallers]int
	key     uint64
}

func keyOf(s *Stack) stackKey {
	k := stackKey{fn: s.Func, n: len(s.Callers), key: s.Key}
	copy(k.callers[:], s.Callers)
	return k
}

// mergeStacks returns the stacks of a and b, equal ones added up, in
// sorted order. It modifies neither.
func mergeStacks(a, b []Stack) ([]Stack, error) {
	if len(a)+len(b) == 0 {
		return nil, nil
	}
	out := make([]Stack, 0, len(a)+len(b))
	index := make(map[stackKey]int, len(a)+len(b))
	for _, list := range [][]Stack{a, b} {
		for i := range list {
			s := &list[i]
			k := keyOf(s)
			j, ok := index[k]
			if !ok {
				index[k] = len(out)
				t := *s
				t.Callers = slices.Clone(s.Callers)
				out = append(out, t)
				continue
			}
			t := &out[j]
			if t.Hits > math.MaxUint64-s.Hits || !canAdd(t.Time, s.Time) || !canAdd(t.ChildTime, s.ChildTime) ||
				!canAdd(t.Wait, s.Wait) || !canAdd(t.ChildWait, s.ChildWait) {
				return nil, fmt.Errorf("stack of function %d: %w", s.Func, ErrOverflow)
			}
			t.Hits += s.Hits
			t.Time += s.Time
			t.ChildTime += s.ChildTime
			t.Wait += s.Wait
			t.ChildWait += s.ChildWait
			// Any caller stack gives the same chain as far as the stack's
			// key tells: the smaller known one, whatever the order.
			if t.CallerKey == 0 || (s.CallerKey != 0 && s.CallerKey < t.CallerKey) {
				t.CallerKey = s.CallerKey
			}
		}
	}
	slices.SortFunc(out, compareStacks)
	return out, nil
}

func compareStacks(a, b Stack) int {
	if c := cmp.Compare(a.Func, b.Func); c != 0 {
		return c
	}
	if c := slices.Compare(a.Callers, b.Callers); c != 0 {
		return c
	}
	return cmp.Compare(a.Key, b.Key)
}
