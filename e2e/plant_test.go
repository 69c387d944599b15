package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// Where PROFILE plants (issue 18): a program reached through symbolic
// links, several instances of one library at once, a jump into a
// function's first bytes from another function.

// TestSymlinkedProgram profiles the counts fixture through a symbolic
// link in its directory, one in another directory, and a chain of two
// links: the kernel maps the file at the end of the links, which PROFILE
// must find by what identifies it (its inode, its real name), and every
// count is the fixture's.
func TestSymlinkedProgram(t *testing.T) {
	testutil.MustHavePtrace(t)
	c := cases[0] // counts
	prog := testutil.BuildC(t, c.fixture, fixtureBuilds[0].flags...)
	dir := t.TempDir()
	name := install(t, prog, dir)
	link := func(target, path string) string {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, path)); err != nil {
			t.Fatal(err)
		}
		return path
	}
	links := []string{
		link(name, "clink"),                             // in the same directory
		link("../"+name, "bin/olink"),                   // in another
		link("clink", "chain"),                          // a link to a link
		link(filepath.Join(dir, "bin", "olink"), "abs"), // absolute, to a link elsewhere
	}
	for _, l := range links {
		t.Run(filepath.Base(l), func(t *testing.T) {
			must(t, dir, "prep", "/nologo", "/FC", l)
			r := tool(t, dir, "profile", append([]string{"/nologo", "/X", l}, c.args...)...)
			if r.status != c.status || !strings.Contains(r.stdout, c.stdout) {
				t.Fatalf("profile %s: status %d (want %d), output %q\n%s", l, r.status, c.status, r.stdout, r.stderr)
			}
			must(t, dir, "prep", "/nologo", "/M", filepath.Base(l))
			tb := parseTab(t, must(t, dir, "plist", "/nologo", "/T", filepath.Base(l)).stdout)
			for fn, want := range c.counts {
				if got := tb.hits[fn]; got != want {
					t.Errorf("%s: %d hits, want %d", fn, got, want)
				}
			}
			if len(tb.hits) != len(c.counts) {
				t.Errorf("functions %v, want %d", tb.hits, len(c.counts))
			}
		})
	}
}

// instancesFixture holds three instances of libsq.so at once
// (testdata/progs/c/instances.c): dlopen, dlmopen of the same file in a
// namespace of its own, and dlopen of a copy at another path.
var instancesFixture = testutil.Linked{
	Prog: []string{"progs/c/instances.c"},
	Lib:  []string{"progs/c/libsq.c"},
	Name: "libsq.so",
}

// TestLibraryInstances profiles a library of which the program holds
// three instances at once, called in turn, then closes them one by one,
// calling those left: each instance is planted on its own and forgotten
// on its own, and square() counts the calls of all three, 330, with
// every type, at -O0 and -O2. Before, the second instance mapped made
// PROFILE forget the first while its code still jumped to its
// trampolines (SIGSEGV), or plant over it.
func TestLibraryInstances(t *testing.T) {
	testutil.MustHavePtrace(t)
	for _, b := range []build{fixtureBuilds[0], fixtureBuilds[2]} {
		for _, m := range []string{"FC", "FV", "FT", "LC", "LV"} {
			t.Run(b.name+"/"+m, func(t *testing.T) {
				l := instancesFixture
				l.Flags = b.flags
				prog, lib := testutil.BuildLinked(t, "instances", l)
				dir := t.TempDir()
				prog, lib = install(t, prog, dir), install(t, lib, dir)
				copyFile(t, filepath.Join(dir, lib), filepath.Join(dir, "copy", lib))
				must(t, dir, "prep", "/nologo", "/"+m, prog, lib)
				r := tool(t, dir, "profile", "/nologo", prog, "./"+lib, "./copy/"+lib)
				if r.status != 0 || !strings.Contains(r.stdout, "instances total 985905") {
					t.Fatalf("profile: status %d, output %q\n%s", r.status, r.stdout, r.stderr)
				}
				if strings.Contains(r.stderr, "PRF4654") {
					t.Errorf("the copy was taken for another file:\n%s", r.stderr)
				}
				must(t, dir, "prep", "/nologo", "/M", prog)
				got := moduleRecords(t, must(t, dir, "plist", "/nologo", "/T", prog).stdout)["libsq.so"]
				want := map[string]map[string]uint64{
					"FC": {"square": 330}, "FV": {"square": 330}, "FT": {"square": 330},
					"LC": {"libsq.c:3": 330}, "LV": {"libsq.c:3": 1},
				}[m]
				if m == "FV" && !testutil.InProcess() {
					// With breakpoints, each goes at its first hit: one
					// in each instance.
					want["square"] = 3
				}
				if len(got) != len(want) {
					t.Errorf("libsq.so records %v, want %v", got, want)
				}
				for k, w := range want {
					if got[k] != w {
						t.Errorf("libsq.so %s: %d hits, want %d", k, got[k], w)
					}
				}
			})
		}
	}
}

