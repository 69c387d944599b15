package e2e

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// TestLinesRealPrograms profiles Lua 5.4 running bench/lua-work.lua and
// zstd compressing and decompressing a tar of its own sources, both built
// -O2 -g from their Debian sources (testutil.RealProgram), with /LC, and
// runs the same workloads under callgrind: no line whose statement rows
// ran, a row of its line coverage plan (/LV) executed under callgrind,
// may have no line counting site that ran (bench/linecheck). That was 66
// lines on Lua and 134 on zstd when a line had one site per function, the
// lowest address of its rows there: Lua's setpause, inlined four times
// into one caller, read 0 with lgc.c 1458-1468. It also reports how many
// lines PROFILE counted as callgrind ran their sites (the programs' runs
// differ a little: Lua's tables follow its addresses).
//
// The first run fetches the sources and builds the programs (minutes);
// -short skips it.
func TestLinesRealPrograms(t *testing.T) {
	linecheck := filepath.Join(t.TempDir(), "linecheck")
	workloads := realWorkloads(t)
	if out, err := exec.Command("go", "build", "-o", linecheck, "../bench/linecheck").CombinedOutput(); err != nil {
		t.Fatalf("build linecheck: %v\n%s", err, out)
	}
	for _, w := range workloads {
		t.Run(w.name, func(t *testing.T) {
			realLines(t, linecheck, w.prog, w.args...)
		})
	}
}

// realWorkload is a real program's run: Lua running bench/lua-work.lua,
// zstd compressing a tar of its own sources, or decompressing it.
type realWorkload struct {
	name, prog string
	args       []string
}

// realWorkloads returns the workloads of the real programs, Lua 5.4 and
// zstd built -O2 -g from their Debian sources (testutil.RealProgram),
// for a test that runs them under callgrind too; it skips the test with
// -short (the first run fetches the sources and builds the programs:
// minutes), without ptrace or valgrind.
func realWorkloads(t *testing.T) []realWorkload {
	t.Helper()
	if testing.Short() {
		t.Skip("builds Lua and zstd (scripts/real-programs) the first time")
	}
	testutil.MustHavePtrace(t)
	testutil.MustHaveTool(t, "valgrind")
	arch := runtime.GOARCH
	lua, zstd := testutil.RealProgram(t, arch, "lua"), testutil.RealProgram(t, arch, "zstd")
	work, err := filepath.Abs("../bench/lua-work.lua")
	if err != nil {
		t.Fatal(err)
	}
	input := filepath.Join(t.TempDir(), "input.tar")
	if out, err := exec.Command("tar", "-cf", input, "-C", testutil.RealSource(t, "zstd"), "lib/compress").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	zst := filepath.Join(t.TempDir(), "in.zst")
	if out, err := exec.Command(zstd, "-q", "-f", "-3", input, "-o", zst).CombinedOutput(); err != nil {
		t.Fatalf("zstd: %v\n%s", err, out)
	}
	return []realWorkload{
		{"lua", lua, []string{work, "3000"}},
		{"zstd-compress", zstd, []string{"-q", "-f", "-19", input, "-o", "out.zst"}},
		{"zstd-decompress", zstd, []string{"-q", "-f", "-d", zst, "-o", "out"}},
	}
}

// unsited is linecheck's line on the lines whose statement rows ran.
var unsited = regexp.MustCompile(`(\d+) lines of \S+ ran, a statement row of theirs: (\d+) with no site that ran`)

// realLines profiles prog with args under /LC, runs it with the same
// arguments under callgrind, and checks with linecheck that every line
// whose statement rows ran (by a /LV plan's rows) has a site that ran.
func realLines(t *testing.T, linecheck, prog string, args ...string) {
	lc, lv := t.TempDir(), t.TempDir()
	name := install(t, prog, lc)
	install(t, prog, lv)
	must(t, lc, "prep", "/nologo", "/LC", name)
	must(t, lv, "prep", "/nologo", "/LV", name)
	if r := tool(t, lc, "profile", append([]string{"/nologo", "./" + name}, args...)...); r.status != 0 {
		t.Fatalf("profile: status %d\n%s", r.status, r.stderr)
	}
	cg := filepath.Join(lc, "callgrind.out")
	vg := exec.Command("valgrind", append([]string{"--tool=callgrind", "--dump-instr=yes", "--callgrind-out-file=" + cg, "./" + name}, args...)...)
	vg.Dir = lc
	if out, err := vg.CombinedOutput(); err != nil {
		t.Fatalf("valgrind: %v\n%s", err, out)
	}
	check := exec.Command(linecheck, name+".pbi", name+".pbo", cg, filepath.Join(lv, name+".pbi"))
	check.Dir = lc
	out, err := check.CombinedOutput()
	if err != nil {
		t.Fatalf("linecheck: %v\n%s", err, out)
	}
	m := unsited.FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("linecheck said:\n%s", out)
	}
	ran, missed := atoi(m[1]), atoi(m[2])
	if missed != 0 || ran < 500 {
		t.Errorf("%d of the %d lines that ran have no site that ran:\n%s", missed, ran, out)
	}
	t.Logf("%s", strings.SplitN(string(out), "\n", 2)[0])
}

// atoi is strconv.Atoi of a number a regular expression matched.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
