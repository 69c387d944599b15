package e2e

import (
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// The narrated mode, profile --explain, on the counts fixture
// (testdata/progs/c/counts.c): what PROFILE says it does, checked against
// what it did. The sites' bytes are each architecture's; whether a site
// is patched in-process or keeps a breakpoint depends on the site (a
// site no jump fits keeps one), and the narration says which: the checks
// follow it.

// explained runs prep with prepArgs, then profile with the options
// before the program counts and its argument 5, then prep /M, in a fresh
// directory; it returns profile's stderr, the narration, and the run's
// counts by function or "counts.c:LINE".
func explained(t *testing.T, prepArgs []string, options ...string) (string, map[string]uint64) {
	t.Helper()
	dir := t.TempDir()
	prog := install(t, testutil.BuildC(t, "counts"), dir)
	must(t, dir, "prep", append(append([]string{"/nologo"}, prepArgs...), prog)...)
	r := tool(t, dir, "profile", append(append([]string{"/nologo"}, options...), prog, "5")...)
	if r.status != 0 {
		t.Fatalf("profile: status %d\nstderr:\n%s", r.status, r.stderr)
	}
	must(t, dir, "prep", "/nologo", "/M", prog)
	counts := moduleRecords(t, must(t, dir, "plist", "/nologo", "/T", prog).stdout)["counts"]
	return r.stderr, counts
}

// has fails the test unless the narration matches each pattern.
func has(t *testing.T, narration string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(narration) {
			t.Errorf("the narration lacks %q:\n%s", p, narration)
		}
	}
}

// firstHits returns the first hits the narration tells, by item (a
// function, or "counts.c:LINE"), with the count told, and how (the
// words after "first").
func firstHits(t *testing.T, narration string) map[string]struct {
	count uint64
	how   string
} {
	t.Helper()
	out := map[string]struct {
		count uint64
		how   string
	}{}
	re := regexp.MustCompile(`(?m)^\[[0-9.]+ ms\] (?:thread \d+(?:, [^:]*)?: )?(line (\d+) of counts\.c|\S+) first (hit|entered), ([^(]*)\(count (\d+)`)
	for _, m := range re.FindAllStringSubmatch(narration, -1) {
		item := m[1]
		if m[2] != "" {
			item = "counts.c:" + m[2]
		}
		if _, dup := out[item]; dup {
			t.Errorf("%s's first hit told twice", item)
		}
		n, _ := strconv.ParseUint(m[5], 10, 64)
		out[item] = struct {
			count uint64
			how   string
		}{n, m[3] + ", " + strings.TrimSpace(m[4])}
	}
	return out
}

// checkFirstHits checks the first hits told against the run's counts:
// each item told ran, with a count no more than its final one (exactly
// one at a breakpoint or in a record, where PROFILE sees the first hit
// itself; so far, when seen in a counter); an item that ran once is told
// with count 1; an item that never ran is not told. It returns how many
// were told.
func checkFirstHits(t *testing.T, narration string, counts map[string]uint64) int {
	t.Helper()
	told := firstHits(t, narration)
	once := 0
	for item, h := range told {
		final := counts[item]
		switch {
		case final == 0:
			t.Errorf("%s told hit (%d), but it never ran", item, h.count)
		case h.count < 1 || h.count > final:
			t.Errorf("%s told hit with count %d, of %d in the run", item, h.count, final)
		case !strings.Contains(h.how, "counter") && !strings.Contains(h.how, "book") && h.count != 1:
			t.Errorf("%s: first hit %q with count %d, want 1", item, h.how, h.count)
		}
		if final == 1 {
			once++
			if h.count != 1 {
				t.Errorf("%s ran once, told with count %d", item, h.count)
			}
		}
	}
	if once == 0 {
		t.Errorf("no first hit told of an item that ran once; told %v", told)
	}
	return len(told)
}

// siteBytes are the patterns of a site's bytes on this architecture: an
// entry's jump to its trampoline, and a breakpoint.
func siteBytes() (jump, brk string) {
	if runtime.GOARCH == "arm64" {
		// B imm26: 0x14000000 | imm26, in memory order; BRK #0.
		return `  after   ([0-9a-f]{2} ){3}1[4-7]  b 0x[0-9a-f]+\n`, `  after   00 00 20 d4  brk #0x0`
	}
	// (A jump over the instruction alone: whole, or punned, its first
	// bytes shown; prefixed; or short, to a hop.)
	return `  after   ([0-9a-f]{2} ?)+  .*\n`, `  after   cc( [0-9a-f]{2})*  int3`
}

