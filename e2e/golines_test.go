package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// TestGoLinesInProcess counts the lines of golines in-process, as an
// executable and as PIE, under GOMAXPROCS 1 and 8: eight goroutines that
// migrate between threads, a nil pointer's load that faults in every
// other round, the first instruction of its line (so that it faults in
// PROFILE's trampoline, and must be delivered at its own address for Go
// to make it a panic), and the panic recovered in a deferred function.
// Every line's count is known by construction, and equal to the count
// of a run with breakpoints; no line keeps a breakpoint (PRF4673), where
// the CPU counts Go in-process (on arm64 without LSE, the executable's
// lines count in the threads' areas through the thread pointer; a PIE's,
// whose thread pointer the dynamic linker sets, keep breakpoints). The
// lines that begin with a sequence Go's preemption starts again (main's
// "if len(os.Args) > 1") count once: under emulation, where preemptions
// are many, they counted twice one run in three.
func TestGoLinesInProcess(t *testing.T) {
	testutil.MustHavePtrace(t)
	checkFixtureLines(t, "go/golines/main.go", map[int]string{
		38: "return b.v + 1", 44: "if recover() != nil", 45: "r = -1", 48: "return load(b)",
		59: "s += safe(b)", 61: "runtime.Gosched()",
	})
	const g = 8
	r := testutil.Scale(1000)
	want := map[int]uint64{38: g * uint64(r), 44: g * uint64(r), 45: g * uint64((r+1)/2), 48: g * uint64(r),
		59: g * uint64(r), 61: g * uint64((r+15)/16)}
	sum := 0
	for i := range r {
		if i%2 == 1 {
			sum += i + 1
		} else {
			sum--
		}
	}
	out := fmt.Sprintf("golines %d %d\n", g*sum, g*((r+1)/2))
	for _, b := range goBuilds {
		t.Run(b.name, func(t *testing.T) {
			prog := testutil.BuildGo(t, "golines", b.flags...)
			procsTried := []string{"1", "8"}
			if testutil.Slow() {
				procsTried = procsTried[1:] // (under emulation a run takes minutes)
			}
			for _, procs := range procsTried {
				t.Run("P"+procs, func(t *testing.T) {
					var runs [2]map[int]uint64
					for k, opts := range [][]string{nil, {"--breakpoints"}} {
						dir, res := workflowWith(t, prog, []string{"/LC"}, opts, strconv.Itoa(r), procs)
						if res.status != 0 || res.stdout != out {
							t.Fatalf("profile %v: status %d, output %q, want %q\n%s", opts, res.status, res.stdout, out, res.stderr)
						}
						if opts == nil && (testutil.GoInProcess() || (testutil.InProcess() && b.name == "exe")) && strings.Contains(res.stderr, "PRF4673") {
							t.Errorf("lines kept breakpoints:\n%s", res.stderr)
						}
						runs[k] = lineCounts(t, must(t, dir, "plist", "/nologo", "/T", filepath.Base(prog)).stdout)["main.go"]
					}
					for line, w := range want {
						if runs[0][line] != w {
							t.Errorf("main.go:%d: %d hits, want %d", line, runs[0][line], w)
						}
					}
					for line, n := range runs[1] {
						if runs[0][line] != n {
							t.Errorf("main.go:%d: %d hits in-process, %d with breakpoints", line, runs[0][line], n)
						}
					}
				})
			}
		})
	}
}

