package datafile

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// checkInlined checks the inlined calls: of function sampling without
// attribution alone, each
// of a function of the plan, after its parent, of the same module, with
// code, ranges sorted.
func (p *Plan) checkInlined() error {
	switch {
	case len(p.Inlined) > 0 && p.Method != FuncSampling:
		return fmt.Errorf("inlined calls in a plan of %s", strings.ToLower(p.Method.Words()))
	case len(p.Inlined) > 0 && p.Attribution:
		return errors.New("inlined calls in a plan with attribution, which samples no stack")
	}
	for i := range p.Inlined {
		c := &p.Inlined[i]
		switch {
		case c.Func < 0 || c.Func >= len(p.Funcs):
			return fmt.Errorf("inlined call %d: func %d out of range (%d funcs)", i, c.Func, len(p.Funcs))
		case c.Parent < -1 || c.Parent >= i:
			return fmt.Errorf("inlined call %d: parent %d is not a call before it", i, c.Parent)
		case c.Parent >= 0 && p.Funcs[p.Inlined[c.Parent].Func].Module != p.Funcs[c.Func].Module:
			return fmt.Errorf("inlined call %d: in a call of another module", i)
		case len(c.Ranges) == 0:
			return fmt.Errorf("inlined call %d: no code", i)
		}
		for j, r := range c.Ranges {
			if r.Low >= r.High || j > 0 && r.Low < c.Ranges[j-1].High {
				return fmt.Errorf("inlined call %d: range %d [%#x, %#x) empty or out of order", i, j, r.Low, r.High)
			}
		}
	}
	return nil
}

// maxCallers is the most callers a stack shows (original.md §3.6).
const maxCallers = 2

// Validate reports the first inconsistency of p: an unknown method, an index
// out of range, a negative depth, line number or size, or an ID that is not
// [PlanID] of p. StartIndex must be -1 (no /SF, or its name was not found)
// or index Funcs. Every reader and writer calls it.
func (p *Plan) Validate() error {
	if p == nil {
		return errors.New("invalid plan: nil")
	}
	if err := p.check(); err != nil {
		return fmt.Errorf("invalid plan: %w", err)
	}
	if id := PlanID(p); id != p.ID {
		// The id the content gives is not printed: it is what a forged
		// plan would need.
		return fmt.Errorf("invalid plan: id %s does not match its content", p.ID)
	}
	return nil
}

func (p *Plan) check() error {
	switch {
	case !p.Method.Valid():
		return fmt.Errorf("unknown method %d", uint16(p.Method))
	case p.StartIndex < -1 || p.StartIndex >= len(p.Funcs):
		return fmt.Errorf("start index %d out of range (%d funcs)", p.StartIndex, len(p.Funcs))
	case p.StackDepth < 0:
		return fmt.Errorf("negative stack depth %d", p.StackDepth)
	case p.Calibration < -1:
		return fmt.Errorf("calibration %d is neither -1 nor a duration", p.Calibration)
	case p.Uncounted && (p.Method != FuncSampling || p.StartFunc != "" || p.StartIndex >= 0 || p.Attribution):
		return errors.New("counts no call, and is not function sampling without a start function or attribution")
	}
	for i, l := range p.LeftOut {
		if l.Funcs < 0 {
			return fmt.Errorf("left out %d: negative count %d", i, l.Funcs)
		}
	}
	for i := range p.Modules {
		m := &p.Modules[i]
		switch {
		case m.Name == "":
			return fmt.Errorf("module %d: no name", i)
		case m.Size < 0:
			return fmt.Errorf("module %d: negative size %d", i, m.Size)
		}
	}
	for i := range p.Funcs {
		f := &p.Funcs[i]
		switch {
		case f.Module < 0 || f.Module >= len(p.Modules):
			return fmt.Errorf("func %d: module %d out of range (%d modules)", i, f.Module, len(p.Modules))
		case f.Name == "":
			return fmt.Errorf("func %d: no name", i)
		case f.Line < 0:
			return fmt.Errorf("func %d: negative line %d", i, f.Line)
		}
	}
	if err := p.checkInlined(); err != nil {
		return err
	}
	for i := range p.Lines {
		l := &p.Lines[i]
		if l.Module < 0 || l.Module >= len(p.Modules) {
			return fmt.Errorf("line %d: module %d out of range (%d modules)", i, l.Module, len(p.Modules))
		}
		if files := len(p.Modules[l.Module].Files); l.File < 0 || l.File >= files {
			return fmt.Errorf("line %d: file %d out of range (%d files)", i, l.File, files)
		}
		if l.Line < 0 {
			return fmt.Errorf("line %d: negative line number %d", i, l.Line)
		}
	}
	return p.checkBranches()
}

