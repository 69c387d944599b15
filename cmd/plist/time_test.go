package main

import (
	"os"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
)

// writeTimed writes NAME.pbt: function timing of f, which calls g, in
// one run, whose waits were measured when waits is set. f's calls took
// 300 ms of their own, 200 of them waiting, and 500 ms with g's, 250 of
// them waiting; g's took 200 ms, 50 of them waiting. Of 700 ms in all,
// 500 were inside f's calls, 250 of them waits; the threads were on a
// CPU 280 ms (40 %).
func writeTimed(t *testing.T, name string, waits bool) {
	t.Helper()
	const ms = 1_000_000
	p := &datafile.Plan{
		Method: datafile.FuncTiming, StartIndex: -1, Calibration: -1,
		Modules: []datafile.Module{{Name: "prog", Path: "/opt/prog", Arch: "amd64", PIE: true}},
		Funcs: []datafile.Func{
			{Name: "f", Source: "prog.o", Entry: 0x1100},
			{Name: "g", Source: "prog.o", Entry: 0x1200},
		},
	}
	p.ID = datafile.PlanID(p)
	c := &datafile.Counts{
		PlanID: p.ID, Method: p.Method,
		Run: datafile.Run{ID: datafile.NewRunID(), Time: 1700000000, CommandLine: "prog"},
		Stats: datafile.Stats{Hits: []uint64{10, 40}, CallDepth: 2,
			FuncTime: []int64{300 * ms, 200 * ms}, ChildTime: []int64{500 * ms, 200 * ms},
			TotalTime: 700 * ms, OutsideTime: 200 * ms, CPUTime: 280 * ms},
	}
	if waits {
		c.Stats.Waits = &datafile.WaitStats{FuncWait: []int64{200 * ms, 50 * ms}, ChildWait: []int64{250 * ms, 50 * ms},
			InsideWait: 250 * ms, OutsideWait: 170 * ms}
	}
	m := datafile.NewMerged(p)
	if err := m.Add(c); err != nil {
		t.Fatal(err)
	}
	if err := datafile.SaveMerged(name+".pbt", m); err != nil {
		t.Fatal(err)
	}
}

// TestTimeView lists a function timing profile whose run measured its
// calls' waits, elapsed and on a CPU, as the listing, the tab-delimited
// records and the JSON.
func TestTimeView(t *testing.T) {
	t.Chdir(t.TempDir())
	writeTimed(t, "prog", true)
	for _, tt := range []struct {
		args string
		want []string
	}{
		{"/nologo prog", []string{
			"    Total time: 700.000 millisecond\n",
			"    Time outside of functions: 200.000 millisecond\n",
			"    Threads on a CPU 40.0% of the total time: the times are elapsed, waits included; plist --time=cpu shows the time on a CPU\n",
			"     300.000  60.0      500.000 100.0       10 f (prog.o)\n",
			"     200.000  40.0      200.000  40.0       40 g (prog.o)\n",
		}},
		{"/nologo --time=cpu prog", []string{
			// 280 ms on a CPU, 250 of them inside f's calls.
			"    Total time: 280.000 millisecond\n",
			"    Time outside of functions: 30.000 millisecond\n",
			"    Times on a CPU (--time=cpu): the calls' waits left out\n",
			"     150.000  60.0      150.000  60.0       40 g (prog.o)\n",
			"     100.000  40.0      250.000 100.0       10 f (prog.o)\n",
		}},
		{"/nologo --time=CPU /t prog", []string{"2\t280.000\t30.000\t2\n", "6\tprog\tprog.o\t10\t100.000\t250.000\tf\n"}},
		{"/nologo --time cpu --format=json prog", []string{`"timeView": "cpu"`, `"totalTimeNs": 280000000`, `"timeNs": 100000000`}},
		{"/nologo --time=elapsed --format=json prog", []string{`"timeView": "elapsed"`, `"insideWaitNs": 250000000`,
			`"waitNs": 200000000`, `"waitWithChildrenNs": 250000000`}},
	} {
		stdout, stderr, status := runPlist(t, words(tt.args), "")
		if status != 0 || stderr != "" {
			t.Errorf("plist %s: status %d, stderr %q", tt.args, status, stderr)
		}
		for _, want := range tt.want {
			if !strings.Contains(stdout, want) {
				t.Errorf("plist %s: no %q in\n%s", tt.args, want, stdout)
			}
		}
		if strings.Contains(tt.args, "cpu") && strings.Contains(stdout, "Threads on a CPU") {
			t.Errorf("plist %s: the elapsed view's line", tt.args)
		}
	}
}

// TestTimeViewRefused: --time=cpu of a profile whose runs did not measure
// the waits, or of another type, is PRF1484, before anything is written,
// with a hint; the base of a comparison too. An unknown view is a bad
// command line.
func TestTimeViewRefused(t *testing.T) {
	t.Chdir(t.TempDir())
	writeTimed(t, "elapsed", false)
	writeTimed(t, "waited", true)
	writeProfile(t, "fcount.pbt", testRun(testPlan()))
	for _, tt := range []struct {
		args, want string
		status     int
	}{
		{"--time=cpu -o out.txt elapsed", "plist: fatal error PRF1484: elapsed.pbt: its runs did not measure each call's time on a CPU (function timing of C, C++ or Rust with the books kept in the program, where perf events are allowed)\n" +
			"plist: hint: a database holds the waits only when every run merged into it measured them: prepare the program again (prep /FT), profile it and merge; without --time=cpu, plist lists the elapsed times\n", 1},
		{"--time=cpu -o out.txt fcount", "plist: fatal error PRF1484: fcount.pbt: a function counting profile has no times\n" +
			"plist: hint: --time=cpu lists the times of function timing (prep /FT)\n", 1},
		{"--time=cpu -o out.txt --diff-base elapsed waited", "plist: fatal error PRF1484: elapsed.pbt: its runs did not measure", 1},
		{"--time=wall -o out.txt waited", "plist: fatal error PRF1102: --time=wall: invalid option\nplist: hint: the views are elapsed, cpu\n", 2},
		{"--time -o out.txt waited", "plist: fatal error PRF1103: --time option requires an additional argument\n", 2},
	} {
		_, stderr, status := runPlist(t, append([]string{"/nologo"}, words(tt.args)...), "")
		if status != tt.status || !strings.HasPrefix(stderr, tt.want) {
			t.Errorf("plist %s: status %d, stderr\n%s\nwant status %d, stderr\n%s", tt.args, status, stderr, tt.status, tt.want)
		}
		if _, err := os.Stat("out.txt"); err == nil {
			t.Errorf("plist %s wrote its report", tt.args)
		}
	}
	// Compared with itself on a CPU, nothing changed.
	stdout, stderr, status := runPlist(t, words("/nologo --time=cpu --diff-base waited waited"), "")
	if status != 0 || stderr != "" || !strings.HasPrefix(stdout, "Profile: Function timing, times on a CPU, compared with waited.pbt\n") ||
		!strings.Contains(stdout, "0 of 2 functions changed") {
		t.Errorf("plist --time=cpu --diff-base: status %d, stderr %q, stdout\n%s", status, stderr, stdout)
	}
}
