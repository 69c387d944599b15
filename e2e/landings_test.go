package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// landingsBuilds are the builds of landings.c: besides PIE and not, at
// -O0 and -O2, one linked without a separate code segment (its jump
// tables in the executable segment, gold's layout).
var landingsBuilds = []build{
	fixtureBuilds[0], fixtureBuilds[1], fixtureBuilds[2], fixtureBuilds[3],
	{"O2-noseparate", []string{"-O2", "-Wl,-z,noseparate-code"}},
}

// landingsParts are the parts of landings.c (its second argument), each
// run alone so that a part that breaks is named.
var landingsParts = map[string]string{
	"s": "a switch through a jump table", "d": "a computed goto through label differences",
	"p": "a code address at an unaligned place of the data", "a": "a jump into an unrolled run (assembly)",
	"t": "a jump table in .text (assembly)", "e": "a result in the flags (assembly)",
}

// The lines of landings.c and landings.S whose counts the test knows,
// for N rounds: dispatch's ops fall through (op_d N/4 times, op_c N/2,
// op_b 3N/4, op_a N), and so do in_text's cases (.Lc3 N/4 ... .Lc0 N);
// packed's "acc += 2" runs N/2 times, there's N*3/4, other's N/4.
var (
	landingsC = map[int][2]int{73: {1, 4}, 75: {2, 4}, 77: {3, 4}, 79: {4, 4}, 98: {2, 4}, 100: {3, 4}, 103: {1, 4}}
	landingsS = map[string]map[int][2]int{
		"amd64": {48: {1, 4}, 50: {2, 4}, 52: {3, 4}, 54: {4, 4}},
		"arm64": {138: {1, 4}, 140: {2, 4}, 142: {3, 4}, 144: {4, 4}},
	}
)

// TestLandingsUnharmed: code whose jumps land where no decoding of it
// sees them (landings.c, issue 31: a switch whose table is in the
// executable segment, a computed goto through label differences, a code
// address at an unaligned place of a non-PIE program's data, a jump into
// an unrolled run and a jump table in hand-written assembly) runs under
// line counting and line coverage in-process exactly as natively: a line
// patch writes over its site's instruction alone, so every jump lands on
// the program's own instruction or on a jump that runs it. A function
// returning its result in the flags (cmp; ret, its caller then jne) keeps
// it: the count before its return changes no flag. Each part runs alone;
// the lines those parts run have their counts, known by construction.
func TestLandingsUnharmed(t *testing.T) {
	testutil.MustHavePtrace(t)
	n := 4000
	if testutil.Slow() {
		n = 200 // (an ARMv8.0 CPU counts lines with breakpoints: 1-2 ms a hit under emulation)
	}
	checkLandingsFixture(t)
	for _, b := range landingsBuilds {
		t.Run(b.name, func(t *testing.T) {
			prog := testutil.BuildC(t, "landings+landings.S", b.flags...)
			for _, method := range []string{"/LC", "/LV"} {
				dir := t.TempDir()
				name := install(t, prog, dir)
				out, err := exec.Command(filepath.Join(dir, name), strconv.Itoa(n)).Output()
				native := string(out)
				if err != nil || !strings.Contains(native, "evens=") {
					t.Fatalf("native run: %v, output %q", err, native)
				}
				must(t, dir, "prep", "/nologo", method, name)
				for part, what := range landingsParts {
					r := tool(t, dir, "profile", "/nologo", name, strconv.Itoa(n), part)
					got := strings.TrimPrefix(strings.TrimSpace(r.stdout), "landings ")
					if r.status != 0 || got == "" || !strings.Contains(native, " "+got) {
						t.Errorf("%s, %s (%s): status %d, output %q; natively %q\n%s", method, part, what, r.status, r.stdout, native, r.stderr)
					}
				}
				if method == "/LV" {
					continue
				}
				// The counts of one run of every part.
				dir, r := workflow(t, prog, []string{method}, strconv.Itoa(n))
				if r.status != 0 {
					t.Fatalf("%s: status %d\n%s", method, r.status, r.stderr)
				}
				counts := lineCounts(t, must(t, dir, "plist", "/nologo", "/T", name).stdout)
				checkLandingCounts(t, counts["landings.S"], landingsS[runtime.GOARCH], n)
				if strings.HasPrefix(b.name, "O0") {
					checkLandingCounts(t, counts["landings.c"], landingsC, n)
				}
			}
		})
	}
}

// checkLandingCounts compares the counts of lines with want, each a
// fraction of n.
func checkLandingCounts(t *testing.T, got map[int]uint64, want map[int][2]int, n int) {
	t.Helper()
	for line, f := range want {
		if w := uint64(n * f[0] / f[1]); got[line] != w {
			t.Errorf("line %d: %d hits, want %d", line, got[line], w)
		}
	}
}

// checkLandingsFixture fails unless the lines the test counts are where
// it says, where the sources are at hand (not in the arm64 VM).
func checkLandingsFixture(t *testing.T) {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(self), "..", "testdata", "progs", "c")
	src, err := os.ReadFile(filepath.Join(dir, "landings.c"))
	if err != nil {
		return
	}
	asm, err := os.ReadFile(filepath.Join(dir, "landings.S"))
	if err != nil {
		t.Fatal(err)
	}
	c, s := strings.Split(string(src), "\n"), strings.Split(string(asm), "\n")
	for line, text := range map[int]string{73: "acc ^= 7;", 75: "acc += 5;", 77: "acc <<= 1;", 79: "acc += 1;",
		98: "acc += 2;", 100: "acc += t[0].tag;", 103: "acc += t[1].tag;"} {
		if strings.TrimSpace(c[line-1]) != text {
			t.Fatalf("landings.c:%d is %q, not %q", line, c[line-1], text)
		}
	}
	for arch, text := range map[string]string{"amd64": "incq %rax", "arm64": "add x1, x1, #1"} {
		for line := range landingsS[arch] {
			if strings.TrimSpace(s[line-1]) != text || !strings.HasPrefix(s[line-2], ".Lc") {
				t.Fatalf("landings.S:%d is %q after %q, not %q after a case", line, s[line-1], s[line-2], text)
			}
		}
	}
}