// countInstruction is the count a trampoline of function counting runs:
// on arm64 the atomic add of LSE, or without it the store into the
// thread's area.
func countInstruction() string {
	if runtime.GOARCH == "arm64" {
		return `(stadd|str) x17, \[x16\]`
	}
	return `incq %gs:0x[0-9a-f]+`
}

func TestExplain(t *testing.T) {
	testutil.MustHavePtrace(t)
	jump, brk := siteBytes()
	common := []string{
		`(?m)^PROFILE started counts under ptrace, as process \d+\. The kernel stopped it at its first instruction, before it ran anything \(the exec stop\), at 0x[0-9a-f]+ in \S+`,
		`(?m)^Module counts, mapped at 0x[0-9a-f]+ \(load bias 0x[0-9a-f]+\): PROFILE read its code`,
		`(?m)^\[[0-9.]+ ms\] PROFILE lets the program run\.`,
		`(?m)^\[[0-9.]+ ms\] the program exited with status 5\.$`,
		`(?m)^PROFILE wrote the run to counts\.pbo: its counts, complete\.`,
	}

	t.Run("FC", func(t *testing.T) {
		narration, counts := explained(t, []string{"/FC"}, "--explain")
		has(t, narration, common...)
		has(t, narration,
			`(?m)^PROFILE read the plan counts\.pbi: function counting, 7 functions in 1 module \(counts\)\.`,
			`(?m)^PROFILE collected the counts: 6 of 7 functions ran;`)
		if strings.Contains(narration, "PROFILE counts in-process") {
			// A jump over f's first instructions, its trampoline counting
			// and running them.
			has(t, narration,
				`(?m)^The counters: .* of memory shared by PROFILE and the program, mapped into it at 0x[0-9a-f]+\.`,
				`(?m)^function f, entry, at 0x[0-9a-f]+: a jump to its trampoline replaces 1 instruction[.;].*\n(  The jump .*\n|  Its window .*\n)*  before  ([0-9a-f]{2} ?)+  \S.*\n`+jump+
					`  trampoline at 0x[0-9a-f]+, .*:\n    0x[0-9a-f]+  [0-9a-f ]+  \S.*; the count: one more call of f\n`,
				`(?m)^    0x[0-9a-f]+  [0-9a-f ]+  `+countInstruction(),
				`; moved from 0x[0-9a-f]+\n`,
				`; back to 0x[0-9a-f]+, after the patch\n`,
				`(?m)^Module counts: 7 sites, \d+ jumps? to (a trampoline|trampolines), \d+ keeps? (a breakpoint|breakpoints)(; \d+ instructions? moved out of the way of a jump)?\.$`,
				`(?m)^\[[0-9.]+ ms\] (thread \d+: )?main first hit, seen in its counter \(count 1 so far\)$`)
		} else {
			has(t, narration, `(?m)^function f, entry, at 0x[0-9a-f]+: keeps a breakpoint \(.*\)\.\n  before .*\n`+brk)
		}
		if strings.Contains(narration, "... and") {
			t.Errorf("the default limit cut the narration of 7 functions:\n%s", narration)
		}
		if n := checkFirstHits(t, narration, counts); n != 6 {
			t.Errorf("%d first hits told, want 6:\n%s", n, narration)
		}
	})

	t.Run("FC breakpoints limit", func(t *testing.T) {
		narration, counts := explained(t, []string{"/FC"}, "--breakpoints", "--explain-limit=2")
		has(t, narration, common...)
		has(t, narration,
			`(?m)^PROFILE counts with breakpoints \(profile --breakpoints\): a breakpoint at each function entry\.`,
			`(?m)^function \w+, entry, at 0x[0-9a-f]+: keeps a breakpoint \(profile --breakpoints\)\.\n  before  ([0-9a-f]{2} ?)+  \S.*\n`+brk+`.*\n  At each hit `,
			`(?m)^  \.\.\. and 5 more sites of counts, not described \(the limit is 2; --explain-limit=0 describes every site\)\.$`,
			`(?m)^Module counts: 7 sites, 0 jump to trampolines, 7 keep breakpoints\.$`,
			`(?m)^\[[0-9.]+ ms\] thread \d+: main first hit, at its breakpoint \(count 1\)$`,
			`(?m)^\[[0-9.]+ ms\] thread \d+: f first hit, at its breakpoint \(count 1\)$`,
			`(?m)^\.\.\. and 4 more first hits, not told \(the limit is 2; --explain-limit=0 tells everything\)\.$`)
		if n := len(regexp.MustCompile(`(?m)^function \w+, entry, at `).FindAllString(narration, -1)); n != 2 {
			t.Errorf("%d sites described, want the limit, 2:\n%s", n, narration)
		}
		if n := checkFirstHits(t, narration, counts); n != 2 {
			t.Errorf("%d first hits told, want the limit, 2:\n%s", n, narration)
		}
		if counts["f"] != 1000 || counts["main"] != 1 {
			t.Errorf("counts %v: the narration changed them", counts)
		}
	})

	t.Run("FT", func(t *testing.T) {
		narration, counts := explained(t, []string{"/FT"}, "--explain-limit=0")
		has(t, narration, common...)
		has(t, narration,
			`(?m)^PROFILE read the plan counts\.pbi: function timing, 7 functions in 1 module \(counts\)\. It measures how long each function takes`,
			`(?m)^PROFILE measured what (a record|a stop|the book code) costs the program`)
		switch {
		case strings.Contains(narration, "PROFILE times in-process, with the books kept in the program"):
			has(t, narration,
				`(?m)^function f, entry, at 0x[0-9a-f]+: a jump to its trampoline replaces`,
				`(?m)^function f, exit, at 0x[0-9a-f]+: (a jump to its trampoline replaces|keeps a breakpoint)`,
				`; the entry's book code: the time, and the call's frame pushed on the thread's stack of open calls\n`,
				`; moved from 0x[0-9a-f]+: the exit\n`,
				`(?m)^PROFILE measured what the book code costs the program: \d+ ns a call within the time it measures, \d+ ns in all`,
				`(?m)^\[[0-9.]+ ms\] thread \d+: main first entered, seen in its thread's book \(count 1 so far\)$`)
		case strings.Contains(narration, "PROFILE times in-process"):
			has(t, narration,
				`(?m)^function f, entry, at 0x[0-9a-f]+: a jump to its trampoline replaces`,
				`(?m)^function f, exit, at 0x[0-9a-f]+: (a jump to its trampoline replaces|keeps a breakpoint)`,
				`; the record of the entry \(the CPU's counter, the stack pointer, the function\), into the thread's ring\n`,
				`; the record of the exit, before the exit\n`,
				`; moved from 0x[0-9a-f]+: the exit\n`,
				`(?m)^\[[0-9.]+ ms\] the ring of thread \d+ drained: \d+ records? booked$`,
				`(?m)^\[[0-9.]+ ms\] thread \d+: main first entered, a record of its ring \(count 1\)$`)
		default:
			has(t, narration,
				`(?m)^PROFILE times with breakpoints`,
				`(?m)^function f, entry, at 0x[0-9a-f]+: keeps a breakpoint`,
				`(?m)^function f, exit, at 0x[0-9a-f]+: keeps a breakpoint`,
				`(?m)^\[[0-9.]+ ms\] thread \d+: main first entered, at its breakpoint \(count 1\)$`)
		}
		if n := checkFirstHits(t, narration, counts); n != 6 {
			t.Errorf("%d first hits told, want 6:\n%s", n, narration)
		}
	})

	// (The wording of function coverage, sampling and a start function is
	// each architecture's alike: under emulation, where each run takes
	// seconds, they are left to the host.)
	if testutil.Slow() {
		t.Run("LC", func(t *testing.T) { explainLines(t, common) })
		return
	}
	t.Run("FV", func(t *testing.T) {
		narration, counts := explained(t, []string{"/FV"}, "--explain")
		has(t, narration, common...)
		has(t, narration,
			`(?m)^PROFILE read the plan counts\.pbi: function coverage, 7 functions in 1 module \(counts\)\.`,
			`(?m)^PROFILE collected the counts: 6 of 7 functions ran;`)
		if n := checkFirstHits(t, narration, counts); n != 6 {
			t.Errorf("%d first hits told, want 6:\n%s", n, narration)
		}
	})

	t.Run("FS", func(t *testing.T) {
		narration, counts := explained(t, []string{"/FS"}, "--explain")
		has(t, narration, common...)
		has(t, narration,
			`(?m)^PROFILE read the plan counts\.pbi: function sampling, 7 functions in 1 module \(counts\)\. It measures where the program spends its time`,
			`(?m)^\[[0-9.]+ ms\] PROFILE samples every 1ms of each thread's CPU time, by (the kernel's clock event|PROFILE interrupting each thread)`,
			`(?m)^PROFILE collected the counts: 6 of 7 functions ran;`)
		if n := checkFirstHits(t, narration, counts); n != 6 {
			t.Errorf("%d first hits told, want 6:\n%s", n, narration)
		}
	})

	t.Run("FC SF", func(t *testing.T) {
		// With a start function the books count: a first entry is told
		// without a count (breakpoints, rings) or with the count its
		// thread's book kept in the program holds, and the summary says
		// what was counted (fib and the calls it makes: fib alone).
		narration, counts := explained(t, []string{"/FC", "/SF", "fib"}, "--explain")
		has(t, narration, common...)
		has(t, narration,
			`(?m)^PROFILE records calls (in-process|with breakpoints).*for the start function \(/SF\): only the calls made while it runs count[.,]`,
			`(?m)^\[[0-9.]+ ms\] thread \d+: fib first entered, .*\((counted if the start function is running|count \d+ so far)\)$`,
			`(?m)^PROFILE collected the counts: 1 of 7 functions were counted, called while the start function ran;`)
		if strings.Contains(narration, "times") && strings.Contains(narration, "PROFILE times") {
			t.Errorf("an untimed run is said to be timed:\n%s", narration)
		}
		if counts["fib"] != 1973 || counts["main"] != 0 {
			t.Errorf("counts %v, want fib 1973 and nothing else", counts)
		}
	})

	t.Run("LC", func(t *testing.T) { explainLines(t, common) })
}

