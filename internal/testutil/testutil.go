// Package testutil builds the C fixtures of the end-to-end tests, compares
// golden files, skips tests whose tools are missing, and reads and draws
// the timelines plist writes (ReadChrome, WriteSVG). Tests only.
package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/golden"
)

// Update is the -update flag of golden tests (package golden's).
var Update = golden.Update

// startDir is the working directory when the test binary started: the
// package's directory under go test, before any test changes directory.
var startDir, _ = os.Getwd()

// Root returns the repository's root directory (the one holding go.mod),
// found from the directory the test binary started in, so that tests that
// change directory (t.Chdir) still find it.
func Root(t testing.TB) string {
	t.Helper()
	dir := startDir
	for dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	t.Fatalf("no go.mod above %s, where the test started", startDir)
	return ""
}

// Original returns testdata/original, the original tools' recorded outputs
// (its README.md says how they were captured), or $SPROF_ORIGINAL where the
// tests run away from the repository (the arm64 VM, which gets a copy of
// the parts its suites read). They are part of the repository: a test that
// needs them fails, never skips, when they are gone.
func Original(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("SPROF_ORIGINAL")
	if dir == "" {
		dir = filepath.Join(Root(t), "testdata", "original")
	}
	if _, err := os.Stat(filepath.Join(dir, "INDEX.tsv")); err != nil {
		t.Fatalf("the original's recorded outputs are missing: %v", err)
	}
	return dir
}

// OriginalText returns the original's recorded output name (a path under
// testdata/original, "usage/prep-help-q.out") with LF line ends.
func OriginalText(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Original(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(data), "\r\n", "\n")
}

// OriginalLine returns the first line of the original's recorded output
// name in the form the tools print on Linux: "PREP : fatal error PRF1101:
// ..." becomes "prep: fatal error PRF1101: ...".
func OriginalLine(t testing.TB, name string) string {
	t.Helper()
	line, _, _ := strings.Cut(OriginalText(t, name), "\n")
	tool, rest, ok := strings.Cut(line, " : ")
	if !ok {
		t.Fatalf("%s: %q is not a diagnostic", name, line)
	}
	return strings.ToLower(tool) + ": " + rest
}

// Slow reports whether breakpoints are slow here ($SPROF_SLOW set, as in
// the emulated arm64 VM, where a hit costs a millisecond or more): tests
// then run their fixtures with fewer calls.
func Slow() bool { return os.Getenv("SPROF_SLOW") != "" }

// Scale returns n, or n/20 (at least 1) where breakpoints are slow.
func Scale(n int) int {
	if Slow() {
		return max(n/20, 1)
	}
	return n
}

// HaveTool reports whether a program is on PATH.
func HaveTool(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// hosts say what the tests may expect of PROFILE on each architecture it
// runs on, by GOARCH spelling: a table, not a choice (no code but a table
// names an architecture; TestNoArchChoices). A port adds its line
// (docs/porting.md).
var hosts = map[string]struct {
	// timesInProcess: PROFILE times functions in-process, through the
	// threads' rings (x86-64, and arm64, whose record code needs no
	// atomic instruction, LSE or not).
	timesInProcess bool
	// inProcessNeeds is the feature of /proc/cpuinfo without which
	// PROFILE counts function entries with breakpoints, not in-process
	// ("" for none: arm64 counts in-process with the LSE atomics or
	// without, each thread in its area of the stack table).
	inProcessNeeds string
	// goInProcessNeeds is the feature without which the entries of Go
	// functions may keep breakpoints (PRF4646, "Go function, no LSE"): on
	// arm64 the LSE atomics ("atomics"; an ARMv8.0 core such as the
	// Cortex-A57 has not, and counts in the thread's area of the stack
	// table, found from the stack pointer, a goroutine's stack in none,
	// or through the thread pointer, which PROFILE sets only in a Go
	// program built without cgo, not as a PIE).
	goInProcessNeeds string
	// goDepth: PROFILE keeps the call depth of Go programs too, not only
	// of others (not on arm64, whose goroutine stacks are in no stack
	// table: docs/linux.md, "Call depth").
	goDepth bool
	// threadBlocks: each thread has a block of counters of its own, which
	// can run out (x86-64, through GS).
	threadBlocks bool
	// counterOneClock: the CPU's counter is one clock across CPUs by the
	// architecture (arm64's system counter); elsewhere where the kernel
	// took it as its clock (CounterOneClock).
	counterOneClock bool
}{
	"amd64": {timesInProcess: true, goDepth: true, threadBlocks: true},
	"arm64": {timesInProcess: true, goInProcessNeeds: "atomics", counterOneClock: true},
}

// TimesInProcess reports whether PROFILE times functions in-process on
// this machine: the books kept in the program, or the threads' rings.
func TimesInProcess() bool { return hosts[runtime.GOARCH].timesInProcess }

// InProcess reports whether PROFILE counts function entries in-process on
// this machine: where it traces, and the CPU has what its counting code
// needs (hosts).
func InProcess() bool {
	h, ok := hosts[runtime.GOARCH]
	return ok && cpuHas(h.inProcessNeeds)
}

// GoInProcess reports whether PROFILE counts the entries of Go
// functions in-process on this machine in every Go program, a PIE and
// one built with cgo included (hosts); where not, only in a Go program
// built without cgo and not as a PIE.
func GoInProcess() bool {
	return InProcess() && cpuHas(hosts[runtime.GOARCH].goInProcessNeeds)
}

// CounterOneClock reports whether the CPU's counter is one clock across
// CPUs without PROFILE's own check of it: by the architecture (hosts), or
// where the kernel's clock source is the counter (x86-64's TSC), which
// the kernel takes only after checking that the CPUs' counters agree.
func CounterOneClock() bool {
	source, _ := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	return hosts[runtime.GOARCH].counterOneClock || strings.TrimSpace(string(source)) == "tsc"
}

// cpuHas reports whether /proc/cpuinfo names feature ("": yes).
func cpuHas(feature string) bool {
	if feature == "" {
		return true
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	return err == nil && slices.Contains(strings.Fields(string(b)), feature)
}

// KeepsDepth reports whether PROFILE keeps the call depth of function
// counting and coverage here, of a Go program or another: in-process, but
// for Go programs where goroutines' depth cannot be kept (hosts).
func KeepsDepth(goProgram bool) bool {
	return InProcess() && (hosts[runtime.GOARCH].goDepth || !goProgram)
}

// ThreadBlocks reports whether each thread has a block of counters of its
// own here (in-process on x86-64, through GS), which can run out.
func ThreadBlocks() bool { return hosts[runtime.GOARCH].threadBlocks && InProcess() }

// MustHaveTool skips the test when a program is not on PATH.
func MustHaveTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed", name)
	}
	return p
}

// MustHavePtrace skips the test where programs cannot be traced.
func MustHavePtrace(t testing.TB) {
	t.Helper()
	if _, ok := hosts[runtime.GOARCH]; runtime.GOOS != "linux" || !ok {
		t.Skipf("tracing needs linux on amd64 or arm64, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil && strings.TrimSpace(string(b)) == "3" {
		t.Skip("ptrace is disabled (kernel.yama.ptrace_scope=3)")
	}
}

// Golden compares got with the golden file path, rewriting it under
// -update (package golden).
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	golden.Check(t, path, got)
}

// Diff returns a line diff of want and got (package golden).
func Diff(want, got []byte) string { return golden.Diff(want, got) }
