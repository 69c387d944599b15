package e2e

import (
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// TestLeavesCounted runs counts.c, whose calls are known by
// construction, with its leaves carried out whole by their trampolines
// (instr.Layout.Leaves): on x86-64, f, g, h and viaptr run straight to
// their returns, at -O0 as at -O2, and so does helper at -O0 (at -O2 its
// lea's punned jump lies over its ret and the fill after it: not
// carried); at -O0 main's first block runs straight to its jump into the
// loop, whose copy goes there. The narration says which. Every
// count is the source's, and the call depth is main and fib(15) down to
// fib(1): 16, the sibling calls of main's loops skipping the depth's
// code (instr.Depth.Top). Function sampling counts with the same
// trampolines; timing, whose exits must run, carries no leaf.
func TestLeavesCounted(t *testing.T) {
	testutil.MustHavePtrace(t)
	want := map[string]uint64{"f": 1000, "g": 3, "h": 0, "helper": 4, "fib": 1973, "viaptr": 7, "main": 1}
	// The leaves by architecture and build: all of them on x86-64; on
	// arm64 at least helper and viaptr (its -O0 f, g and h run past
	// maxLeaf instructions, a global's adrp, load, add and store, and
	// main's first block too with branch protection's pacia and bti),
	// and none that is not straight code to a return or a jump (fib).
	leaves := map[string]map[string][]string{
		"amd64": {"O0-pie": {"f", "g", "h", "helper", "main", "viaptr"}, "O2-pie": {"f", "g", "h", "viaptr"}},
		"arm64": {"O0-pie": {"helper", "viaptr"}}, // (the VM prebuilds counts.c at -O0 alone)
	}[runtime.GOARCH]
	straight := []string{"f", "g", "h", "helper", "main", "viaptr"}
	carried := regexp.MustCompile(`(?m)^function (\w+), entry, at 0x[0-9a-f]+: .*, and never comes back`)
	for _, b := range []build{fixtureBuilds[0], fixtureBuilds[2]} {
		opt := b.name
		if leaves[opt] == nil {
			continue
		}
		prog := buildFixture(t, "counts", "c", b)
		for _, method := range []string{"/FC", "/FS", "/FT"} {
			t.Run(opt+method, func(t *testing.T) {
				dir := t.TempDir()
				name := install(t, prog, dir)
				must(t, dir, "prep", "/nologo", method, name)
				r := must(t, dir, "profile", "/nologo", "--explain", "--explain-limit=0", name)
				var got []string
				for _, m := range carried.FindAllStringSubmatch(r.stderr, -1) {
					got = append(got, m[1])
				}
				slices.Sort(got)
				if method == "/FT" {
					if len(got) != 0 {
						t.Errorf("timing carried leaves %v: their exits would not run", got)
					}
				} else if runtime.GOARCH == "amd64" && !slices.Equal(got, leaves[opt]) {
					t.Errorf("leaves carried %v, want %v", got, leaves[opt])
				} else {
					for _, fn := range leaves[opt] {
						if !slices.Contains(got, fn) {
							t.Errorf("leaves carried %v: %s not among them", got, fn)
						}
					}
					for _, fn := range got {
						if !slices.Contains(straight, fn) {
							t.Errorf("leaves carried %v: %s is no straight code", got, fn)
						}
					}
				}
				must(t, dir, "prep", "/nologo", "/M", name)
				tb := parseTab(t, must(t, dir, "plist", "/nologo", "/T", name).stdout)
				for fn, n := range want {
					if tb.hits[fn] != n {
						t.Errorf("%s: %d calls, want %d", fn, tb.hits[fn], n)
					}
				}
				if method == "/FC" && tb.depth != 16 {
					t.Errorf("call depth %d, want 16 (main, fib(15) to fib(1))", tb.depth)
				}
				if t.Failed() {
					t.Logf("narration:\n%s", strings.Join(carried.FindAllString(r.stderr, -1), "\n"))
				}
			})
		}
	}
}