// explainLines is TestExplain's line counting: the narration of line
// sites, and a first hit told for each line that ran.
func explainLines(t *testing.T, common []string) {
	t.Helper()
	narration, counts := explained(t, []string{"/LC"}, "--explain-limit=0")
	has(t, narration, common...)
	has(t, narration,
		`(?m)^PROFILE read the plan counts\.pbi: line counting, \d+ lines in 1 module \(counts\)\. It measures how many times each line runs\.`,
		`(?m)^line \d+ of counts\.c \(function f\), at 0x[0-9a-f]+: (a jump to its trampoline replaces 1 instruction|keeps a breakpoint .*)[.;].*\n(  The jump .*\n|  Its window .*\n)*  before  ([0-9a-f]{2} ?)+  \S.*\n  after   `,
		`(?m)^Module counts: \d+ sites, \d+ jumps? to (a trampoline|trampolines), \d+ keeps? (a breakpoint|breakpoints)`)
	ran := 0
	for _, n := range counts {
		if n > 0 {
			ran++
		}
	}
	has(t, narration, fmt.Sprintf(`(?m)^PROFILE collected the counts: %d of \d+ lines ran;`, ran))
	if n := checkFirstHits(t, narration, counts); n != ran {
		t.Errorf("%d first hits told, want one for each line that ran, %d:\n%s", n, ran, narration)
	}
}

