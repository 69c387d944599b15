package plist

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sourceprofiler/sprof/datafile"
)

// oncpu is the input "oncpu" of the Linux goldens (linuxInputs).
func oncpu() *datafile.Merged {
	p := demoPlan(datafile.FuncTiming)
	p.Attribution = true
	m := &datafile.Merged{Plan: p, Runs: []datafile.Run{at0907(0, "prog data.bin")},
		Stats: datafile.Stats{Hits: demoHits, CallDepth: 4,
			TotalTime: 3_000_000, OutsideTime: 500_000, CPUTime: 800_000,
			//        main     twice(i) twice(d) Counter  bump    value   max     helper _start add      mul      helper ver
			FuncTime:  []int64{100_000, 62_500, 12_000, 1_000, 24_000, 500, 3_000, 0, 0, 1_800_000, 480_000, 0, 17_000},
			ChildTime: []int64{2_500_000, 62_500, 300_000, 1_000, 24_000, 500, 150_000, 0, 0, 1_800_000, 480_000, 0, 17_000},
			Waits: &datafile.WaitStats{
				FuncWait:   []int64{40_000, 0, 2_000, 0, 4_000, 0, 0, 0, 0, 1_500_000, 300_000, 0, 0},
				ChildWait:  []int64{1_846_000, 0, 6_000, 0, 4_000, 0, 0, 0, 0, 1_500_000, 300_000, 0, 0},
				InsideWait: 1_846_000, OutsideWait: 354_000},
			Stacks: []datafile.Stack{
				{Func: 0, Callers: []int{-1}, Hits: 1, Time: 100_000, ChildTime: 2_500_000, Wait: 40_000, ChildWait: 1_846_000},
				{Func: 1, Callers: []int{-1, 0}, Hits: 5, Time: 62_500, ChildTime: 62_500},
				{Func: 2, Callers: []int{-1, 0}, Hits: 1, Time: 12_000, ChildTime: 300_000, Wait: 2_000, ChildWait: 6_000},
				{Func: 3, Callers: []int{-1, 0}, Hits: 1, Time: 1_000, ChildTime: 1_000},
				{Func: 4, Callers: []int{0, 2}, Hits: 6, Time: 24_000, ChildTime: 24_000, Wait: 4_000, ChildWait: 4_000},
				{Func: 5, Callers: []int{-1, 0}, Hits: 1, Time: 500, ChildTime: 500},
				{Func: 6, Callers: []int{0, 2}, Hits: 3, Time: 3_000, ChildTime: 150_000},
				{Func: 9, Callers: []int{-1, 0}, Hits: 40, Time: 1_800_000, ChildTime: 1_800_000, Wait: 1_500_000, ChildWait: 1_500_000},
				{Func: 10, Callers: []int{-1, 0}, Hits: 12, Time: 480_000, ChildTime: 480_000, Wait: 300_000, ChildWait: 300_000},
				{Func: 12, Callers: []int{-1, 0}, Hits: 2, Time: 17_000, ChildTime: 17_000},
			}}}
	m = seal(m)
	m.Overheads = []int64{37}
	return m
}

// TestCPUTimes checks the figures of the view on a CPU: each time less
// its wait, the time inside less its waits, the total less every wait
// (never less than the time inside), and m left as it was.
func TestCPUTimes(t *testing.T) {
	m := oncpu()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	before := oncpu()
	c, err := CPUTimes(m)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, m); d != "" {
		t.Errorf("CPUTimes changed its input (-before +after):\n%s", d)
	}
	st := c.Stats
	if want := []int64{60_000, 62_500, 10_000, 1_000, 20_000, 500, 3_000, 0, 0, 300_000, 180_000, 0, 17_000}; !cmp.Equal(st.FuncTime, want) {
		t.Errorf("function times %v, want %v", st.FuncTime, want)
	}
	if want := []int64{654_000, 62_500, 294_000, 1_000, 20_000, 500, 150_000, 0, 0, 300_000, 180_000, 0, 17_000}; !cmp.Equal(st.ChildTime, want) {
		t.Errorf("child times %v, want %v", st.ChildTime, want)
	}
	if st.TotalTime != 800_000 || st.OutsideTime != 146_000 || st.CPUTime != 800_000 || st.Waits != nil {
		t.Errorf("total %d, outside %d, CPU %d, waits %v; want 800000, 146000, 800000, nil", st.TotalTime, st.OutsideTime, st.CPUTime, st.Waits)
	}
	if s := st.Stacks[7]; s.Time != 300_000 || s.ChildTime != 300_000 || s.Wait != 0 || s.ChildWait != 0 {
		t.Errorf("add's stack %+v", s)
	}
	// Every moment outside the calls a wait: the time inside is the
	// total, nothing outside. No figure goes below 0.
	m.Stats.Waits.OutsideWait = 500_000
	m.Stats.FuncTime[9] = 1_000_000 // (below its wait: not valid, and clamped)
	if c, err = CPUTimes(m); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats; st.TotalTime != 654_000 || st.OutsideTime != 0 || st.FuncTime[9] != 0 {
		t.Errorf("total %d, outside %d, add %d; want 654000, 0, 0", st.TotalTime, st.OutsideTime, st.FuncTime[9])
	}
	// Without waits.
	for _, edit := range []func(*datafile.Merged){
		func(m *datafile.Merged) { m.Stats.Waits = nil },
		func(m *datafile.Merged) { m.Plan.Method = datafile.FuncSampling },
	} {
		m := oncpu()
		edit(m)
		if c, err := CPUTimes(m); c != nil || !errors.Is(err, ErrNoWaits) || HasWaits(m) {
			t.Errorf("%s without waits: %v, %v", m.Plan.Method, c, err)
		}
		var buf bytes.Buffer
		o := DefaultOptions()
		o.Time = TimeCPU
		if err := Generate(&buf, m, o); !errors.Is(err, ErrNoWaits) || buf.Len() != 0 {
			t.Errorf("Generate: %v, %q", err, buf.String())
		}
		if err := WriteDiff(&buf, oncpu(), m, o); !errors.Is(err, ErrNoWaits) || buf.Len() != 0 {
			t.Errorf("WriteDiff: %v, %q", err, buf.String())
		}
	}
}

