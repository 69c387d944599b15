package e2e

import (
	"maps"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// sweepFixture are the lines of sweep.c the test checks: those of the
// functions in the section the program compares with its file, every
// one run, and never's, none.
var sweepFixture = map[int]string{
	36: "long y = x * 7;", 37: "y ^= y >> 3;", 38: "return y + 1;",
	43: "r += mix(i);", 44: "if (i % 3 == 0)", 45: "r -= 2;", 47: "r += 1;", 48: "return r;",
	63: `puts("never");`, 64: "exit(3);",
}

// sweptLines are sweepFixture's lines that run (45, 47 and 48 have no
// code of their own at -O2: a conditional move).
var sweptLines = []int{36, 37, 38, 43, 44, 45, 47, 48}

// sweepCompared are the lines of sweep.c whose coverage does not depend
// on how the threads are scheduled: those of mix, step, the workers'
// loop and never. (The main thread's loop runs as long as the section
// differs; a worker started after the loop ended returns at once.)
func sweepCompared(line int) bool { return line >= 34 && line <= 56 || line >= 61 && line <= 65 }

// sweepNarrated is what profile --explain says of a sweep.
var sweepNarrated = regexp.MustCompile(`PROFILE stopped the program \((\d+) threads?, [^)]*\) and wrote back the original bytes of \d+ jumps?`)

// TestLineSweepThreads: line coverage of sweep.c, in every build, whose
// four threads run the functions of a section of their own, busy, while
// its main thread compares that section with the program's file: once
// every line there is covered, PROFILE takes each of their jumps out
// with the threads running, and the program finds its own bytes back
// (it says "sweep clean"); in-process, the narration tells a sweep of
// several threads. The lines covered are exactly those with
// breakpoints (--breakpoints), every line of the section covered, and
// never()'s not (of the lines that run as the threads are scheduled, the
// main thread's and a worker's return, none is compared).
func TestLineSweepThreads(t *testing.T) {
	testutil.MustHavePtrace(t)
	checkFixtureLines(t, "c/sweep.c", sweepFixture)
	for _, b := range fixtureBuilds {
		t.Run(b.name, func(t *testing.T) {
			prog := testutil.BuildC(t, "sweep", append(b.flags, "-pthread")...)
			covered := func(flags ...string) (map[int]uint64, result) {
				t.Helper()
				dir, r := workflowWith(t, prog, []string{"/LV"}, flags, "20")
				if r.status != 0 || !strings.Contains(r.stdout, "sweep done") {
					t.Fatalf("profile %v: status %d, output %q\n%s", flags, r.status, r.stdout, r.stderr)
				}
				if !strings.Contains(r.stdout, "sweep clean after") {
					t.Errorf("profile %v: the section's code is not the file's: %q", flags, r.stdout)
				}
				return lineCounts(t, must(t, dir, "plist", "/nologo", "/T", filepath.Base(prog)).stdout)["sweep.c"], r
			}
			in, r := covered("--explain")
			bp, _ := covered("--breakpoints")
			for _, c := range []map[int]uint64{in, bp} {
				maps.DeleteFunc(c, func(line int, _ uint64) bool { return !sweepCompared(line) })
			}
			if !maps.Equal(in, bp) {
				t.Errorf("coverage in-process %v, with breakpoints %v", in, bp)
			}
			for _, line := range sweptLines {
				if c, ok := in[line]; c != 1 && (ok || line < 45) {
					t.Errorf("sweep.c:%d (%s): covered %d, want 1", line, sweepFixture[line], c)
				}
			}
			if in[63]+in[64] != 0 {
				t.Errorf("never()'s lines covered: %d, %d", in[63], in[64])
			}
			if !testutil.InProcess() {
				return
			}
			most := 0
			for _, m := range sweepNarrated.FindAllStringSubmatch(r.stderr, -1) {
				n, _ := strconv.Atoi(m[1])
				most = max(most, n)
			}
			if most < 2 {
				t.Errorf("no sweep of several threads narrated (the most: %d):\n%s", most, r.stderr)
			}
		})
	}
}