// TestExplainAttach: profile --explain --pid tells an attach as it
// happened: the process was running (no exec stop, which the narration
// told, naming the C library the main thread waited in "the dynamic
// linker"), its library was loaded already (not loaded by the dynamic
// linker at a rendezvous), the cost of a record was measured before the
// window, and at the end the process was let go, running (not "killed by
// signal 0").
func TestExplainAttach(t *testing.T) {
	testutil.MustHavePtrace(t)
	dir, name := attachDir(t)
	must(t, dir, "prep", "/nologo", "/FT", name, "libsq.so")
	s := startServer(t, dir, name)
	pid := strconv.Itoa(s.PID())
	r := must(t, dir, "profile", "/nologo", "--explain-limit=1", "--pid="+pid, "--duration=0.3")
	has(t, r.stderr,
		`\nPROFILE attached to process `+pid+` \(attach\), which was running: it took its 2 threads under ptrace \(PTRACE_SEIZE\) and stopped each where it was, the main thread at 0x[0-9a-f]+ in [^ ]+\. What the program did before is not seen`,
		`\] libsq\.so is loaded already, at 0x[0-9a-f]+: PROFILE plants it now\.\n`,
		`\] the window ended: PROFILE wrote the program's code back as it was and let each thread go; process `+pid+` runs on, untraced\.\n`,
	)
	if runtime.GOARCH == "amd64" {
		has(t, r.stderr, `taken out of the times \(before the window, the main thread timed a block of work`)
	}
	for _, wrong := range []string{"exec stop", "the dynamic linker loaded", "killed by", "the dynamic linker)"} {
		if strings.Contains(r.stderr, wrong) {
			t.Errorf("the narration of an attach says %q:\n%s", wrong, r.stderr)
		}
	}
	s.Ask(t, "w 10", "did 10")
}