// TestTimeViewNames checks the names --time takes.
func TestTimeViewNames(t *testing.T) {
	for i, name := range TimeViewNames() {
		v, err := ParseTimeView(strings.ToUpper(name))
		if err != nil || v != TimeView(i) || v.String() != name {
			t.Errorf("%s: %v, %v", name, v, err)
		}
	}
	if _, err := ParseTimeView("wall"); err == nil || !strings.Contains(err.Error(), "elapsed, cpu") {
		t.Errorf("an unknown view: %v", err)
	}
}

// TestWaitedLineNamesTheView: the elapsed view's line that the threads
// mostly waited names --time=cpu when the runs measured the waits, and
// the listing made with --time=cpu says so in its place, whatever the
// threads' time on a CPU.
func TestWaitedLineNamesTheView(t *testing.T) {
	for _, c := range []struct {
		view TimeView
		cpu  int64
		want string
	}{
		{TimeElapsed, 800_000, "    Threads on a CPU 26.7% of the total time: the times are elapsed, waits included; plist --time=cpu shows the time on a CPU\n"},
		{TimeElapsed, 2_000_000, ""},
		{TimeCPU, 800_000, cpuLine + "\n"},
		{TimeCPU, 2_000_000, cpuLine + "\n"},
	} {
		m := oncpu()
		m.Stats.CPUTime = c.cpu
		o := DefaultOptions()
		o.Time = c.view
		var buf bytes.Buffer
		if err := Generate(&buf, m, o); err != nil {
			t.Fatal(err)
		}
		got := buf.String()
		if strings.Contains(got, "Threads on a CPU") != (c.view == TimeElapsed && c.want != "") ||
			strings.Contains(got, "Times on a CPU") != (c.view == TimeCPU) || !strings.Contains(got, c.want) {
			t.Errorf("%s view, CPU time %d: want %q in\n%s", c.view, c.cpu, c.want, got)
		}
	}
}

// TestJSONTimeView checks the JSON of each view: the view named, the
// times, and in the elapsed view the waits of each function and inside.
func TestJSONTimeView(t *testing.T) {
	type function struct {
		Name        string
		TimeNs      *int64 `json:"timeNs"`
		ChildNs     *int64 `json:"timeWithChildrenNs"`
		WaitNs      *int64 `json:"waitNs"`
		ChildWaitNs *int64 `json:"waitWithChildrenNs"`
		Callers     []struct {
			TimeNs *int64 `json:"timeNs"`
		}
	}
	type profile struct {
		TimeView     string     `json:"timeView"`
		TotalTimeNs  int64      `json:"totalTimeNs"`
		InsideWaitNs int64      `json:"insideWaitNs"`
		OutWaitNs    int64      `json:"outsideWaitNs"`
		Functions    []function `json:"functions"`
	}
	ns := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	for _, c := range []struct {
		view                                 TimeView
		total, inside, outside, add, addWait int64
	}{
		{TimeElapsed, 3_000_000, 1_846_000, 354_000, 1_800_000, 1_500_000},
		{TimeCPU, 800_000, 0, 0, 300_000, -1},
	} {
		o := DefaultOptions()
		o.Time, o.Format = c.view, FormatJSON
		var buf bytes.Buffer
		if err := Generate(&buf, oncpu(), o); err != nil {
			t.Fatal(err)
		}
		var out profile
		if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		add := out.Functions[9]
		if out.TimeView != c.view.String() || out.TotalTimeNs != c.total || out.InsideWaitNs != c.inside || out.OutWaitNs != c.outside ||
			ns(add.TimeNs) != c.add || ns(add.WaitNs) != c.addWait || ns(add.ChildWaitNs) != c.addWait ||
			len(add.Callers) != 1 || ns(add.Callers[0].TimeNs) != c.add {
			t.Errorf("%s view: %s", c.view, buf.String())
		}
	}
	// A profile of another type names no view.
	o := DefaultOptions()
	o.Format = FormatJSON
	var buf bytes.Buffer
	if err := Generate(&buf, linuxInputs["cpprust"](), o); err != nil || strings.Contains(buf.String(), "timeView") {
		t.Errorf("counting: %v, %s", err, buf.String())
	}
}