// checkBranches checks the branches: of line coverage alone, each of a
// line of the plan.
func (p *Plan) checkBranches() error {
	if len(p.Branches) > 0 && p.Method != LineCoverage {
		return fmt.Errorf("branches in a %s plan", strings.ToLower(p.Method.Words()))
	}
	for i, b := range p.Branches {
		if b.Line < 0 || b.Line >= len(p.Lines) {
			return fmt.Errorf("branch %d: line %d out of range (%d lines)", i, b.Line, len(p.Lines))
		}
	}
	return nil
}

// Validate reports the first inconsistency of c: an unknown method, a
// negative time or overhead, times in a profile that is not timing or not
// one per item, waits ([WaitStats]) that are not one per item or above
// their times, or a stack whose function or callers are not items of a
// function profile. Without the plan, the items are the hit counts.
func (c *Counts) Validate() error {
	if c == nil {
		return errors.New("invalid counts: nil")
	}
	if !c.Method.Valid() {
		return fmt.Errorf("invalid counts: unknown method %d", uint16(c.Method))
	}
	if c.Overhead < 0 {
		return fmt.Errorf("invalid counts: negative overhead %d", c.Overhead)
	}
	funcs := 0
	if c.Method.IsFunction() {
		funcs = len(c.Stats.Hits)
	}
	if err := c.Stats.check(c.Method, len(c.Stats.Hits), funcs); err != nil {
		return fmt.Errorf("invalid counts: %w", err)
	}
	if n := len(c.Stats.Branches); n%2 != 0 || n > 0 && c.Method != LineCoverage {
		return fmt.Errorf("invalid counts: %d branch counts in %s counts", n, strings.ToLower(c.Method.Words()))
	}
	if n := len(c.Stats.Unprobed); n > 0 && 2*n != len(c.Stats.Branches) {
		return fmt.Errorf("invalid counts: %d unprobed counts for %d branch counts", n, len(c.Stats.Branches))
	}
	return nil
}

// Validate reports the first inconsistency of m: those of its plan
// ([Plan.Validate]), runs and overheads that do not pair up, negative
// overheads, statistics that do not fit the plan, attribution stacks in
// a plan made without /AT, or a discarded run without an ID.
func (m *Merged) Validate() error {
	if m == nil {
		return errors.New("invalid merged profile: nil")
	}
	if err := m.Plan.Validate(); err != nil {
		return err
	}
	if len(m.Overheads) != len(m.Runs) {
		return fmt.Errorf("invalid merged profile: %d overheads for %d runs", len(m.Overheads), len(m.Runs))
	}
	for i, o := range m.Overheads {
		if o < 0 {
			return fmt.Errorf("invalid merged profile: run %d: negative overhead %d", i, o)
		}
	}
	for i, id := range m.Discarded {
		if len(id) == 0 {
			return fmt.Errorf("invalid merged profile: discarded run %d has no id", i)
		}
	}
	if !m.Plan.Attribution && len(m.Stats.Stacks) > 0 && m.Stats.Sampling.Stacks == 0 {
		return errors.New("invalid merged profile: attribution stacks in a plan without attribution, not sampled")
	}
	if err := m.Stats.check(m.Plan.Method, m.Plan.NumItems(), len(m.Plan.Funcs)); err != nil {
		return fmt.Errorf("invalid merged profile: %w", err)
	}
	if n := len(m.Stats.Branches); n != 2*len(m.Plan.Branches) {
		return fmt.Errorf("invalid merged profile: %d branch counts for %d branches", n, len(m.Plan.Branches))
	}
	if n := len(m.Stats.Unprobed); n > 0 && n != len(m.Plan.Branches) {
		return fmt.Errorf("invalid merged profile: %d unprobed counts for %d branches", n, len(m.Plan.Branches))
	}
	if n := len(m.Stats.Sampling.LineSamples); n > 0 && n != len(m.Plan.Lines) {
		return fmt.Errorf("invalid merged profile: samples of %d lines for %d lines", n, len(m.Plan.Lines))
	}
	return nil
}

