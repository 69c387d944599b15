package plist

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// The functions of chromeProgram.
const (
	chMain = iota
	chCallerA
	chCallerB
	chLeaf
	chBar
	chOdd
)

// chromeProgram is the plan of the hand-built traces: a C++ name the
// timeline shows demangled, and a symbol whose name JSON must escape.
var chromeProgram = program{
	modules: []string{"prog", "libodd.so"},
	funcs: []fn{
		{0, "main", "prog.o", 2, 0, 0},
		{0, "caller_a", "prog.o", 2, 0, 0},
		{0, "caller_b", "prog.o", 1, 0, 0},
		{0, "leaf", "prog.o", 5, 0, 0},
		{0, "_ZN3Foo3barEv", "prog.o", 2, 0, 0},
		{1, "odd\"name\\<&>\x01é", "libodd.so", 1, 0, 0},
	},
}

// chromeTrace is a trace cut at its size limit, of two threads and a
// goroutine: thread 4242 runs main, which calls caller_a (leaf twice, the
// second call taking no time) and caller_b, which calls leaf at its own
// start and Foo::bar until its own end; thread 4343, whose first event
// comes first, calls Foo::bar and the odd name; the goroutine's main
// calls leaf, then caller_a, whose leaf returns as it calls Foo::bar, and
// the trace is cut: Foo::bar, caller_a and main are still open at its
// end, and end there. (Foo::bar takes no time at its callers' end: they
// are written as begin and end events, which hold it.)
func chromeTrace() *Trace {
	call := func(fn int, t int64) TraceEvent { return TraceEvent{Func: int32(fn), Time: t} }
	ret := func(fn int, t int64) TraceEvent { return TraceEvent{Func: int32(fn), Return: true, Time: t} }
	return &Trace{
		Header: datafile.TraceHeader{PlanID: datafile.ID{1}, RunID: datafile.Hex{0xab, 0xcd}, Method: datafile.FuncTiming,
			Start: time.Date(2026, time.November, 21, 4, 50, 0, 0, time.UTC), Funcs: 6},
		Status: datafile.TraceStatus{Ended: true, Cut: true, Limit: 1 << 20},
		Owners: []TraceOwner{
			{TraceOwner: datafile.TraceOwner{ID: 4242}, Events: []TraceEvent{
				call(chMain, 1000),
				call(chCallerA, 2000), call(chLeaf, 3000), ret(chLeaf, 4000), call(chLeaf, 5000), ret(chLeaf, 5000), ret(chCallerA, 9000),
				call(chCallerB, 10000), call(chLeaf, 10000), ret(chLeaf, 11000), call(chBar, 11000), ret(chBar, 15000), ret(chCallerB, 15000),
				ret(chMain, 20000),
			}},
			{TraceOwner: datafile.TraceOwner{Goroutine: true, ID: 0xc000001000}, Events: []TraceEvent{
				call(chMain, 1500), call(chLeaf, 1600), ret(chLeaf, 1700),
				call(chCallerA, 1800), call(chLeaf, 1900), ret(chLeaf, 2500), call(chBar, 2500),
			}},
			{TraceOwner: datafile.TraceOwner{ID: 4343}, Events: []TraceEvent{
				call(chBar, 500), ret(chBar, 800), call(chOdd, 900), ret(chOdd, 1234),
			}},
		},
	}
}

