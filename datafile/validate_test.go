package datafile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// inlined gives p the test's inlined calls, and no attribution.
func inlined(p *Plan) *Plan {
	p.Attribution, p.Inlined = false, testInlined()
	return p
}

func TestPlanValidate(t *testing.T) {
	tests := []struct {
		name   string
		method Method
		edit   func(p *Plan)
		want   string // "" for valid
	}{
		{"valid function plan", FuncTiming, func(*Plan) {}, ""},
		{"valid line plan", LineCounting, func(*Plan) {}, ""},
		{"valid branches", LineCoverage, func(*Plan) {}, ""},
		{"branches of line counting", LineCounting, func(p *Plan) { p.Branches = []Branch{{Line: 0, Addr: 0x1142}} }, "branches in a line counting plan"},
		{"branch of no line", LineCoverage, func(p *Plan) { p.Branches[1].Line = 4 }, "branch 1: line 4 out of range (4 lines)"},
		{"branch of a negative line", LineCoverage, func(p *Plan) { p.Branches[0].Line = -1 }, "branch 0: line -1 out of range (4 lines)"},
		{"no start function", FuncCounting, func(p *Plan) { p.StartIndex = -1 }, ""},
		{"last start function", FuncCounting, func(p *Plan) { p.StartIndex = 3 }, ""},
		{"unknown method", FuncCounting, func(p *Plan) { p.Method = 400 }, "unknown method 400"},
		{"start index too large", FuncTiming, func(p *Plan) { p.StartIndex = 4 }, "start index 4 out of range (4 funcs)"},
		{"start index below -1", FuncTiming, func(p *Plan) { p.StartIndex = -2 }, "start index -2 out of range"},
		{"negative stack depth", FuncTiming, func(p *Plan) { p.StackDepth = -1 }, "negative stack depth -1"},
		{"calibration", FuncTiming, func(p *Plan) { p.Calibration = -2 }, "calibration -2"},
		{"module without name", FuncCounting, func(p *Plan) { p.Modules[1].Name = "" }, "module 1: no name"},
		{"module size", FuncCounting, func(p *Plan) { p.Modules[0].Size = -1 }, "module 0: negative size"},
		{"func module", FuncCounting, func(p *Plan) { p.Funcs[3].Module = 2 }, "func 3: module 2 out of range (2 modules)"},
		{"func negative module", FuncCounting, func(p *Plan) { p.Funcs[0].Module = -1 }, "func 0: module -1 out of range"},
		{"func without name", FuncCounting, func(p *Plan) { p.Funcs[2].Name = "" }, "func 2: no name"},
		{"func line", FuncCounting, func(p *Plan) { p.Funcs[1].Line = -3 }, "func 1: negative line -3"},
		{"line module", LineCounting, func(p *Plan) { p.Lines[2].Module = 9 }, "line 2: module 9 out of range"},
		{"line file", LineCounting, func(p *Plan) { p.Lines[3].File = 1 }, "line 3: file 1 out of range (1 files)"},
		{"line negative file", LineCounting, func(p *Plan) { p.Lines[0].File = -1 }, "line 0: file -1 out of range"},
		{"line number", LineCounting, func(p *Plan) { p.Lines[1].Line = -1 }, "line 1: negative line number -1"},
		{"uncounted sampling", FuncSampling, func(p *Plan) { p.Uncounted, p.Attribution = true, false }, ""},
		{"uncounted counting", FuncCounting, func(p *Plan) { p.Uncounted, p.Attribution = true, false }, "counts no call"},
		{"uncounted with /AT", FuncSampling, func(p *Plan) { p.Uncounted = true }, "counts no call"},
		{"uncounted with /SF", FuncSampling, func(p *Plan) { p.Uncounted, p.Attribution, p.StartIndex = true, false, 0 }, "counts no call"},
		{"inlined calls", FuncSampling, func(p *Plan) { inlined(p) }, ""},
		{"inlined calls of counting", FuncCounting, func(p *Plan) { inlined(p) }, "inlined calls in a plan of function counting"},
		{"inlined calls with /AT", FuncSampling, func(p *Plan) { inlined(p).Attribution = true }, "inlined calls in a plan with attribution"},
		{"inlined func out of range", FuncSampling, func(p *Plan) { inlined(p).Inlined[0].Func = 4 }, "inlined call 0: func 4 out of range"},
		{"inlined parent after", FuncSampling, func(p *Plan) { inlined(p).Inlined[1].Parent = 1 }, "inlined call 1: parent 1 is not a call before it"},
		{"inlined parent below -1", FuncSampling, func(p *Plan) { inlined(p).Inlined[1].Parent = -2 }, "parent -2"},
		{"inlined in another module", FuncSampling, func(p *Plan) { inlined(p).Inlined[2].Parent = 0 }, "inlined call 2: in a call of another module"},
		{"inlined without code", FuncSampling, func(p *Plan) { inlined(p).Inlined[3].Ranges = nil }, "inlined call 3: no code"},
		{"inlined range empty", FuncSampling, func(p *Plan) { inlined(p).Inlined[0].Ranges[1].High = 0x1190 }, "range 1 [0x1190, 0x1190) empty"},
		{"inlined ranges unsorted", FuncSampling, func(p *Plan) { inlined(p).Inlined[0].Ranges[1].Low = 0x1158 }, "range 1 [0x1158, 0x1198) empty or out of order"},
		{"stale id", FuncCounting, func(p *Plan) { p.Funcs[0].Entry++ }, "does not match its content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPlan(tt.method)
			tt.edit(p)
			if tt.name != "stale id" {
				p.ID = PlanID(p)
			}
			checkError(t, p.Validate(), "invalid plan: ", tt.want)
		})
	}
	var nilPlan *Plan
	checkError(t, nilPlan.Validate(), "invalid plan: ", "nil")
}

