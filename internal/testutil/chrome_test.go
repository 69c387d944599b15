package testutil

import (
	"strings"
	"testing"
)

// TestReadChrome: the reader takes a timeline that keeps the rules, nests
// its slices, and names the broken rule of each one that does not.
func TestReadChrome(t *testing.T) {
	const head = `{"name":"process_name","ph":"M","pid":1,"tid":1,"args":{"name":"p"}},` +
		`{"name":"thread_name","ph":"M","pid":1,"tid":7,"args":{"name":"thread 7"}},` +
		`{"name":"thread_sort_index","ph":"M","pid":1,"tid":7,"args":{"sort_index":0}}`
	x := func(name string, tid int, ts, dur string) string {
		return `{"name":"` + name + `","cat":"p","ph":"X","pid":1,"tid":` + string(rune('0'+tid)) + `,"ts":` + ts + `,"dur":` + dur + `,"args":{"self_ns":1}}`
	}
	file := func(events ...string) string {
		return `{"traceEvents":[` + strings.Join(append([]string{head}, events...), ",") + `],"displayTimeUnit":"ns","otherData":{"trace":"whole"}}`
	}
	good := file(
		x("main", 7, "1.000", "10.000"),
		x("a", 7, "1.000", "2.000"),     // at its parent's start
		x("b", 7, "3.000", "0.000"),     // right after a, no time
		x("c", 7, "3.000", "8.000"),     // at b's time, to main's end
		x("d", 7, "11.000", "0.000"),    // at c's and main's end
		x("e", 7, "11.000", "1.500"),    // after them
		x("other", 8, "2.000", "1.000"), // another track, no name
		// A span holding a slice of no time at its end, then one after it.
		`{"name":"span","ph":"B","pid":1,"tid":7,"ts":20,"args":{"self_ns":5000}}`,
		x("z", 7, "25", "0"),
		`{"name":"span","ph":"E","pid":1,"tid":7,"ts":25}`,
		x("after", 7, "25", "1"),
	)
	c, err := ReadChrome([]byte(good))
	if err != nil {
		t.Fatalf("ReadChrome: %v", err)
	}
	if len(c.Threads) != 2 || c.Threads[0].Name != "thread 7" || c.Threads[1].SortIndex != -1 || c.Processes[1] != "p" || c.OtherData["trace"] != "whole" {
		t.Fatalf("%+v", c)
	}
	var got []string
	for _, s := range c.Threads[0].Slices {
		parent := "-"
		if s.Parent >= 0 {
			parent = c.Threads[0].Slices[s.Parent].Name
		}
		got = append(got, s.Name+":"+parent+":"+string(rune('0'+s.Depth)))
	}
	if want := "main:-:0 a:main:1 b:main:1 c:main:1 d:-:0 e:-:0 span:-:0 z:span:1 after:-:0"; strings.Join(got, " ") != want {
		t.Errorf("nesting %s, want %s", strings.Join(got, " "), want)
	}
	if s := c.Threads[0].Slices[5]; s.Start != 11000 || s.Dur != 1500 || s.Span || c.Count("main") != 1 {
		t.Errorf("e: %+v", s)
	}
	if s := c.Threads[0].Slices[6]; s.Start != 20000 || s.Dur != 5000 || !s.Span || s.Args["self_ns"] == nil {
		t.Errorf("span: %+v", s)
	}

	for _, bad := range []struct{ data, err string }{
		{`[` + head + `]`, "not a JSON object"},
		{`{"traceEvents":[]} {}`, "data after"},
		{`{"displayTimeUnit":"ns"}`, `no "traceEvents"`},
		{`{"traceEvents":[],"displayTimeUnit":"us"}`, "displayTimeUnit"},
		{`{"traceEvents":[],"otherData":[1]}`, "otherData"},
		{`{"traceEvents":{}}`, "not an array"},
		{file(`{"ph":"X","pid":1,"tid":7,"ts":1,"dur":1}`), "no string name"},
		{file(`{"name":"f","ph":"XX","pid":1,"tid":7,"ts":1,"dur":1}`), "not one letter"},
		{file(`{"name":"f","ph":"X","pid":1,"ts":1,"dur":1}`), "no number tid"},
		{file(`{"name":"f","ph":"X","pid":-1,"tid":7,"ts":1,"dur":1}`), "pid -1 is not"},
		{file(`{"name":"f","ph":"X","pid":1,"tid":4294967296,"ts":1,"dur":1}`), "not a 32-bit"},
		{file(`{"name":"f","ph":"X","pid":1,"tid":7,"dur":1}`), "no number ts"},
		{file(`{"name":"f","ph":"X","pid":1,"tid":7,"ts":"1","dur":1}`), "no number ts"},
		{file(`{"name":"f","ph":"X","pid":1,"tid":7,"ts":1,"dur":-1}`), "dur -1"},
		{file(`{"name":"f","ph":"X","pid":1,"tid":7,"ts":1,"dur":1,"cat":3}`), "cat is not"},
		{file(`{"name":"f","ph":"X","pid":1,"tid":7,"ts":1,"dur":1,"args":[]}`), "args is not"},
		{file(`{"name":"f","ph":"i","pid":1,"tid":7,"ts":1}`), `phase "i"`},
		{file(`{"name":"f","ph":"B","pid":1,"tid":7}`), "no number ts"},
		{file(`{"name":"f","ph":"B","pid":1,"tid":7,"ts":1}`), "begin of f at 1000 ns without its end"},
		{file(`{"name":"f","ph":"E","pid":1,"tid":7,"ts":1}`), "end of f at 1000 ns without its begin"},
		{file(`{"name":"f","ph":"B","pid":1,"tid":7,"ts":1}`, `{"name":"g","ph":"E","pid":1,"tid":7,"ts":2}`), "end of g at 2000 ns for the begin of f"},
		{file(`{"name":"f","ph":"B","pid":1,"tid":7,"ts":1}`, x("c", 7, "2", "10"), `{"name":"f","ph":"E","pid":1,"tid":7,"ts":5}`), "end of f at 5000 ns inside c, which ends at 12000 ns"},
		{file(x("g", 7, "1", "4"), `{"name":"f","ph":"B","pid":1,"tid":7,"ts":2}`, `{"name":"f","ph":"E","pid":1,"tid":7,"ts":8}`), "f [2000, 8000] ns overlaps g [1000, 5000]"},
		{file(`{"name":"thread_name","ph":"M","pid":1,"tid":7,"args":{"name":"again"}}`), "a second thread_name 1/7"},
		{file(`{"name":"thread_name","ph":"M","pid":1,"tid":9,"args":{"title":"t"}}`), "without args.name"},
		{file(`{"name":"thread_name","ph":"M","pid":1,"tid":9,"args":{"name":9}}`), "args.name 9 is not a string"},
		{file(`{"name":"thread_sort_index","ph":"M","pid":1,"tid":9,"args":{"sort_index":1.5}}`), "not an integer"},
		{file(`{"name":"process_labels","ph":"M","pid":1,"tid":9,"args":{"labels":"x"}}`), "metadata"},
		// Partial overlaps: across the end of the open slice, and a
		// parent after its child of the same start (readers sort by ts,
		// stably).
		{file(x("main", 7, "1", "10"), x("f", 7, "5", "10")), "f [5000, 15000] ns overlaps main [1000, 11000]"},
		{file(x("child", 7, "1", "2"), x("parent", 7, "1", "10")), "parent [1000, 11000] ns overlaps child"},
		{file(x("main", 7, "1", "10"), x("a", 7, "2", "5"), x("b", 7, "6", "6")), "b [6000, 12000] ns overlaps a"},
	} {
		if _, err := ReadChrome([]byte(bad.data)); err == nil || !strings.Contains(err.Error(), bad.err) {
			t.Errorf("ReadChrome(%.80s...): %v, want an error with %q", bad.data, err, bad.err)
		}
	}
}
