package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// dllFixture is the original's dll/ programs on Linux: dllhost linked
// with libdlllib.so, which the dynamic linker maps at start-up.
var dllFixture = testutil.Linked{
	Prog:  []string{"original/src/dllhost.c"},
	Lib:   []string{"original/src/dlllib.c"},
	Name:  "libdlllib.so",
	Link:  true,
	Flags: []string{"-D__declspec(x)="},
}

// dlopenFixture loads libsq.so with dlopen, twice, with a dlclose between
// (testdata/progs/c/dlopen.c): square() runs 10 times in the first load
// and 4 × 1000 times, in four threads, in the second.
var dlopenFixture = testutil.Linked{
	Prog: []string{"progs/c/dlopen.c"},
	Lib:  []string{"progs/c/libsq.c"},
	Name: "libsq.so",
}

// sourcePath is the directory of a listing's source file, which depends
// on where the fixtures were built.
var sourcePath = regexp.MustCompile(`(?m)^Source file: .*/`)

// comparable is a listing with what differs by nature between the
// original's run and ours taken out: dates, the source files'
// directories, the modules' names and their underlines.
func comparable(listing string) string {
	if i := strings.Index(listing, "\nBranches Not Taken Both Ways\n"); i >= 0 {
		// (Branch coverage's section, which the original had not:
		// docs/linux.md, "Branch coverage".)
		listing = listing[:i]
	}
	listing = strings.NewReplacer("dllhost.exe", "dllhost", "dlllib.dll", "libdlllib.so",
		"dllhost.obj", "dllhost.o", "dlllib.obj", "dlllib.o", " _", " ").Replace(listing)
	listing = regexp.MustCompile(`(?m)^Source file: .*[/\\]`).ReplaceAllString(listing, "Source file: ")
	listing = regexp.MustCompile(`(?m)^(Date:|    Command line at).*$`).ReplaceAllString(listing, "$1")
	return regexp.MustCompile(`(?m)^-+$`).ReplaceAllString(listing, "-")
}