// check validates statistics of the given method with items counted items
// and funcs functions.
func (s *Stats) check(method Method, items, funcs int) error {
	if len(s.Hits) != items {
		return fmt.Errorf("%d hit counts for %d items", len(s.Hits), items)
	}
	for _, t := range []struct {
		name string
		list []int64
	}{{"function times", s.FuncTime}, {"child times", s.ChildTime}} {
		if err := checkTimes(t.name, t.list, method, funcs); err != nil {
			return err
		}
	}
	switch {
	case s.CallDepth < 0:
		return fmt.Errorf("negative call depth %d", s.CallDepth)
	case s.TotalTime < 0:
		return fmt.Errorf("negative total time %d", s.TotalTime)
	case s.OutsideTime < 0:
		return fmt.Errorf("negative outside time %d", s.OutsideTime)
	case s.CostUncertainty < 0:
		return fmt.Errorf("negative cost uncertainty %d", s.CostUncertainty)
	case s.CostUncertainty != 0 && !method.IsTiming():
		return fmt.Errorf("a cost uncertainty in a %s profile", strings.ToLower(method.Words()))
	case s.CPUTime < 0:
		return fmt.Errorf("negative CPU time %d", s.CPUTime)
	case s.CPUTime != 0 && !method.IsTiming():
		return fmt.Errorf("a CPU time in a %s profile", strings.ToLower(method.Words()))
	case len(s.Stacks) > 0 && !method.IsFunction():
		return errors.New("attribution stacks in a line profile")
	}
	for i := range s.Stacks {
		if err := s.Stacks[i].check(funcs); err != nil {
			return fmt.Errorf("stack %d: %w", i, err)
		}
	}
	if err := s.checkWaits(method, funcs); err != nil {
		return err
	}
	return s.Sampling.check(method, funcs)
}

// checkWaits validates the waits of statistics of the given method with
// funcs functions: none but in function timing, and there one per
// function, none negative, none above the time it is part of (the
// inside wait not above TotalTime-OutsideTime); and no stack with waits
// when the run did not measure them.
func (s *Stats) checkWaits(method Method, funcs int) error {
	w := s.Waits
	if w == nil {
		for i := range s.Stacks {
			if k := &s.Stacks[i]; k.Wait != 0 || k.ChildWait != 0 {
				return fmt.Errorf("stack %d: waits in a profile that did not measure them", i)
			}
		}
		return nil
	}
	switch {
	case !method.IsTiming():
		return fmt.Errorf("waits in a %s profile", strings.ToLower(method.Words()))
	case len(w.FuncWait) != funcs || len(w.ChildWait) != funcs:
		return fmt.Errorf("waits of %d and %d functions for %d functions", len(w.FuncWait), len(w.ChildWait), funcs)
	case w.InsideWait < 0 || w.InsideWait > s.TotalTime-s.OutsideTime:
		// (check refused negative times first, so the difference does
		// not overflow. Runs each within their time inside add up to a
		// database within its own.)
		return fmt.Errorf("inside wait %d is negative or above the time inside, %d", w.InsideWait, s.TotalTime-s.OutsideTime)
	case w.OutsideWait < 0 || w.OutsideWait > s.OutsideTime:
		return fmt.Errorf("outside wait %d is negative or above the time outside, %d", w.OutsideWait, s.OutsideTime)
	}
	for i := range funcs {
		if err := checkWait(w.FuncWait[i], timeAt(s.FuncTime, i), w.ChildWait[i], timeAt(s.ChildTime, i)); err != nil {
			return fmt.Errorf("function %d: %w", i, err)
		}
	}
	for i := range s.Stacks {
		k := &s.Stacks[i]
		if err := checkWait(k.Wait, k.Time, k.ChildWait, k.ChildTime); err != nil {
			return fmt.Errorf("stack %d: %w", i, err)
		}
	}
	return nil
}

// checkWait refuses a negative wait, or one above the time it is part
// of.
func checkWait(wait, time, childWait, childTime int64) error {
	switch {
	case wait < 0 || wait > time:
		return fmt.Errorf("wait %d is negative or above the time, %d", wait, time)
	case childWait < 0 || childWait > childTime:
		return fmt.Errorf("child wait %d is negative or above the child time, %d", childWait, childTime)
	}
	return nil
}

