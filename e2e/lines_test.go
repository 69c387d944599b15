package e2e

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// lineCounts reads the line records (7) of plist /T: hits by file base
// name and line.
func lineCounts(t *testing.T, out string) map[string]map[int]uint64 {
	t.Helper()
	got := map[string]map[int]uint64{}
	for _, l := range strings.Split(strings.ReplaceAll(out, "\r\n", "\n"), "\n") {
		f := strings.Split(l, "\t")
		if f[0] != "7" || len(f) < 5 {
			continue
		}
		line, err1 := strconv.Atoi(f[3])
		hits, err2 := strconv.ParseUint(f[4], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("record %q", l)
		}
		file := filepath.Base(strings.ReplaceAll(f[2], `\`, "/"))
		if got[file] == nil {
			got[file] = map[int]uint64{}
		}
		got[file][line] = hits
	}
	return got
}

// TestLineCounting profiles the original's lcount program (lcount.c and
// lcount2.c) with /LC, unoptimised, PIE and not, and compares every count
// with the original's (lcount/lc-plist-t.out): loops of 100 and of 5 × 4
// iterations, a function called 20 times, one never called, a branch
// never taken. A for header counts its initialisation once. The lines gcc
// gives no code of their own (a loop's closing brace, an else) are the
// only ones the original has and the profile has not.
func TestLineCounting(t *testing.T) {
	testutil.MustHavePtrace(t)
	want := lineCounts(t, testutil.OriginalText(t, "lcount/lc-plist-t.out"))
	noCode := map[int]bool{27: true, 28: true, 32: true}
	for _, b := range []build{fixtureBuilds[0], fixtureBuilds[1]} {
		t.Run(b.name, func(t *testing.T) {
			prog := testutil.BuildOriginalUnits(t, "lcount", []string{"lcount.c", "lcount2.c"}, b.flags...)
			dir, r := workflow(t, prog, []string{"/LC"})
			if r.status != 0 || !strings.Contains(r.stdout, "sum=5033") {
				t.Fatalf("profile: status %d, output %q\n%s", r.status, r.stdout, r.stderr)
			}
			got := lineCounts(t, must(t, dir, "plist", "/nologo", "/T", filepath.Base(prog)).stdout)
			for file, lines := range want {
				for line, hits := range lines {
					g, ok := got[file][line]
					switch {
					case !ok && !(file == "lcount.c" && noCode[line]):
						t.Errorf("%s:%d: not profiled, the original counted %d", file, line, hits)
					case ok && g != hits:
						t.Errorf("%s:%d: %d hits, the original %d", file, line, g, hits)
					}
				}
				for line := range got[file] {
					if _, ok := lines[line]; !ok {
						t.Errorf("%s:%d: profiled, the original has no such line", file, line)
					}
				}
			}
		})
	}
}

// TestLineCoverage profiles lcount with /LV and compares the lines it
// covers with those gcov finds executed in a run of the same sources built
// for it, at -O0: the same lines, but for how the two name a function's
// first line (gcov its declaration's, the line table its opening brace)
// and that gcov gives the closing brace no line.
func TestLineCoverage(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildOriginalUnits(t, "lcount", []string{"lcount.c", "lcount2.c"}, fixtureBuilds[0].flags...)
	dir, r := workflow(t, prog, []string{"/LV"})
	if r.status != 0 {
		t.Fatalf("profile: status %d\n%s", r.status, r.stderr)
	}
	got := lineCounts(t, must(t, dir, "plist", "/nologo", "/T", filepath.Base(prog)).stdout)
	if testutil.Slow() || !testutil.HaveTool("gcov") {
		// (No gcov in the arm64 VM: the lines are those counting finds
		// run, known by construction.)
		covered := []int{}
		for line, hits := range got["lcount.c"] {
			if hits > 0 {
				covered = append(covered, line)
			}
		}
		slices.Sort(covered)
		if want := []int{12, 13, 14, 17, 19, 21, 22, 24, 25, 26, 30, 33, 36, 37, 38, 39}; !slices.Equal(covered, want) {
			t.Errorf("covered lines of lcount.c %v, want %v", covered, want)
		}
		return
	}
	executed, text := gcovRun(t)
	for file, lines := range got {
		for line, hits := range lines {
			first := strings.HasPrefix(text[file][line], "{") && executed[file][line-1]
			end := strings.HasPrefix(text[file][line], "}")
			if (hits > 0) != executed[file][line] && !first && !end {
				t.Errorf("%s:%d (%q): covered %v, gcov executed %v", file, line, text[file][line], hits > 0, executed[file][line])
			}
		}
	}
	for file, lines := range executed {
		for line := range lines {
			if _, ok := got[file][line]; !ok && !strings.HasPrefix(text[file][line+1], "{") {
				t.Errorf("%s:%d (%q): executed by gcov's count, not profiled", file, line, text[file][line])
			}
		}
	}
	t.Logf("%d files, gcov executed %v lines", len(executed), slices.Sorted(maps.Keys(executed["lcount.c"])))
}

// gcovRun builds lcount for gcov, runs it and returns the lines gcov
// counts executed, and every line's text, by file.
func gcovRun(t *testing.T) (executed map[string]map[int]bool, text map[string]map[int]string) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(testutil.Root(t), "testdata", "original", "src")
	for _, f := range []string{"lcount.c", "lcount2.c"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) string {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	run(testutil.CC(), "-O0", "--coverage", "-o", "lc", "lcount.c", "lcount2.c")
	run("./lc")
	executed, text = map[string]map[int]bool{}, map[string]map[int]string{}
	re := regexp.MustCompile(`^\s*([^:]+):\s*(\d+):(.*)$`)
	for _, f := range []string{"lcount", "lcount2"} {
		executed[f+".c"], text[f+".c"] = map[int]bool{}, map[int]string{}
		for _, l := range strings.Split(run("gcov", "-t", "lc-"+f+".gcda"), "\n") {
			m := re.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			n, _ := strconv.Atoi(m[2])
			text[f+".c"][n] = strings.TrimSpace(m[3])
			if c := strings.TrimSpace(m[1]); c != "-" && c != "#####" && c != "=====" {
				executed[f+".c"][n] = true
			}
		}
	}
	return executed, text
}

// TestLineCountingThreads: four threads run a loop whose body calls
// work() N times each; every hit of every thread counts, at -O0 the loop
// body's line and work()'s, at -O2 work()'s (whose line's lowest address
// is its entry; the loop's may be before the loop once optimised).
func TestLineCountingThreads(t *testing.T) {
	testutil.MustHavePtrace(t)
	// The lines of the loop body and of work() in threads.c, checked
	// where the source is at hand (not in the arm64 VM).
	const body, work = 21, 15
	_, self, _, _ := runtime.Caller(0)
	if src, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "testdata", "progs", "c", "threads.c")); err == nil {
		lines := strings.Split(string(src), "\n")
		if !strings.Contains(lines[body-1], "r += work(i);") || !strings.Contains(lines[work-1], "KEEP long work(") {
			t.Fatalf("threads.c lines %d and %d: %q, %q", body, work, lines[body-1], lines[work-1])
		}
	}
	calls := max(threadCalls/4, 1) // (a stop per line: a quarter of the counting tests' calls)
	for _, b := range []build{fixtureBuilds[0], fixtureBuilds[2]} {
		t.Run(b.name, func(t *testing.T) {
			prog := testutil.BuildC(t, "threads", b.flags...)
			dir, r := workflow(t, prog, []string{"/LC"}, strconv.Itoa(calls))
			if r.status != 0 || !strings.Contains(r.stdout, "threads done") {
				t.Fatalf("profile: status %d, output %q\n%s", r.status, r.stdout, r.stderr)
			}
			got := lineCounts(t, must(t, dir, "plist", "/nologo", "/T", filepath.Base(prog)).stdout)["threads.c"]
			want := uint64(4 * calls)
			if got[work] != want {
				t.Errorf("work's line %d: %d hits, want %d", work, got[work], want)
			}
			if b.name == "O0-pie" && got[body] != want {
				t.Errorf("the loop body's line %d: %d hits, want %d", body, got[body], want)
			}
		})
	}
}

// The lines of lines.c the tests below check by construction, checked
// against the source where it is at hand (not in the arm64 VM).
var linesFixture = map[string]int{
	"switch":  34,  // switch (x % 12) {
	"inc":     58,  // acc += 1;
	"thrown":  86,  // thrown++;
	"after":   90,  // sink += 1; (after the call that may longjmp)
	"handler": 97,  // handled += sig;
	"spin":    104, // s += i ^ (s >> 3);
	// From the handler to the end of the thread that sends the signals,
	// the lines run as often as the signals come, and the spin loop's as
	// SPIN says: compared apart.
	"timedFrom": 95,  // static void on_signal(int sig)
	"timedTo":   118, // the end of pester
}

// checkLinesFixture fails unless lines.c's lines are where
// linesFixture says.
func checkLinesFixture(t *testing.T) {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	src, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "testdata", "progs", "c", "lines.c"))
	if err != nil {
		return
	}
	lines := strings.Split(string(src), "\n")
	want := map[string]string{"switch": "switch (x % 12)", "inc": "acc += 1;", "thrown": "thrown++;",
		"after": "sink += 1;", "handler": "handled += sig;", "spin": "s += i ^ (s >> 3);",
		"timedFrom": "static void on_signal", "timedTo": "}"}
	for k, text := range want {
		if !strings.Contains(lines[linesFixture[k]-1], text) {
			t.Fatalf("lines.c:%d is %q, not %q", linesFixture[k], lines[linesFixture[k]-1], text)
		}
	}
}

// linesRun profiles lines.c (prog) with prepArg, N and SPIN as given and
// profile's flags, and returns its line counts, the figures it printed
// (thrown=, handled=) and profile's standard error.
func linesRun(t *testing.T, prog, prepArg string, n, spin int, flags ...string) (map[int]uint64, map[string]uint64, string) {
	t.Helper()
	dir := t.TempDir()
	prog = install(t, prog, dir)
	must(t, dir, "prep", "/nologo", prepArg, prog)
	r := tool(t, dir, "profile", append(append([]string{"/nologo"}, flags...), prog, strconv.Itoa(n), strconv.Itoa(spin))...)
	if r.status != 0 || !strings.Contains(r.stdout, "lines done") {
		t.Fatalf("profile %v: status %d, output %q\n%s", flags, r.status, r.stdout, r.stderr)
	}
	must(t, dir, "prep", "/nologo", "/M", filepath.Base(prog))
	figures := map[string]uint64{}
	for _, f := range strings.Fields(r.stdout) {
		if k, v, ok := strings.Cut(f, "="); ok {
			figures[k], _ = strconv.ParseUint(v, 10, 64)
		}
	}
	return lineCounts(t, must(t, dir, "plist", "/nologo", "/T", filepath.Base(prog)).stdout)["lines.c"], figures, r.stderr
}

// untimed drops from line counts of lines.c the lines that run as
// often as signals come.
func untimed(counts ...map[int]uint64) {
	for _, c := range counts {
		maps.DeleteFunc(c, func(line int, _ uint64) bool {
			return line >= linesFixture["timedFrom"] && line <= linesFixture["timedTo"]
		})
	}
}

// TestLinesInProcess counts and covers the lines of lines.c, in every
// build, in-process and with breakpoints, and compares: every line's count
// equal on both paths (but for the spin loop and the signal handler, which
// the in-process run runs far longer, the handler a number of times the
// program prints), and the counts known by construction exact on both: a
// switch's jump table at -O2, a computed goto, a longjmp out of a call
// (the line after it runs N - N/10 times), signals landing inside the
// spin loop's probes (its line runs SPIN times, the handler's as often as
// the program counted), four threads over the same lines; and the counts
// equal with a probe at every site (--every-line-site), none sharing its
// block's count. Where lines are counted in-process, no site of a PIE
// keeps a breakpoint.
func TestLinesInProcess(t *testing.T) {
	testutil.MustHavePtrace(t)
	checkLinesFixture(t)
	n := testutil.Scale(300)
	spin := n
	if testutil.InProcess() {
		spin = 3000000 // (some 10 ms natively)
	}
	for _, b := range fixtureBuilds {
		t.Run(b.name, func(t *testing.T) {
			prog := testutil.BuildC(t, "lines", append(b.flags, "-pthread")...)
			in, figures, stderr := linesRun(t, prog, "/LC", n, spin)
			bp, bpFigures, _ := linesRun(t, prog, "/LC", n, n, "--breakpoints")
			every, _, _ := linesRun(t, prog, "/LC", n, n, "--every-line-site")
			if testutil.InProcess() && strings.Contains(stderr, "PRF4673") && !strings.Contains(b.name, "nopie") {
				t.Errorf("line sites kept breakpoints:\n%s", stderr)
			}
			if in[linesFixture["spin"]] != uint64(spin) || bp[linesFixture["spin"]] != uint64(n) {
				t.Errorf("the spin loop's line: %d and %d hits (in-process, breakpoints), want %d and %d",
					in[linesFixture["spin"]], bp[linesFixture["spin"]], spin, n)
			}
			if h := linesFixture["handler"]; in[h] != figures["handled"] || bp[h] != bpFigures["handled"] {
				t.Errorf("the handler's line: %d and %d hits, the program counted %d and %d", in[h], bp[h], figures["handled"], bpFigures["handled"])
			}
			thrown := uint64(n / 10)
			for _, counts := range []map[int]uint64{in, bp} {
				if counts[linesFixture["after"]] != uint64(n)-thrown {
					t.Errorf("after the call that may longjmp: %d hits, want %d", counts[linesFixture["after"]], uint64(n)-thrown)
				}
				// (At -O2, gcc on arm64 gives the line thrown++ an address
				// every pass runs.)
				if b.flags[0] == "-O0" && counts[linesFixture["thrown"]] != thrown {
					t.Errorf("after the longjmp: %d hits, want %d", counts[linesFixture["thrown"]], thrown)
				}
			}
			if b.flags[0] == "-O0" {
				// (Known by construction where every line keeps its code:
				// 5N calls of sw and interp, 3 increments a call.)
				if got := in[linesFixture["switch"]]; got != uint64(5*n) {
					t.Errorf("the switch's line: %d hits, want %d", got, 5*n)
				}
				if got := in[linesFixture["inc"]]; got != uint64(15*n) {
					t.Errorf("the computed goto's increment: %d hits, want %d", got, 15*n)
				}
			}
			untimed(in, bp, every)
			for line, c := range bp {
				if in[line] != c || every[line] != c {
					t.Errorf("lines.c:%d: %d hits in-process, %d probing every site, %d with breakpoints", line, in[line], every[line], c)
				}
			}
			if len(in) != len(bp) {
				t.Errorf("%d lines in-process, %d with breakpoints", len(in), len(bp))
			}
			cover, _, _ := linesRun(t, prog, "/LV", n, spin)
			bpCover, _, _ := linesRun(t, prog, "/LV", n, n, "--breakpoints")
			if untimed(cover, bpCover); !maps.Equal(cover, bpCover) {
				t.Errorf("coverage in-process %v, with breakpoints %v", cover, bpCover)
			}
		})
	}
}

// inlinesFixture are the lines of inlines.c the tests check.
var inlinesFixture = map[string]int{"add": 23, "back": 24, "walk": 44}

// TestLinesInlined counts the lines of inlines.c, in every build,
// in-process and with breakpoints: bump is inlined four times into walk
// (at -O0 too: always_inline), its copies on paths of their own, two of
// them one after the other; each of its lines runs 4N/3 times, walk's
// call N times. A line had one site per function, the lowest address of
// its rows there, and counted one copy: N/3.
func TestLinesInlined(t *testing.T) {
	testutil.MustHavePtrace(t)
	checkFixtureLines(t, "c/inlines.c", map[int]string{
		inlinesFixture["add"]: "/* bump: add */", inlinesFixture["back"]: "/* bump: back */", inlinesFixture["walk"]: "s += walk(x);",
	})
	n := 3 * testutil.Scale(1000)
	for _, b := range fixtureBuilds {
		t.Run(b.name, func(t *testing.T) {
			prog := testutil.BuildC(t, "inlines", b.flags...)
			for _, flags := range [][]string{nil, {"--breakpoints"}} {
				dir, r := workflowWith(t, prog, []string{"/LC"}, flags, strconv.Itoa(n))
				if r.status != 0 || !strings.Contains(r.stdout, "inlines done") {
					t.Fatalf("profile %v: status %d, output %q\n%s", flags, r.status, r.stdout, r.stderr)
				}
				got := lineCounts(t, must(t, dir, "plist", "/nologo", "/T", filepath.Base(prog)).stdout)["inlines.c"]
				for k, want := range map[string]uint64{"add": uint64(4 * n / 3), "back": uint64(4 * n / 3), "walk": uint64(n)} {
					if got[inlinesFixture[k]] != want {
						t.Errorf("%v: inlines.c:%d (%s): %d hits, want %d", flags, inlinesFixture[k], k, got[inlinesFixture[k]], want)
					}
				}
			}
		})
	}
}

// TestGoLinesStackGrowth counts the lines of gogrow, whose goroutines grow
// their stacks at down's entry many times, as an executable and as PIE:
// down's first line counts its calls, 5,001 a goroutine, its other lines as
// often as they run. The first line's site was before the stack check,
// which a call whose stack grows runs twice: morestack returns to the
// function's first instruction.
func TestGoLinesStackGrowth(t *testing.T) {
	testutil.MustHavePtrace(t)
	checkFixtureLines(t, "go/gogrow/main.go", map[int]string{
		22: "func down(n int, pad [16]int64) int64 {", 23: "if n == 0 {", 24: "return pad[0]",
		26: "pad[n%16] += int64(n)", 27: "return down(n-1, pad) + pad[n%16]",
	})
	// (Where breakpoints are slow, one goroutine 300 deep: its stack grows
	// some 3 times.)
	n, depth := 4, 5000
	if testutil.Slow() {
		n, depth = 1, 300
	}
	want := map[int]uint64{22: uint64(n * (depth + 1)), 23: uint64(n * (depth + 1)), 24: uint64(n), 26: uint64(n * depth), 27: uint64(n * depth)}
	for _, b := range goBuilds {
		t.Run(b.name, func(t *testing.T) {
			prog := testutil.BuildGo(t, "gogrow", b.flags...)
			dir, r := workflow(t, prog, []string{"/LC", "/EXCALL", "/INC", "main.go(1-99)"}, strconv.Itoa(n), strconv.Itoa(depth))
			if r.status != 0 || !strings.HasPrefix(r.stdout, fmt.Sprintf("gogrow %d ", n)) {
				t.Fatalf("profile: status %d, output %q\n%s", r.status, r.stdout, r.stderr)
			}
			got := lineCounts(t, must(t, dir, "plist", "/nologo", "/T", filepath.Base(prog)).stdout)["main.go"]
			for line, w := range want {
				if got[line] != w {
					t.Errorf("main.go:%d: %d hits, want %d", line, got[line], w)
				}
			}
		})
	}
}

// TestLinesSameBaseName profiles samename, built from main.c, a/util.c and
// b/util.c, whose two functions sit on the same lines of files of one base
// name: the records name each file by the shortest end of its path that
// tells it apart (a/util.c, b/util.c; main.c as before), each line once with
// its own count, as do the listing by count and the HTML report. Record 7
// named both util.c, and gave each line of the one twice.
func TestLinesSameBaseName(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.Fixture(t, "c", "samename", nil, func(out string) *exec.Cmd {
		cmd := exec.Command(testutil.CC(), "-g", "-O0", "-o", out, "main.c", "a/util.c", "b/util.c")
		cmd.Dir = filepath.Join(testutil.Root(t), "testdata", "progs", "c", "samename")
		return cmd
	})
	dir, r := workflow(t, prog, []string{"/LC"})
	if r.status != 0 || !strings.Contains(r.stdout, "samename done") {
		t.Fatalf("profile: status %d, output %q\n%s", r.status, r.stdout, r.stderr)
	}
	tab := must(t, dir, "plist", "/nologo", "/T", "samename").stdout
	got := map[string]uint64{}
	for _, l := range strings.Split(tab, "\n") {
		if f := strings.Split(l, "\t"); len(f) == 5 && f[0] == "7" {
			key := f[2] + ":" + f[3]
			if _, twice := got[key]; twice {
				t.Errorf("record 7 of %s twice", key)
			}
			got[key], _ = strconv.ParseUint(f[4], 10, 64)
		}
	}
	for key, want := range map[string]uint64{
		"a/util.c:6": 30, "a/util.c:7": 10, "b/util.c:6": 100, "b/util.c:7": 20, "main.c:14": 10, "main.c:16": 20,
	} {
		if got[key] != want {
			t.Errorf("%s: %d hits, want %d (records: %v)", key, got[key], want, got)
		}
	}
	sorted := must(t, dir, "plist", "/nologo", "/SC", "samename").stdout
	html := must(t, dir, "plist", "/nologo", "--format=html", "samename").stdout
	for _, want := range []string{"(a/util.c:6)", "(b/util.c:6)"} {
		if !strings.Contains(sorted, want) {
			t.Errorf("plist /SC names no %s:\n%s", want, sorted)
		}
	}
	for _, want := range []string{">a/util.c<", ">b/util.c<"} {
		if !strings.Contains(html, want) {
			t.Errorf("the HTML report's line table has no %s", want)
		}
	}
}

// checkFixtureLines checks that the lines of testdata/progs/NAME hold the
// texts want gives, where the source is at hand (not in the arm64 VM,
// whose fixtures are built beforehand).
func checkFixtureLines(t *testing.T, name string, want map[int]string) {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	src, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "testdata", "progs", name))
	if err != nil {
		return
	}
	lines := strings.Split(string(src), "\n")
	for n, text := range want {
		if n > len(lines) || !strings.Contains(lines[n-1], text) {
			t.Fatalf("%s:%d is not %q: the fixture changed", name, n, text)
		}
	}
}