// moduleRecords reads the records 6 or 7 of plist /T by module: for
// functions "name" -> hits, for lines "file:line" -> hits.
func moduleRecords(t *testing.T, out string) map[string]map[string]uint64 {
	t.Helper()
	got := map[string]map[string]uint64{}
	for _, l := range strings.Split(strings.ReplaceAll(out, "\r\n", "\n"), "\n") {
		f := strings.Split(l, "\t")
		var key, hits string
		switch {
		case f[0] == "6" && len(f) == 7:
			key, hits = f[6], f[3]
		case f[0] == "7" && len(f) == 5:
			key, hits = filepath.Base(strings.ReplaceAll(f[2], `\`, "/"))+":"+f[3], f[4]
		default:
			continue
		}
		n, err := strconv.ParseUint(hits, 10, 64)
		if err != nil {
			t.Fatalf("record %q: %v", l, err)
		}
		if got[f[1]] == nil {
			got[f[1]] = map[string]uint64{}
		}
		got[f[1]][key] = n
	}
	return got
}

// installDll copies the dll programs into a fresh directory and returns
// it, with the names of the program and the library there.
func installDll(t *testing.T) (dir, prog, lib string) {
	t.Helper()
	p, l := testutil.BuildLinked(t, "dllhost", dllFixture)
	dir = t.TempDir()
	return dir, install(t, p, dir), install(t, l, dir)
}

// linkedWorkflow is workflow for a program and its library: both are
// copied into a fresh directory and given to PREP, the program first.
func linkedWorkflow(t *testing.T, prog, lib string, prepArgs []string, args ...string) (string, result) {
	t.Helper()
	dir := t.TempDir()
	prog, lib = install(t, prog, dir), install(t, lib, dir)
	must(t, dir, "prep", append(append([]string{"/nologo"}, prepArgs...), prog, lib)...)
	r := tool(t, dir, "profile", append([]string{"/nologo", prog}, args...)...)
	if r.status != 0 {
		t.Fatalf("profile: status %d, output %q\n%s", r.status, r.stdout, r.stderr)
	}
	must(t, dir, "prep", "/nologo", "/M", prog)
	return dir, r
}

// TestSharedLibraryGoldens profiles the original's dll programs, the
// library mapped at start-up, with every type, PIE and not, and compares
// every count with the original's tab files (dll/*-plist-t.out): the
// program's functions and lines in the program's module, the library's
// in the library's, the program's calls through its PLT as the original's
// import thunks (lib_add (libdlllib.so): docs/linux.md, "Shared
// libraries"); and the listings with the original's, names aside.
func TestSharedLibraryGoldens(t *testing.T) {
	testutil.MustHavePtrace(t)
	modules := map[string]string{"dllhost.exe": "dllhost", "dlllib.dll": "libdlllib.so"}
	for _, b := range []build{fixtureBuilds[0], fixtureBuilds[1]} {
		for _, m := range []string{"fc", "fv", "ft", "lc", "lv"} {
			t.Run(b.name+"/"+m, func(t *testing.T) {
				l := dllFixture
				l.Flags = append(append([]string(nil), l.Flags...), b.flags...)
				prog, lib := testutil.BuildLinked(t, "dllhost", l)
				dir, r := linkedWorkflow(t, prog, lib, []string{"/" + strings.ToUpper(m)})
				if r.status != 0 || !strings.Contains(r.stdout, "dllhost result 20") {
					t.Fatalf("profile: status %d, output %q\n%s", r.status, r.stdout, r.stderr)
				}
				out := must(t, dir, "plist", "/nologo", "/T", "dllhost").stdout
				golden := testutil.OriginalText(t, "dll/"+m+"-plist-t.out")
				want := moduleRecords(t, golden)
				got := moduleRecords(t, out)
				for mod, recs := range want {
					for key, hits := range recs {
						if m == "fv" && !testutil.InProcess() {
							// Coverage with breakpoints (an ARMv8.0 core):
							// each goes at its first hit.
							hits = min(hits, 1)
						}
						name := strings.TrimPrefix(key, "_")
						if g, ok := got[modules[mod]][name]; !ok || g != hits {
							t.Errorf("%s %s: %d hits (profiled %v), the original %d", modules[mod], name, g, ok, hits)
						}
					}
				}
				if n, w := len(got["dllhost"])+len(got["libdlllib.so"]), len(want["dllhost.exe"])+len(want["dlllib.dll"]); n != w || len(got) != 2 {
					t.Errorf("records %v, want %d", got, w)
				}
				if tb, w := parseTab(t, out), parseTab(t, golden); m != "fv" || testutil.InProcess() {
					if tb.total != w.total || tb.marked != w.marked || tb.executed != w.executed {
						t.Errorf("record 3: %d %d %d, the original %d %d %d", tb.total, tb.marked, tb.executed, w.total, w.marked, w.executed)
					}
				}
				if m == "fc" && testutil.KeepsDepth(false) {
					// (A call through the PLT is left at the library
					// function's entry, at the same stack pointer: it
					// does not nest, as the original's thunks did not.)
					if tb := parseTab(t, out); tb.depth != 4 {
						t.Errorf("call depth %d, the original 4 (main, lib_twice, lib_add, helper)", tb.depth)
					}
				}
				if m == "fc" || m == "fv" {
					// The whole listing, where its numbers are the
					// original's (in-process: counts and depth).
					if listing := must(t, dir, "plist", "/nologo", "dllhost").stdout; testutil.InProcess() {
						orig := testutil.OriginalText(t, "dll/"+m+"-plist.out")
						if a, b := comparable(listing), comparable(orig); a != b {
							t.Errorf("plist differs from the original's:\n%s", testutil.Diff([]byte(b), []byte(a)))
						}
					}
				}
				if b.name == "O0-pie" && m[0] == 'l' {
					// The listings, end to end: every source line, the
					// module blocks in PREP's order (the sources are
					// found through /D where the build's paths are not).
					src := filepath.Join(testutil.Original(t), "src")
					views := [][]string{nil}
					if m == "lc" {
						views = append(views, []string{"/SC"})
					}
					for _, v := range views {
						args := append(append([]string{"/nologo", "/D", src}, v...), "dllhost")
						listing := sourcePath.ReplaceAllString(must(t, dir, "plist", args...).stdout, "Source file: ")
						name := "dllhost-" + m + strings.ToLower(strings.ReplaceAll(strings.Join(v, ""), "/", "-"))
						testutil.Golden(t, filepath.Join("testdata", name+".golden"), maskDates(listing))
						// And the original's own listing, apart from the
						// names, dates and underlines of names.
						orig := testutil.OriginalText(t, "dll/"+m+"-plist"+strings.ToLower(strings.ReplaceAll(strings.Join(v, ""), "/", "-"))+".out")
						if a, b := comparable(listing), comparable(orig); a != b {
							t.Errorf("plist %s differs from the original's:\n%s", strings.Join(args, " "), testutil.Diff([]byte(b), []byte(a)))
						}
					}
				}
				report := must(t, dir, "plist", "/nologo", "dllhost").stdout
				first := strings.Index(report, "Module Statistics for dllhost\n")
				second := strings.Index(report, "Module Statistics for libdlllib.so\n")
				if first < 0 || second < first {
					t.Errorf("report: want the program's module statistics, then the library's:\n%s", report)
				}
			})
		}
	}
}

// TestDlopenTwice profiles a library loaded with dlopen, closed, and
// loaded again while four other threads run, with every type: the library
// is planted at each load and forgotten at the dlclose, and square() is
// counted 10 + 4 × 1000 times in all, at -O0 and -O2. Line coverage
// covers its line once, however many loads.
func TestDlopenTwice(t *testing.T) {
	testutil.MustHavePtrace(t)
	for _, b := range []build{fixtureBuilds[0], fixtureBuilds[2]} {
		for _, m := range []string{"FC", "FV", "FT", "LC", "LV"} {
			t.Run(b.name+"/"+m, func(t *testing.T) {
				l := dlopenFixture
				l.Flags = b.flags
				prog, lib := testutil.BuildLinked(t, "dlopen", l)
				dir, r := linkedWorkflow(t, prog, lib, []string{"/" + m}, "./libsq.so")
				if r.status != 0 || !strings.Contains(r.stdout, "total 1331334285") {
					t.Fatalf("profile: status %d, output %q\n%s", r.status, r.stdout, r.stderr)
				}
				got := moduleRecords(t, must(t, dir, "plist", "/nologo", "/T", "dlopen").stdout)["libsq.so"]
				want := map[string]map[string]uint64{
					"FC": {"square": 4010}, "FV": {"square": 4010}, "FT": {"square": 4010},
					"LC": {"libsq.c:3": 4010}, "LV": {"libsq.c:3": 1},
				}[m]
				if m == "FV" && !testutil.InProcess() {
					// With breakpoints, each goes at its first hit: one
					// in each load.
					want["square"] = 2
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

// TestLibraryOnly prepares the library alone, as the original's
// dll-fc-dllonly: PROFILE of the program finds no plan of its own
// (PRF1011); with /I naming the library's plan (libdlllib.so.pbi: data
// files are named after the first module's file name) it warns that the
// program is not in it (PRF4541), runs it, and counts the library's
// functions.
func TestLibraryOnly(t *testing.T) {
	testutil.MustHavePtrace(t)
	dir, prog, lib := installDll(t)
	must(t, dir, "prep", "/nologo", "/FC", lib)
	wantFail(t, tool(t, dir, "profile", "/nologo", prog), 1, "PRF1011")
	r := must(t, dir, "profile", "/nologo", "/I", lib, "/O", lib, prog)
	if !strings.Contains(r.stderr, "warning PRF4541") || !strings.Contains(r.stdout, "dllhost result 20") {
		t.Errorf("profile /I: stdout %q stderr %q, want the program's output and PRF4541", r.stdout, r.stderr)
	}
	must(t, dir, "prep", "/nologo", "/M", lib)
	got := moduleRecords(t, must(t, dir, "plist", "/nologo", "/T", lib).stdout)
	want := map[string]uint64{"helper": 6, "lib_add": 6, "lib_twice": 2}
	if fmt.Sprint(got["libdlllib.so"]) != fmt.Sprint(want) || len(got) != 1 {
		t.Errorf("records %v, want libdlllib.so %v", got, want)
	}
}

// TestLibraryChanged: a library rebuilt since PREP is not profiled, with
// warning PRF4654; the program's own functions are.
func TestLibraryChanged(t *testing.T) {
	testutil.MustHavePtrace(t)
	dir, prog, lib := installDll(t)
	must(t, dir, "prep", "/nologo", "/FC", prog, lib)
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, lib), later, later); err != nil {
		t.Fatal(err)
	}
	r := must(t, dir, "profile", "/nologo", prog)
	if !strings.Contains(r.stderr, "warning PRF4654") || !strings.Contains(r.stderr, lib) {
		t.Errorf("profile: stderr %q, want warning PRF4654 naming %s", r.stderr, lib)
	}
	must(t, dir, "prep", "/nologo", "/M", prog)
	got := moduleRecords(t, must(t, dir, "plist", "/nologo", "/T", prog).stdout)
	if got["dllhost"]["main"] != 1 || got["libdlllib.so"]["lib_add"] != 0 {
		t.Errorf("records %v: want main 1 and the library's functions 0", got)
	}
}

// TestProgramOnlyImports prepares the program alone, as the original's
// dll-fc-exeonly: its calls into the library are still counted, through
// its PLT, the library found through the program's run path; the listing
// is the original's but for names and dates.
func TestProgramOnlyImports(t *testing.T) {
	testutil.MustHavePtrace(t)
	dir, prog, _ := installDll(t)
	must(t, dir, "prep", "/nologo", "/FC", prog)
	if r := must(t, dir, "profile", "/nologo", prog); !strings.Contains(r.stdout, "dllhost result 20") {
		t.Fatalf("profile: output %q\n%s", r.stdout, r.stderr)
	}
	must(t, dir, "prep", "/nologo", "/M", prog)
	got := moduleRecords(t, must(t, dir, "plist", "/nologo", "/T", prog).stdout)
	want := map[string]uint64{"lib_add": 4, "lib_twice": 2, "local_work": 1, "main": 1}
	if fmt.Sprint(got["dllhost"]) != fmt.Sprint(want) || len(got) != 1 {
		t.Errorf("records %v, want dllhost %v", got, want)
	}
	if testutil.InProcess() {
		listing := must(t, dir, "plist", "/nologo", prog).stdout
		if a, b := comparable(listing), comparable(testutil.OriginalText(t, "dll/fc-exeonly-plist.out")); a != b {
			t.Errorf("plist differs from the original's:\n%s", testutil.Diff([]byte(b), []byte(a)))
		}
	}
}