// writeChromeTrace writes tr as a timeline of chromeProgram's profile.
func writeChromeTrace(t *testing.T, tr *Trace) []byte {
	t.Helper()
	runAt := run("04:50", "prog at")
	runAt.ID = datafile.Hex{0xab, 0xcd}
	m := chromeProgram.merged(datafile.FuncTiming, []datafile.Run{runAt})
	o := DefaultOptions()
	o.Format, o.Version, o.Trace = FormatChrome, "test", tr
	var buf bytes.Buffer
	if err := Generate(&buf, m, o); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// chromeSlice is what a test expects of a slice.
type chromeSlice struct {
	name       string
	depth      int
	start, dur int64
	self       int64
	unfinished bool
}

// TestChrome writes the hand-built trace as a timeline, reads it with the
// tests' reader of the Trace Event Format (testutil.ReadChrome, which
// checks the format's rules, nesting above all), and checks every track
// and slice: names, order, nesting, times to the nanosecond. The file is
// pinned in testdata/export/trace.chrome.golden, and its rendering
// (testutil's WriteSVG) in trace.svg.golden (-update rewrites both).
func TestChrome(t *testing.T) {
	out := writeChromeTrace(t, chromeTrace())
	testutil.Golden(t, filepath.Join("testdata", "export", "trace.chrome.golden"), out)
	if !json.Valid(out) {
		t.Fatal("not valid JSON")
	}
	c, err := testutil.ReadChrome(out)
	if err != nil {
		t.Fatalf("ReadChrome: %v", err)
	}
	if c.DisplayTimeUnit != "ns" || c.Processes[1] != "prog" {
		t.Errorf("displayTimeUnit %q, processes %v", c.DisplayTimeUnit, c.Processes)
	}
	odd := "odd\"name\\<&>\x01é"
	want := []struct {
		name     string
		tid      int64
		sort     int64
		slices   []chromeSlice
		modules  string
		unfinish int
		spans    string // the slices written as begin and end events
	}{
		{"thread 4343", 4343, 0, []chromeSlice{
			{"Foo::bar()", 0, 500, 300, 300, false},
			{odd, 0, 900, 334, 334, false},
		}, "prog libodd.so", 0, ""},
		{"thread 4242", 4242, 1, []chromeSlice{
			{"main", 0, 1000, 19000, 7000, false},
			{"caller_a", 1, 2000, 7000, 6000, false},
			{"leaf", 2, 3000, 1000, 1000, false},
			{"leaf", 2, 5000, 0, 0, false},
			{"caller_b", 1, 10000, 5000, 0, false},
			{"leaf", 2, 10000, 1000, 1000, false},
			{"Foo::bar()", 2, 11000, 4000, 4000, false},
		}, "prog", 0, ""},
		{"goroutine at 0xc000001000", 1, 2, []chromeSlice{
			{"main", 0, 1500, 1000, 200, true},
			{"leaf", 1, 1600, 100, 100, false},
			{"caller_a", 1, 1800, 700, 100, true},
			{"leaf", 2, 1900, 600, 600, false},
			{"Foo::bar()", 2, 2500, 0, 0, true},
		}, "prog", 3, "main caller_a"},
	}
	if len(c.Threads) != len(want) {
		t.Fatalf("%d tracks, want %d", len(c.Threads), len(want))
	}
	for i, w := range want {
		th := c.Threads[i]
		if th.Name != w.name || th.TID != w.tid || th.PID != 1 || th.SortIndex != w.sort {
			t.Errorf("track %d: %q pid %d tid %d sort %d, want %q tid %d sort %d", i, th.Name, th.PID, th.TID, th.SortIndex, w.name, w.tid, w.sort)
		}
		if len(th.Slices) != len(w.slices) {
			t.Errorf("%s: %d slices, want %d", w.name, len(th.Slices), len(w.slices))
			continue
		}
		open := 0
		var spans []string
		for k, ws := range w.slices {
			s := th.Slices[k]
			unfinished := s.Args["unfinished"] == true
			if unfinished {
				open++
			}
			if s.Span {
				spans = append(spans, s.Name)
			}
			if s.Name != ws.name || s.Depth != ws.depth || s.Start != ws.start || s.Dur != ws.dur || s.Args["self_ns"] != json.Number(itoa(ws.self)) || unfinished != ws.unfinished {
				t.Errorf("%s slice %d: %q depth %d at %d for %d ns, args %v; want %+v", w.name, k, s.Name, s.Depth, s.Start, s.Dur, s.Args, ws)
			}
			if s.Parent >= 0 && (s.Start < th.Slices[s.Parent].Start || s.End() > th.Slices[s.Parent].End()) {
				t.Errorf("%s slice %d outside its parent", w.name, k)
			}
			if !strings.Contains(w.modules, s.Cat) {
				t.Errorf("%s slice %d: category %q", w.name, k, s.Cat)
			}
		}
		if open != w.unfinish || strings.Join(spans, " ") != w.spans {
			t.Errorf("%s: %d slices unfinished, spans %q; want %d, %q", w.name, open, spans, w.unfinish, w.spans)
		}
	}
	for name, n := range map[string]int{"main": 2, "caller_a": 2, "caller_b": 1, "leaf": 5, "Foo::bar()": 3, odd: 1} {
		if got := c.Count(name); got != n {
			t.Errorf("%d slices of %q, want %d", got, name, n)
		}
	}
	od := c.OtherData
	if od["trace"] != "cut" || od["cut_limit_bytes"] != json.Number("1048576") || od["unfinished_calls"] != json.Number("3") ||
		od["calls"] != json.Number("14") || od["threads"] != json.Number("3") || od["command"] != "prog at" || od["program"] != "prog" ||
		!strings.Contains(od["note"].(string), "cut at its size limit") {
		t.Errorf("otherData: %v", od)
	}

	var svg bytes.Buffer
	if err := c.WriteSVG(&svg, testutil.SVGOptions{Title: "prog: the timeline of a hand-built trace", Width: 800}); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, filepath.Join("testdata", "export", "trace.svg.golden"), svg.Bytes())
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestChromeWalk: for traces of every shape Walk takes (calls that do not
// return, returns without a call, deep nesting, times far from 0, calls
// of no time) the slices are the calls Walk finds, in the order they
// began, and they nest as the calls do: the last call, of no time at the
// end of its 15 callers (which the trace's end returns from), is inside
// them, which are spans of begin and end events.
func TestChromeWalk(t *testing.T) {
	base := int64(86400 * 1e9)                                    // a day into the run: microseconds with nine digits before the point
	evs := []TraceEvent{{Func: chLeaf, Return: true, Time: base}} // a return without its call
	now := base
	for d := range 40 {
		now += int64(d*7 + 1)
		evs = append(evs, TraceEvent{Func: int32(d % 5), Time: now})
	}
	for d := range 25 {
		now += int64(d*13 + 999)
		evs = append(evs, TraceEvent{Func: int32(d % 5), Return: true, Time: now})
		now += 1
		evs = append(evs, TraceEvent{Func: chLeaf, Time: now}, TraceEvent{Func: chLeaf, Return: true, Time: now})
	}
	tr := &Trace{Header: datafile.TraceHeader{Funcs: 6}, Owners: []TraceOwner{{TraceOwner: datafile.TraceOwner{ID: 77}, Events: evs}}}
	var calls []TraceCall
	var stack []int
	tr.Owners[0].Walk(func(s TraceStep) {
		if !s.Return {
			stack = append(stack, len(calls))
			calls = append(calls, s.Call)
			return
		}
		calls[stack[len(stack)-1]] = s.Call
		stack = stack[:len(stack)-1]
	})
	c, err := testutil.ReadChrome(writeChromeTrace(t, tr))
	if err != nil {
		t.Fatal(err)
	}
	if last := calls[len(calls)-1]; last.Depth != 15 || last.Start != last.End || last.End != calls[0].End {
		t.Fatalf("the last call %+v, want one of no time at depth 15 at the end", last)
	}
	if len(c.Threads) != 1 || len(c.Threads[0].Slices) != len(calls) {
		t.Fatalf("%d tracks, want 1 of %d slices", len(c.Threads), len(calls))
	}
	for i, s := range c.Threads[0].Slices {
		w := calls[i]
		if s.Depth != w.Depth || s.Span != (w.End == calls[len(calls)-1].Start && i < 15) || s.Start != w.Start || s.End() != w.End || s.Args["self_ns"] != json.Number(itoa(w.Self)) {
			t.Errorf("slice %d: depth %d [%d, %d] self %v, want %+v", i, s.Depth, s.Start, s.End(), s.Args["self_ns"], w)
		}
	}
	if u := c.OtherData["unfinished_calls"]; u != json.Number("15") || c.OtherData["trace"] != "unfinished" {
		t.Errorf("otherData %v", c.OtherData)
	}
}

// TestChromeTIDs: threads keep their IDs; goroutines, and threads whose ID
// a reader cannot take, get the smallest numbers no thread has, in the
// order of the tracks.
func TestChromeTIDs(t *testing.T) {
	owner := func(g bool, id uint64, first int64) TraceOwner {
		return TraceOwner{TraceOwner: datafile.TraceOwner{Goroutine: g, ID: id}, Events: []TraceEvent{{Time: first}}}
	}
	tr := &Trace{Owners: []TraceOwner{
		owner(true, 0xc000002000, 30), owner(false, 2, 20), owner(true, 0xc000001000, 10),
		owner(false, 1<<40, 40), owner(false, 1, 50), {TraceOwner: datafile.TraceOwner{ID: 9}},
	}}
	order := chromeOrder(tr)
	if want := []int{2, 1, 0, 3, 4, 5}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	tids := chromeTIDs(tr, order)
	if want := []int64{4, 2, 3, 5, 1, 9}; !slices.Equal(tids, want) {
		t.Errorf("tids %v, want %v", tids, want)
	}
}

// TestChromeNumbers: times are exact microseconds, names valid JSON
// strings whatever their bytes.
func TestChromeNumbers(t *testing.T) {
	for ns, want := range map[int64]string{0: "0.000", 1: "0.001", 999: "0.999", 1000: "1.000", 1234567: "1234.567",
		-5: "-0.005", math.MaxInt64: "9223372036854775.807", math.MinInt64: "-9223372036854775.808"} {
		if got := string(appendMicros(nil, ns)); got != want {
			t.Errorf("appendMicros(%d) = %s, want %s", ns, got, want)
		}
	}
	for _, s := range []string{"", "plain", `q"b\`, "\x00\x1f\x7f\n\t", "é€😀", "\xff\xfe", "a\u2028b\u2029", "operator<<(std::ostream&)"} {
		b := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("%q: %s: %v", s, b, err)
			continue
		}
		if want := string([]rune(s)); got != want {
			t.Errorf("%q: %s reads %q", s, b, got)
		}
	}
}

// TestChromeNoTrace: the timeline needs a trace.
func TestChromeNoTrace(t *testing.T) {
	m := chromeProgram.merged(datafile.FuncTiming, []datafile.Run{run("04:50", "prog")})
	o := DefaultOptions()
	o.Format = FormatChrome
	if err := Generate(&bytes.Buffer{}, m, o); !errors.Is(err, errNoTrace) {
		t.Errorf("Generate without a trace: %v", err)
	}
}