func TestCountsValidate(t *testing.T) {
	tests := []struct {
		name   string
		method Method
		edit   func(c *Counts)
		want   string
	}{
		{"valid timing", FuncTiming, func(*Counts) {}, ""},
		{"valid line coverage", LineCoverage, func(*Counts) {}, ""},
		{"a branch's one way", LineCoverage, func(c *Counts) { c.Stats.Branches = c.Stats.Branches[:3] }, "3 branch counts in line coverage counts"},
		{"branches of line counting", LineCounting, func(c *Counts) { c.Stats.Branches = []uint64{1, 0} }, "2 branch counts in line counting counts"},
		{"unprobed of no branch", LineCoverage, func(c *Counts) { c.Stats.Unprobed = []uint64{1} }, "1 unprobed counts for 4 branch counts"},
		{"timing without times", FuncTiming, func(c *Counts) { c.Stats.FuncTime, c.Stats.ChildTime = nil, nil; noWaits(c) }, ""},
		{"unknown method", FuncCounting, func(c *Counts) { c.Method = 0 }, "unknown method 0"},
		{"negative overhead", FuncTiming, func(c *Counts) { c.Overhead = -1 }, "negative overhead -1"},
		{"times without timing", FuncCounting, func(c *Counts) { c.Stats.FuncTime = []int64{1, 2, 3, 4} }, "function times in a function counting profile"},
		{"too few times", FuncTiming, func(c *Counts) { c.Stats.ChildTime = c.Stats.ChildTime[:3] }, "3 child times for 4 functions"},
		{"negative time", FuncTiming, func(c *Counts) { c.Stats.FuncTime[2] = -5 }, "function times: function 2: negative time -5"},
		{"negative depth", FuncCounting, func(c *Counts) { c.Stats.CallDepth = -1 }, "negative call depth"},
		{"negative total", FuncTiming, func(c *Counts) { c.Stats.TotalTime = -1 }, "negative total time"},
		{"negative outside", FuncTiming, func(c *Counts) { c.Stats.OutsideTime = -1 }, "negative outside time"},
		{"negative cost uncertainty", FuncTiming, func(c *Counts) { c.Stats.CostUncertainty = -1 }, "negative cost uncertainty"},
		{"cost uncertainty of counts", FuncCounting, func(c *Counts) { c.Stats.CostUncertainty = 5 }, "a cost uncertainty in a function counting profile"},
		{"negative CPU time", FuncTiming, func(c *Counts) { c.Stats.CPUTime = -1 }, "negative CPU time"},
		{"CPU time of counts", FuncCounting, func(c *Counts) { c.Stats.CPUTime = 5 }, "a CPU time in a function counting profile"},
		{"stacks in a line profile", LineCounting, func(c *Counts) { c.Stats.Stacks = []Stack{{Func: 0, Callers: []int{-1}}} }, "attribution stacks in a line profile"},
		{"stack function", FuncCounting, func(c *Counts) { c.Stats.Stacks[1].Func = 4 }, "stack 1: function 4 out of range (4 functions)"},
		{"no callers", FuncCounting, func(c *Counts) { c.Stats.Stacks[0].Callers = nil }, "stack 0: 0 callers, want 1 to 2"},
		{"three callers", FuncCounting, func(c *Counts) { c.Stats.Stacks[0].Callers = []int{-1, 0, 1} }, "stack 0: 3 callers"},
		{"caller below -1", FuncCounting, func(c *Counts) { c.Stats.Stacks[0].Callers[0] = -2 }, "stack 0: caller -2 out of range"},
		{"caller too large", FuncCounting, func(c *Counts) { c.Stats.Stacks[0].Callers[1] = 4 }, "stack 0: caller 4 out of range"},
		{"caller stack of the base", FuncCounting, func(c *Counts) { c.Stats.Stacks[1].CallerKey = 0x77 }, "stack 1: caller stack 0x77 of a call from the stack base"},
		{"negative stack time", FuncTiming, func(c *Counts) { c.Stats.Stacks[1].ChildTime = -1 }, "stack 1: negative time"},
		{"valid sampling", FuncSampling, func(*Counts) {}, ""},
		{"sampling figures in counting", FuncCounting, func(c *Counts) { c.Stats.Sampling.Lost = 1 }, "sampling figures in a function counting profile"},
		{"negative interval", FuncSampling, func(c *Counts) { c.Stats.Sampling.Interval = -1 }, "negative sampling interval -1"},
		{"unknown sampler", FuncSampling, func(c *Counts) { c.Stats.Sampling.Sampler = 9 }, "unknown sampler 9"},
		{"negative kernel time", FuncSampling, func(c *Counts) { c.Stats.Sampling.KernelTime = -1 }, "negative kernel time -1"},
		{"more stacks cut than sampled", FuncSampling, func(c *Counts) { c.Stats.Sampling.StacksCut = 10 }, "10 of 9 sampled stacks cut"},
		{"sampled stacks in timing", FuncTiming, func(c *Counts) { c.Stats.Sampling.Stacks = 1 }, "sampling figures in a function timing profile"},
		{"kernel samples in timing", FuncTiming, func(c *Counts) { c.Stats.Sampling.KernelSamples = []uint64{0, 0, 0, 0} }, "sampling figures in a function timing profile"},
		{"kernel samples short", FuncSampling, func(c *Counts) { c.Stats.Sampling.KernelSamples = []uint64{1} },
			"kernel samples of 1 functions, with children 4, for 4 functions' samples"},
		{"kernel samples without their children's", FuncSampling, func(c *Counts) { c.Stats.Sampling.KernelChildSamples = nil },
			"kernel samples of 4 functions, with children 0, for 4 functions' samples"},
		{"more kernel samples than samples", FuncSampling, func(c *Counts) { c.Stats.Sampling.KernelSamples[1] = 4 }, "function 1: 4 samples in the kernel of 3"},
		{"kernel samples with children fewer than their own", FuncSampling, func(c *Counts) { c.Stats.Sampling.KernelChildSamples[0] = 1 },
			"function 0: 1 samples in the kernel with children, fewer than its own 2"},
		{"kernel samples with children more than all", FuncSampling, func(c *Counts) { c.Stats.Sampling.KernelChildSamples[1] = 4 },
			"function 1: 4 samples in the kernel with children, of 3 in all"},
		{"kernel samples in functions more than all", FuncSampling, func(c *Counts) { c.Stats.Sampling.Kernel = 1 },
			"function 0: 3 samples in the kernel with children, of 1 in all"},
		{"kernel samples of the functions more than all", FuncSampling, func(c *Counts) { c.Stats.Sampling.KernelSamples[1] = 2 },
			"4 samples in the kernel in functions, of 3 in all"},
		{"kernel samples without lists", FuncSampling, func(c *Counts) {
			c.Stats.Sampling.KernelSamples, c.Stats.Sampling.KernelChildSamples = nil, nil
		}, "3 samples in the kernel without the functions' lists"},
		{"samples of too few functions", FuncSampling, func(c *Counts) { c.Stats.Sampling.Samples = c.Stats.Sampling.Samples[:3] }, "samples of 3 functions for 4 functions"},
	}
	tests = append(tests, waitTests...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testCounts(tt.method, false)
			tt.edit(c)
			checkError(t, c.Validate(), "invalid counts: ", tt.want)
		})
	}
	var nilCounts *Counts
	checkError(t, nilCounts.Validate(), "invalid counts: ", "nil")
}