// timeAt is list[i], or 0 when the list holds no times (a timing profile
// read without them).
func timeAt(list []int64, i int) int64 {
	if i < len(list) {
		return list[i]
	}
	return 0
}

// check validates the sampling figures of a profile of the given method
// with funcs functions.
func (s *SamplingStats) check(method Method, funcs int) error {
	if !method.IsSampling() {
		if s.Interval != 0 || s.Sampler != NoSampler || s.Outside != 0 || s.Lost != 0 || s.KernelTime != 0 ||
			len(s.Samples) > 0 || len(s.LineSamples) > 0 || s.Stacks != 0 || s.Kernel != 0 ||
			len(s.KernelSamples) > 0 || len(s.KernelChildSamples) > 0 {
			return fmt.Errorf("sampling figures in a %s profile", strings.ToLower(method.Words()))
		}
		return nil
	}
	switch {
	case s.Interval < 0:
		return fmt.Errorf("negative sampling interval %d", s.Interval)
	case s.Sampler > MixedSamplers:
		return fmt.Errorf("unknown sampler %d", s.Sampler)
	case s.KernelTime < 0:
		return fmt.Errorf("negative kernel time %d", s.KernelTime)
	case s.StacksCut > s.Stacks:
		return fmt.Errorf("%d of %d sampled stacks cut", s.StacksCut, s.Stacks)
	case len(s.Samples) > 0 && len(s.Samples) != funcs:
		return fmt.Errorf("samples of %d functions for %d functions", len(s.Samples), funcs)
	case len(s.KernelSamples) != len(s.KernelChildSamples) || len(s.KernelSamples) > 0 && len(s.KernelSamples) != len(s.Samples):
		return fmt.Errorf("kernel samples of %d functions, with children %d, for %d functions' samples",
			len(s.KernelSamples), len(s.KernelChildSamples), len(s.Samples))
	}
	var kernel uint64
	for i, n := range s.KernelSamples {
		switch {
		case n > s.Samples[i]:
			return fmt.Errorf("function %d: %d samples in the kernel of %d", i, n, s.Samples[i])
		case s.KernelChildSamples[i] < n:
			return fmt.Errorf("function %d: %d samples in the kernel with children, fewer than its own %d", i, s.KernelChildSamples[i], n)
		case s.KernelChildSamples[i] > s.Kernel:
			return fmt.Errorf("function %d: %d samples in the kernel with children, of %d in all", i, s.KernelChildSamples[i], s.Kernel)
		}
		if kernel > math.MaxUint64-n {
			return fmt.Errorf("function %d: samples in the kernel: %w", i, ErrOverflow)
		}
		kernel += n
	}
	if kernel > s.Kernel {
		return fmt.Errorf("%d samples in the kernel in functions, of %d in all", kernel, s.Kernel)
	}
	if s.Kernel > 0 && s.KernelSamples == nil {
		return fmt.Errorf("%d samples in the kernel without the functions' lists", s.Kernel)
	}
	return nil
}

func checkTimes(name string, list []int64, method Method, funcs int) error {
	if len(list) == 0 {
		return nil
	}
	if !method.HasTimes() {
		return fmt.Errorf("%s in a %s profile", name, strings.ToLower(method.Words()))
	}
	if len(list) != funcs {
		return fmt.Errorf("%d %s for %d functions", len(list), name, funcs)
	}
	for i, t := range list {
		if t < 0 {
			return fmt.Errorf("%s: function %d: negative time %d", name, i, t)
		}
	}
	return nil
}

func (k *Stack) check(funcs int) error {
	if k.Func < 0 || k.Func >= funcs {
		return fmt.Errorf("function %d out of range (%d functions)", k.Func, funcs)
	}
	if n := len(k.Callers); n < 1 || n > maxCallers {
		return fmt.Errorf("%d callers, want 1 to %d", n, maxCallers)
	}
	for _, c := range k.Callers {
		if c < -1 || c >= funcs {
			return fmt.Errorf("caller %d out of range (%d functions)", c, funcs)
		}
	}
	if k.Callers[len(k.Callers)-1] == -1 && k.CallerKey != 0 {
		return fmt.Errorf("caller stack %#x of a call from the stack base", k.CallerKey)
	}
	if k.Time < 0 || k.ChildTime < 0 {
		return fmt.Errorf("negative time %d or child time %d", k.Time, k.ChildTime)
	}
	return nil
}
