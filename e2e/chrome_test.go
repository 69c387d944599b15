package e2e

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// timeline is -timeline: TestTraceChrome draws its timeline into
// docs/images/timeline.svg, the picture of docs/exports.md.
var timeline = flag.Bool("timeline", false, "draw TestTraceChrome's timeline into docs/images/timeline.svg")

// TestTraceChrome profiles timing.c's at mode with /FT and /TRACE (main
// calls caller_a, which calls leaf 3 times, and caller_b twice, which calls
// it twice; then rec(4), which recurses 4 levels) and writes the trace as
// a timeline, plist --format=chrome, which the tests' reader of the Trace
// Event Format reads (testutil.ReadChrome: its rules, nesting above
// all): one track, a slice per call, each callee's inside its caller's,
// and each slice's own time its time less its callees', which add up to
// the report's function times.
func TestTraceChrome(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "timing", "-O0")
	dir, r := workflowWith(t, prog, []string{"/FT"}, []string{"/TRACE"}, "at")
	if r.status != 0 {
		t.Fatalf("profile: status %d\n%s", r.status, r.stderr)
	}
	out := must(t, dir, "plist", "/nologo", "--format=chrome", "-o", "trace.json", "timing")
	if out.stdout != "" || out.stderr != "" {
		t.Errorf("plist --format=chrome -o trace.json printed %q, %q", out.stdout, out.stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := testutil.ReadChrome(data)
	if err != nil {
		t.Fatalf("ReadChrome: %v", err)
	}
	if len(c.Threads) != 1 {
		t.Fatalf("%d tracks, want 1", len(c.Threads))
	}
	th := c.Threads[0]
	if th.Name != "thread "+strconv.FormatInt(th.TID, 10) || th.SortIndex != 0 || c.Processes[th.PID] != "timing" ||
		c.OtherData["trace"] != "whole" || c.OtherData["calls"] != json.Number(strconv.Itoa(len(th.Slices))) || c.OtherData["command"] != "timing at" {
		t.Errorf("track %q tid %d sort %d, process %q, otherData %v", th.Name, th.TID, th.SortIndex, c.Processes[th.PID], c.OtherData)
	}
	for name, n := range map[string]int{"main": 1, "caller_a": 1, "caller_b": 2, "leaf": 7, "rec": 5} {
		if got := c.Count(name); got != n {
			t.Errorf("%d slices of %s, want %d", got, name, n)
		}
	}

	// Nesting: leaf inside caller_a (3) and caller_b (2 each), those and
	// the outermost rec inside main, each rec inside the one before.
	children := make([]int, len(th.Slices))
	childTime := make([]int64, len(th.Slices))
	leaves := map[string][]int{}
	var recs []int
	callerA := -1
	for i := range th.Slices {
		s := &th.Slices[i]
		parent := ""
		if s.Parent >= 0 {
			parent = th.Slices[s.Parent].Name
			children[s.Parent]++
			childTime[s.Parent] += s.Dur
		}
		switch s.Name {
		case "leaf":
			leaves[parent] = append(leaves[parent], s.Parent)
		case "caller_a", "caller_b":
			if s.Name == "caller_a" {
				callerA = i
			}
			if parent != "main" {
				t.Errorf("%s inside %q, want main", s.Name, parent)
			}
		case "rec":
			want, wantSlice := "main", s.Parent
			if len(recs) > 0 {
				want, wantSlice = "rec", recs[len(recs)-1]
			}
			if parent != want || s.Parent != wantSlice {
				t.Errorf("rec %d inside %q (slice %d), want %s (slice %d)", len(recs), parent, s.Parent, want, wantSlice)
			}
			recs = append(recs, i)
		case "main":
			if s.Depth != 0 {
				t.Errorf("main at depth %d", s.Depth)
			}
		}
	}
	if len(leaves["caller_a"]) != 3 || len(leaves["caller_b"]) != 4 || len(leaves) != 2 {
		t.Errorf("leaf inside %v, want caller_a 3 times, caller_b 4", leaves)
	}
	for _, p := range leaves["caller_b"] {
		if children[p] != 2 {
			t.Errorf("a caller_b has %d slices inside it, want 2", children[p])
		}
	}

	// Times: a slice's own time (args.self_ns) is its time less its
	// callees', and they add up to the report's function times.
	m, err := datafile.OpenMerged(filepath.Join(dir, "timing.pbt"))
	if err != nil {
		t.Fatal(err)
	}
	index := map[string]int{}
	for i, f := range m.Plan.Funcs {
		index[f.Name] = i
	}
	self := map[string]int64{}
	for i := range th.Slices {
		s := &th.Slices[i]
		v, _ := s.Args["self_ns"].(json.Number)
		n, err := v.Int64()
		if err != nil || n != s.Dur-childTime[i] {
			t.Errorf("%s at %d ns: self_ns %v, want its %d ns less its callees' %d", s.Name, s.Start, s.Args["self_ns"], s.Dur, childTime[i])
		}
		self[s.Name] += n
	}
	for _, name := range []string{"main", "caller_a", "caller_b", "leaf", "rec"} {
		if got, want := self[name], m.Stats.FuncTime[index[name]]; got != want {
			t.Errorf("%s: own times add up to %d ns, the report's function time is %d", name, got, want)
		}
	}

	if *timeline {
		// The picture: main's calls, from caller_a's start to the last
		// rec's end, and a tenth of that on either side.
		if callerA < 0 || len(recs) == 0 {
			t.Fatal("no caller_a or rec to draw")
		}
		from, to := th.Slices[callerA].Start, th.Slices[recs[0]].End()
		margin := (to - from) / 10
		f, err := os.Create(filepath.Join(testutil.Root(t), "docs", "images", "timeline.svg"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := c.WriteSVG(f, testutil.SVGOptions{Title: "timing at: plist --format=chrome, main's calls",
			Width: 900, From: from - margin, To: to + margin}); err != nil {
			t.Fatal(err)
		}
	}
}