// noWaits makes c the counts of a run that did not measure its calls'
// waits.
func noWaits(c *Counts) {
	c.Stats.Waits = nil
	for i := range c.Stats.Stacks {
		c.Stats.Stacks[i].Wait, c.Stats.Stacks[i].ChildWait = 0, 0
	}
}

// waitTests are the cases of TestCountsValidate for the waits
// (testCounts(FuncTiming, false): main's 5 ms of its own and 8 ms with
// its children held 2 and 3 ms of waits, stack 1 is main's).
var waitTests = []struct {
	name   string
	method Method
	edit   func(c *Counts)
	want   string
}{
	{"no waits", FuncTiming, noWaits, ""},
	{"waits equal to the times", FuncTiming, func(c *Counts) {
		w, st := c.Stats.Waits, &c.Stats
		w.FuncWait[0], w.ChildWait[0], w.InsideWait = st.FuncTime[0], st.ChildTime[0], st.TotalTime-st.OutsideTime
		st.Stacks[1].Wait, st.Stacks[1].ChildWait = st.Stacks[1].Time, st.Stacks[1].ChildTime
	}, ""},
	{"waits of counts", FuncCounting, func(c *Counts) { c.Stats.Waits = &WaitStats{FuncWait: make([]int64, 4), ChildWait: make([]int64, 4)} },
		"waits in a function counting profile"},
	{"waits of sampling", FuncSampling, func(c *Counts) { c.Stats.Waits = &WaitStats{FuncWait: make([]int64, 4), ChildWait: make([]int64, 4)} },
		"waits in a function sampling profile"},
	{"waits of too few functions", FuncTiming, func(c *Counts) { c.Stats.Waits.FuncWait = c.Stats.Waits.FuncWait[:3] },
		"waits of 3 and 4 functions for 4 functions"},
	{"no child waits", FuncTiming, func(c *Counts) { c.Stats.Waits.ChildWait = nil }, "waits of 4 and 0 functions for 4 functions"},
	{"negative wait", FuncTiming, func(c *Counts) { c.Stats.Waits.FuncWait[3] = -1 }, "function 3: wait -1 is negative or above the time, 0"},
	{"wait above the time", FuncTiming, func(c *Counts) { c.Stats.Waits.FuncWait[1] = 3000001 },
		"function 1: wait 3000001 is negative or above the time, 3000000"},
	{"child wait above the child time", FuncTiming, func(c *Counts) { c.Stats.Waits.ChildWait[0] = 8000001 },
		"function 0: child wait 8000001 is negative or above the child time, 8000000"},
	{"waits without times", FuncTiming, func(c *Counts) { c.Stats.FuncTime, c.Stats.ChildTime = nil, nil },
		"function 0: wait 2000000 is negative or above the time, 0"},
	{"negative inside wait", FuncTiming, func(c *Counts) { c.Stats.Waits.InsideWait = -1 }, "inside wait -1 is negative"},
	{"inside wait above the time inside", FuncTiming, func(c *Counts) { c.Stats.Waits.InsideWait = 8000001 },
		"inside wait 8000001 is negative or above the time inside, 8000000"},
	{"stack wait above its time", FuncTiming, func(c *Counts) { c.Stats.Stacks[0].Wait = c.Stats.Stacks[0].Time + 1 },
		"stack 0: wait 3000001 is negative or above the time, 3000000"},
	{"negative stack child wait", FuncTiming, func(c *Counts) { c.Stats.Stacks[1].ChildWait = -1 },
		"stack 1: child wait -1 is negative"},
	{"stack waits not measured", FuncTiming, func(c *Counts) { c.Stats.Waits = nil },
		"stack 0: waits in a profile that did not measure them"},
}

