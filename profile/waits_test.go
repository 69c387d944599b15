package profile

import (
	"strconv"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// TestWaitForThread: main starts a thread, joiner(), that calls tiny()
// 20,000 times, and waits for it in wait_all(), which calls nothing
// profiled (timing.c, join mode). PROFILE holds the worker often: for its
// full ring, 16 records in-process (2,500 stops), or at each call's entry
// and exit with breakpoints. wait_all waits that much longer than it
// would natively: its time is the worker's as PROFILE measures it, the
// holds taken out, and the thread's end; no more than joiner's time and
// what the program measured of the wait beyond its worker, 2 ms and a
// tenth of what PROFILE took out of the worker (the moments of the wait
// before PROFILE first looks at it and after it last did), no less than
// joiner's time less 2 ms and the same tenth (the stops' edges are
// PROFILE's estimates: the part of a stop before PROFILE sees it is
// calibrated, not measured, and an arm64 VM under load, whose stops cost
// tens of microseconds, was seen 2.5 ms below; under emulation, where
// the edges of some 2,500 stops are estimates of tens to hundreds of
// microseconds each, the tenth is a fifth: the plain VM, its host busy,
// saw wait_all at 25.6 ms against a bound of 20.5, the worker's holds 59
// ms). joiner's own time lies between what the
// program measured of it less every time PROFILE may take out (the
// worker's time off its CPU in chunks of calls in which it gave its CPU
// up, its records' and traps' time on the CPU beyond the same calls of
// twin) and what it measured, each widened by 2 ms. Charged the holds,
// wait_all read the whole wait: 950 ms for a worker of 26 ms.
func TestWaitForThread(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "timing", fixtureFlags["O2-pie"]...)
	for _, m := range mechanisms {
		t.Run(m.name, func(t *testing.T) {
			n := testutil.Scale(20000)
			if m.breakpoints {
				n = testutil.Scale(2000)
			} else {
				if !testutil.TimesInProcess() {
					t.Skip("no rings: timing with breakpoints")
				}
				defer func(n int, b bool) { ringRecords, booksInProgram = n, b }(ringRecords, booksInProgram)
				booksInProgram = false // (the rings' full stops)
				ringRecords = 16
			}
			plan := planFor(t, prog, datafile.FuncTiming, "main", "wait_all", "joiner", "tiny")
			got := runTimedWith(t, plan, prog, m.breakpoints, "join", strconv.Itoa(n), "64")
			checkHits(t, got.hits, map[string]uint64{"main": 1, "wait_all": 1, "joiner": 1, "tiny": uint64(n)})
			j := testutil.ParseOwn(t, got.stdout)["join"]
			if j["worker"] <= 0 || j["in"] < j["worker"] {
				t.Fatalf("the program's join: %v", j)
			}
			wait, worker := got.all["wait_all"], got.all["joiner"]
			t.Logf("wait_all %.2f ms, joiner %.2f ms; the program's wait %.2f ms, its worker %.2f ms: held %.2f ms, mixed %.2f ms, extra %.2f ms",
				ms(wait), ms(worker), ms(j["in"]), ms(j["worker"]), ms(j["held"]), ms(j["mixed"]), ms(j["extra"]))
			if got.self["wait_all"] != wait {
				t.Errorf("wait_all: function time %d, function+child time %d: want equal", got.self["wait_all"], wait)
			}
			if low, high := j["worker"]-j["held"]-j["mixed"]-j["extra"]-2e6, j["worker"]+2e6; worker < low || worker > high {
				t.Errorf("joiner's time %.2f ms: want between %.2f and %.2f ms", ms(worker), ms(low), ms(high))
			}
			tenth := max(j["worker"]-worker, 0) / 10
			if testutil.Slow() {
				tenth *= 2 // (a fifth under emulation: see above)
			}
			low, high := worker-2e6-tenth, worker+(j["in"]-j["worker"])+2e6+tenth
			if wait < low || wait > high {
				t.Errorf("wait_all's time %.2f ms: want between %.2f and %.2f ms", ms(wait), ms(low), ms(high))
			}
		})
	}
}

// ms is a time in milliseconds.
func ms(ns int64) float64 { return float64(ns) / 1e6 }