// copyFile copies the file from to the path to, creating its directory,
// with from's modification time: the same file to PROFILE's eyes (its
// build ID, size and time), at another path.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(to, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// TestAlternateEntry profiles hand-written assembly in which h jumps
// into g's second instruction (testdata/progs/c/altentry.c): g's entry
// patch replaces its first instruction only, so that jump lands on g's
// own second instruction (or on a jump that runs it), and g and h count
// their 100 calls each, in-process, at -O0 and -O2, with /FC, /FV and
// /FT. Before, h's jump landed inside g's patch: SIGTRAP, or a hang.
func TestAlternateEntry(t *testing.T) {
	testutil.MustHavePtrace(t)
	for _, b := range []build{fixtureBuilds[0], fixtureBuilds[3]} {
		for _, m := range []string{"FC", "FV", "FT"} {
			t.Run(b.name+"/"+m, func(t *testing.T) {
				prog := testutil.BuildC(t, "altentry", b.flags...)
				dir, r := workflow(t, prog, []string{"/" + m, "/INC", "g", "/INC", "h"})
				if r.status != 0 || !strings.Contains(r.stdout, "altentry sum 10100") {
					t.Fatalf("profile: status %d, output %q\n%s", r.status, r.stdout, r.stderr)
				}
				if testutil.InProcess() && strings.Contains(r.stderr, "PRF4646") {
					t.Errorf("an entry keeps a breakpoint:\n%s", r.stderr)
				}
				tb := parseTab(t, must(t, dir, "plist", "/nologo", "/T", "altentry").stdout)
				want := map[string]uint64{"main": 1, "g": 100, "h": 100}
				for fn, w := range want {
					if m == "FV" && !testutil.InProcess() {
						w = min(w, 1) // coverage with breakpoints: each goes at its first hit
					}
					if got := tb.hits[fn]; got != w {
						t.Errorf("%s: %d hits, want %d", fn, got, w)
					}
				}
				if len(tb.hits) != len(want) {
					t.Errorf("functions %v, want %v", tb.hits, want)
				}
			})
		}
	}
}

// TestCraftedPlan: a plan PREP wrote, rewritten with datafile after one
// site was moved one byte into an instruction (arm64: two bytes, off
// its alignment), its identity recomputed, as a hostile plan would be:
// PROFILE refuses that site with a warning (PRF4657 for a function's
// entry, PRF4624 for a line's site), plants nothing there, and the
// program runs as it does natively; the other functions count exactly.
func TestCraftedPlan(t *testing.T) {
	testutil.MustHavePtrace(t)
	c := cases[0] // counts
	prog := testutil.BuildC(t, c.fixture, fixtureBuilds[2].flags...)
	for _, m := range []string{"FC", "LC"} {
		t.Run(m, func(t *testing.T) {
			dir := t.TempDir()
			name := install(t, prog, dir)
			must(t, dir, "prep", "/nologo", "/"+m, name)
			pbi := filepath.Join(dir, name+".pbi")
			plan, err := datafile.OpenPlan(pbi)
			if err != nil {
				t.Fatal(err)
			}
			fi := slices.IndexFunc(plan.Funcs, func(f datafile.Func) bool { return f.Name == "f" })
			if fi < 0 {
				t.Fatalf("no f in the plan")
			}
			f := plan.Funcs[fi]
			bad := testutil.InsideInstruction(t, filepath.Join(dir, name), f.Low, f.High, amd64Len)
			moved := -1
			if m == "FC" {
				plan.Funcs[fi].Entry = bad
			} else {
				moved = slices.IndexFunc(plan.Lines, func(l datafile.Line) bool { return slices.Contains(l.Addrs, f.Entry) })
				if moved < 0 {
					t.Fatalf("no line at f's entry %#x", f.Entry)
				}
				plan.Lines[moved].Addrs = []uint64{bad}
			}
			plan.ID = datafile.PlanID(plan)
			if err := datafile.SavePlan(pbi, plan); err != nil {
				t.Fatal(err)
			}
			r := tool(t, dir, "profile", append([]string{"/nologo", "/X", name}, c.args...)...)
			if r.status != c.status || !strings.Contains(r.stdout, c.stdout) {
				t.Fatalf("profile: status %d (want %d), output %q\n%s", r.status, c.status, r.stdout, r.stderr)
			}
			want := map[string]string{"FC": "warning PRF4657: function f in file " + name, "LC": "warning PRF4624: cannot profile line"}[m]
			if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, fmt.Sprintf("%#x: ", bad)) {
				t.Errorf("profile's warnings do not refuse the site at %#x (%q):\n%s", bad, want, r.stderr)
			}
			counts, err := datafile.OpenCounts(filepath.Join(dir, name+".pbo"))
			if err != nil {
				t.Fatal(err)
			}
			if m == "FC" {
				for i, fn := range plan.Funcs {
					w := c.counts[fn.Name]
					if fn.Name == "f" {
						w = 0
					}
					if got := counts.Stats.Hits[i]; got != w {
						t.Errorf("%s: %d hits, want %d", fn.Name, got, w)
					}
				}
			} else if got := counts.Stats.Hits[moved]; got != 0 {
				t.Errorf("the moved line: %d hits, want none", got)
			}
		})
	}
}

// amd64Len is the length of the x86-64 instruction at the start of code
// (testutil.InsideInstruction).
func amd64Len(code []byte, pc uint64) (int, error) {
	in, err := instr.AMD64.Decode(code, pc)
	return in.Len, err
}