func TestMergedValidate(t *testing.T) {
	tests := []struct {
		name   string
		method Method
		edit   func(m *Merged)
		want   string
	}{
		{"valid", FuncTiming, func(*Merged) {}, ""},
		{"valid lines", LineCounting, func(*Merged) {}, ""},
		{"invalid plan", FuncTiming, func(m *Merged) { m.Plan.Method = 1 }, "invalid plan: unknown method 1"},
		{"overheads", FuncTiming, func(m *Merged) { m.Overheads = m.Overheads[:1] }, "invalid merged profile: 1 overheads for 2 runs"},
		{"negative overhead", FuncTiming, func(m *Merged) { m.Overheads[1] = -1 }, "invalid merged profile: run 1: negative overhead -1"},
		{"stacks without attribution", FuncCounting, func(m *Merged) { m.Plan.Attribution = false }, "attribution stacks in a plan without attribution"},
		{"fewer lines than hits", LineCounting, func(m *Merged) { m.Plan.Lines = m.Plan.Lines[:3] }, "invalid merged profile: 4 hit counts for 3 items"},
		{"one time too many", FuncTiming, func(m *Merged) { m.Stats.FuncTime = append(m.Stats.FuncTime, 0) }, "5 function times for 4 functions"},
		{"stack beyond the plan", FuncCounting, func(m *Merged) { m.Stats.Stacks[0].Func = 9 }, "stack 0: function 9 out of range"},
		{"waits of more functions than the plan's", FuncTiming, func(m *Merged) {
			m.Stats.Waits.ChildWait = append(m.Stats.Waits.ChildWait, 0)
		}, "invalid merged profile: waits of 4 and 5 functions for 4 functions"},
		{"waits above the summed times", FuncTiming, func(m *Merged) { m.Stats.Waits.FuncWait[0] = 7500001 },
			"invalid merged profile: function 0: wait 7500001 is negative or above the time, 7500000"},
		{"valid sampling", FuncSampling, func(*Merged) {}, ""},
		{"valid branches", LineCoverage, func(*Merged) {}, ""},
		{"ways of one branch too few", LineCoverage, func(m *Merged) { m.Stats.Branches = m.Stats.Branches[:2] }, "invalid merged profile: 2 branch counts for 2 branches"},
		{"unprobed of one branch too many", LineCoverage, func(m *Merged) { m.Stats.Unprobed = append(m.Stats.Unprobed, 0) }, "invalid merged profile: 3 unprobed counts for 2 branches"},
		{"samples of more lines than the plan's", FuncSampling, func(m *Merged) {
			m.Stats.Sampling.LineSamples = append(m.Stats.Sampling.LineSamples, 1)
		}, "invalid merged profile: samples of 5 lines for 4 lines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testMerged(t, tt.method)
			tt.edit(m)
			m.Plan.ID = PlanID(&m.Plan)
			prefix := "invalid merged profile: "
			if strings.HasPrefix(tt.want, "invalid plan") {
				prefix = ""
			}
			checkError(t, m.Validate(), prefix, strings.TrimPrefix(tt.want, prefix))
		})
	}
	var nilMerged *Merged
	checkError(t, nilMerged.Validate(), "invalid merged profile: ", "nil")
}