// TestGofmtLinesExact counts the lines of gofmt's own packages (go/ast,
// go/parser, go/printer, go/scanner, go/token and main) while it lists a
// file, in-process and with breakpoints, a stop at every line: every one
// of their thousands of lines must have the same count both ways. (The
// lines of other packages inlined into them are left out: they are the
// runtime's lines too, of its preemption checks and the like, which run
// as often as the scheduler says, differently from run to run.)
func TestGofmtLinesExact(t *testing.T) {
	testutil.MustHavePtrace(t)
	if testing.Short() || testutil.Slow() {
		t.Skip("builds gofmt; with breakpoints, a stop at every line")
	}
	gofmt := buildGofmt(t)
	src := filepath.Join(testutil.Root(t), "testdata", "progs", "go", "golines", "main.go")
	// Without a collection, the pools (sync.Pool) keep what they were
	// given, and in one thread no lock is ever contended: the counts are
	// the same from run to run. (PREP, PROFILE and PLIST run so too.)
	t.Setenv("GOGC", "off")
	t.Setenv("GOMAXPROCS", "1")
	var runs [2]map[string]map[int]uint64
	for k, opts := range [][]string{nil, {"--breakpoints"}} {
		sel := []string{"/LC"}
		for _, pkg := range []string{"go/ast", "go/parser", "go/printer", "go/scanner", "go/token", "main"} {
			sel = append(sel, "/INC", pkg+".*")
		}
		dir, res := workflowWith(t, gofmt, sel, opts, "-l", src)
		if res.status != 0 {
			t.Fatalf("profile %v: status %d\n%s", opts, res.status, res.stderr)
		}
		if opts == nil && strings.Contains(res.stderr, "PRF4673") {
			t.Logf("in-process run:\n%s", res.stderr)
		}
		runs[k] = ownLines(t, must(t, dir, "plist", "/nologo", "--format=lcov", "gofmt").stdout)
	}
	lines, differ := 0, 0
	racy := afterRelease(t, runs[1])
	for file, counts := range runs[1] {
		for line, n := range counts {
			lines++
			if got := runs[0][file][line]; got != n && racy[file][line] {
				t.Logf("%s:%d: %d hits in-process, %d with breakpoints (run or not before the exit, as the scheduler says)", file, line, got, n)
			} else if got != n {
				differ++
				if differ <= 20 {
					t.Errorf("%s:%d: %d hits in-process, %d with breakpoints", file, line, got, n)
				}
			}
		}
	}
	for file, counts := range runs[0] {
		for line, n := range counts {
			if _, ok := runs[1][file][line]; !ok && n != 0 && !racy[file][line] {
				differ++
				t.Errorf("%s:%d: %d hits in-process, none with breakpoints", file, line, n)
			}
		}
	}
	if lines < 1000 {
		t.Errorf("%d lines counted: too few to tell", lines)
	}
	if differ > 0 {
		t.Errorf("%d of %d lines differ", differ, lines)
	}
}

// afterRelease returns the lines of gofmt's sequencer (cmd/gofmt/gofmt.go)
// that a task's goroutine runs after it released the next task, by file:
// once the last task released the main goroutine, which then exits, they
// run or not before the exit as the scheduler says (the stops of
// breakpoints leave it time to), so their counts differ from run to run
// (gofmt.go's s.sem.Release(weight), found on 2026-11-30, and the
// closure's return on its "}()", on 2026-11-30 again).
func afterRelease(t *testing.T, counts map[string]map[int]uint64) map[string]map[int]bool {
	t.Helper()
	out := map[string]map[int]bool{}
	for file := range counts {
		if !strings.HasSuffix(file, "/cmd/gofmt/gofmt.go") {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		out[file] = map[int]bool{}
		after := false
		for i, l := range strings.Split(string(b), "\n") {
			switch l = strings.TrimSpace(l); {
			case l == "next <- r.getState() // Release the next task.":
				after = true
			case l == "}()":
				if after {
					out[file][i+1] = true // (the task's return)
				}
				after = false
			case after:
				out[file][i+1] = true
			}
		}
		if len(out[file]) == 0 {
			t.Fatalf("%s: no line after the release of the next task: the sequencer changed", file)
		}
	}
	return out
}

// ownLines returns the line counts of an lcov export of gofmt, by file
// and line, of gofmt's own packages' files alone.
func ownLines(t *testing.T, lcov string) map[string]map[int]uint64 {
	t.Helper()
	got := map[string]map[int]uint64{}
	var file map[int]uint64
	for _, l := range strings.Split(lcov, "\n") {
		switch {
		case strings.HasPrefix(l, "SF:"):
			file = nil
			path := filepath.ToSlash(strings.TrimPrefix(l, "SF:"))
			for _, pkg := range []string{"go/ast", "go/parser", "go/printer", "go/scanner", "go/token", "cmd/gofmt"} {
				if strings.HasSuffix(filepath.Dir(path), "/src/"+pkg) {
					file = map[int]uint64{}
					got[path] = file
				}
			}
		case strings.HasPrefix(l, "DA:") && file != nil:
			var line int
			var n uint64
			if _, err := fmt.Sscanf(l, "DA:%d,%d", &line, &n); err != nil {
				t.Fatalf("lcov line %q: %v", l, err)
			}
			file[line] = n
		}
	}
	return got
}

// buildGofmt builds gofmt from this Go's sources (a Go program not PIE,
// without cgo) into a directory of t's, and returns its path.
func buildGofmt(t *testing.T) string {
	t.Helper()
	gofmt := filepath.Join(t.TempDir(), "gofmt")
	cmd := exec.Command("go", "build", "-o", gofmt, "cmd/gofmt")
	cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/gofmt: %v\n%s", err, out)
	}
	return gofmt
}