// checkError checks that err is nil when want is "", and otherwise that it
// begins with prefix and contains want.
func checkError(t *testing.T, err error, prefix, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected error %v", err)
	case want == "":
	case err == nil:
		t.Errorf("no error, want %q", want)
	case !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), want):
		t.Errorf("error %q, want %q containing %q", err, prefix+"...", want)
	}
}

// TestErrorsHideExpectedIdentity checks that no reader's error prints the
// identity it expected: the plan ID a plan's content gives, the checksum
// of a file's content, the plan ID of the database counts are merged
// into. Whoever forges a file would take them from the message.
func TestErrorsHideExpectedIdentity(t *testing.T) {
	// A plan whose content was changed after its ID was computed.
	p := testPlan(FuncCounting)
	p.Funcs[0].Entry++
	want := PlanID(p).String()
	if err := p.Validate(); err == nil || strings.Contains(err.Error(), want) {
		t.Errorf("stale plan id: error %v prints the id of the content", err)
	}
	// A file whose checksum does not match.
	b := encode(t, testCounts(FuncCounting, false))
	crc := binary.LittleEndian.Uint32(b[len(b)-4:])
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc+1)
	_, err := ReadCounts(bytes.NewReader(b))
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("bad checksum: %v", err)
	}
	for _, f := range []string{"%x", "%#x", "%#08x", "%d", "%08x"} {
		if s := fmt.Sprintf(f, crc); strings.Contains(err.Error(), s) {
			t.Errorf("bad checksum: error %q prints the checksum of the content (%s)", err, s)
		}
	}
	// Counts of another plan merged into a database.
	m := testMerged(t, FuncCounting)
	c := testCounts(FuncCounting, false)
	c.PlanID = otherProgram().ID
	c.Run.ID = NewRunID()
	err = m.Add(c)
	if !errors.Is(err, ErrNotSamePlan) || strings.Contains(err.Error(), m.Plan.ID.String()) {
		t.Errorf("counts of another plan: error %v prints the database's plan id", err)
	}
}
