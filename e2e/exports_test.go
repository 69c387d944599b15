package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// consumer runs a consumer of an export, or skips the check when it is
// not installed (the arm64 VM has none of them); it returns its output.
func consumer(t *testing.T, dir string, name string, args ...string) (string, bool) {
	t.Helper()
	if !testutil.HaveTool(name) {
		t.Logf("%s not installed: not checked", name)
		return "", false
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), true
}

// TestExports profiles the dll programs with /AT and has every export
// read by its real consumer: lcov --summary and genhtml, callgrind_annotate,
// go tool pprof -top; folded stacks and JSON are read here. The counts
// are the original's (dll/fc-at): main calls local_work, which calls
// lib_add 4 times through the PLT, and lib_twice twice; lib_add calls
// helper each time.
func TestExports(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog, lib := testutil.BuildLinked(t, "dllhost", dllFixture)
	dir, _ := linkedWorkflow(t, prog, lib, []string{"/FC", "/AT"})
	export := func(format string) string {
		t.Helper()
		file := "dllhost." + format
		must(t, dir, "plist", "/nologo", "--format="+format, "-o", file, "dllhost")
		return file
	}

	if out, ok := consumer(t, dir, "lcov", "--summary", export("lcov")); ok && !strings.Contains(out, "functions..: 100.0% (5 of 5 functions)") {
		t.Errorf("lcov --summary:\n%s", out)
	}
	if _, ok := consumer(t, dir, "genhtml", "-q", "-o", "html", "dllhost.lcov"); ok {
		if _, err := os.Stat(filepath.Join(dir, "html", "index.html")); err != nil {
			t.Errorf("genhtml wrote no index.html: %v", err)
		}
	}
	if out, ok := consumer(t, dir, "callgrind_annotate", export("callgrind")); ok {
		for _, want := range []string{`22 \(100.0%\)\s+PROGRAM TOTALS`, `4 \(18.18%\)\s+\?\?\?:lib_add \(libdlllib.so\) \[dllhost\]`, `6 \(27.27%\)\s+\S*dlllib.c:helper \[libdlllib.so\]`} {
			if !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("callgrind_annotate lacks %s:\n%s", want, out)
			}
		}
	}
	if out, ok := consumer(t, dir, "go", "tool", "pprof", "-top", export("pprof")); ok {
		for _, want := range []string{`Showing nodes accounting for 22, 100% of 22 total`, `\s6\s+27.27%\s+\S+\s+6\s+27.27%\s+helper\n`, `\s4\s+18.18%.*lib_add \(libdlllib.so\)`} {
			if !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("go tool pprof -top lacks %s:\n%s", want, out)
			}
		}
	}
	folded, _ := os.ReadFile(filepath.Join(dir, export("folded")))
	for _, want := range []string{"main;local_work;lib_add (libdlllib.so) 4\n", "local_work;lib_add (dlllib.o);helper 4\n", "lib_twice (dlllib.o);lib_add (dlllib.o);helper 2\n"} {
		if !strings.Contains(string(folded), want) {
			t.Errorf("folded stacks lack %q:\n%s", want, folded)
		}
	}
	var j struct {
		Schema    string `json:"schema"`
		Functions []struct {
			Module, Name, Source string
			Hits                 uint64
		} `json:"functions"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, export("json")))
	if err := json.Unmarshal(data, &j); err != nil {
		t.Fatal(err)
	}
	hits := map[string]uint64{}
	for _, f := range j.Functions {
		hits[f.Module+" "+f.Name+" "+f.Source] = f.Hits
	}
	if j.Schema != "sprof-profile/1" || hits["dllhost lib_add libdlllib.so"] != 4 || hits["libdlllib.so helper dlllib.o"] != 6 || len(hits) != 7 {
		t.Errorf("JSON: schema %q, %v", j.Schema, hits)
	}
}

// TestLineExports: a line profile's lines in lcov (lcov --summary) and
// callgrind (callgrind_annotate), every line of the dll programs run.
func TestLineExports(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog, lib := testutil.BuildLinked(t, "dllhost", dllFixture)
	dir, _ := linkedWorkflow(t, prog, lib, []string{"/LC"})
	must(t, dir, "plist", "/nologo", "--format=lcov", "-o", "lines.info", "dllhost")
	if out, ok := consumer(t, dir, "lcov", "--summary", "lines.info"); ok && !strings.Contains(out, "lines......: 100.0% (15 of 15 lines)") {
		t.Errorf("lcov --summary:\n%s", out)
	}
	must(t, dir, "plist", "/nologo", "--format=callgrind", "-o", "lines.callgrind", "dllhost")
	if out, ok := consumer(t, dir, "callgrind_annotate", "lines.callgrind"); ok && !regexp.MustCompile(`29 \(100.0%\)\s+PROGRAM TOTALS`).MatchString(out) {
		t.Errorf("callgrind_annotate:\n%s", out)
	}
}

// TestFailUnderAndDiff: --fail-under exits 3 below the coverage asked
// for, after the report, and 0 at or above it; --diff-base lists what
// changed between two databases of the same program.
func TestFailUnderAndDiff(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildOriginalUnits(t, "lcount", []string{"lcount.c", "lcount2.c"})
	dir, _ := workflow(t, prog, []string{"/LV"})
	name := filepath.Base(prog)
	r := tool(t, dir, "plist", "/nologo", "--fail-under=95", name)
	if r.status != 3 || !strings.Contains(r.stderr, "is below --fail-under=95%") || !strings.Contains(r.stdout, "Line coverage") {
		t.Errorf("--fail-under=95: status %d, stderr %q, want 3 after the report", r.status, r.stderr)
	}
	if r := tool(t, dir, "plist", "/nologo", "--fail-under=50", name); r.status != 0 {
		t.Errorf("--fail-under=50: status %d, stderr %q", r.status, r.stderr)
	}
	wantFail(t, tool(t, dir, "plist", "/nologo", "--format=xml", name), 2, "--format=xml: invalid option")
	// An output that cannot be written is named, and nothing is left
	// half-written; a base that does not exist is PRF1011.
	wantFail(t, tool(t, dir, "plist", "/nologo", "-o", "nodir/x.txt", name), 1, "PRF1011: cannot open file nodir/x.txt")
	if _, err := os.Stat(filepath.Join(dir, "nodir")); err == nil {
		t.Error("-o nodir/x.txt made the directory")
	}
	wantFail(t, tool(t, dir, "plist", "/nologo", "--diff-base=nosuch", name), 1, "PRF1011: cannot open file nosuch.pbt")

	dir, _ = workflow(t, testutil.BuildC(t, "counts"), []string{"/FC"})
	b, err := os.ReadFile(filepath.Join(dir, "counts.pbt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "base.pbt"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, dir, "profile", "/nologo", "counts")
	must(t, dir, "prep", "/nologo", "/M", "counts")
	out := must(t, dir, "plist", "/nologo", "--diff-base", "base", "counts").stdout
	// A second run doubles every count: fib's 1973 calls become 3946.
	if !strings.Contains(out, "compared with base.pbt") || !regexp.MustCompile(`\s1973\s+3946\s+\+1973  fib \(counts.o\)`).MatchString(out) {
		t.Errorf("--diff-base:\n%s", out)
	}
}

// TestExportsEveryType has every export of every profile type read by its
// consumer, with the totals the original's dll goldens have: 22 calls
// (function types, the PLT entries' 6 among them), 29 line hits (line
// counting), 15 lines covered (line coverage).
func TestExportsEveryType(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog, lib := testutil.BuildLinked(t, "dllhost", dllFixture)
	for _, c := range []struct {
		method string
		total  int
	}{{"FC", 22}, {"FV", 22}, {"FT", 22}, {"LC", 29}, {"LV", 15}} {
		t.Run(c.method, func(t *testing.T) {
			if c.method == "FV" && !testutil.InProcess() {
				c.total = 7 // coverage with breakpoints: one each
			}
			dir, _ := linkedWorkflow(t, prog, lib, []string{"/" + c.method})
			total := strconv.Itoa(c.total)
			for _, f := range []string{"lcov", "callgrind", "pprof", "folded", "json"} {
				must(t, dir, "plist", "/nologo", "--format="+f, "-o", "out."+f, "dllhost")
			}
			if out, ok := consumer(t, dir, "lcov", "--summary", "out.lcov"); ok && !regexp.MustCompile(`(lines|functions)\.+: 100.0%`).MatchString(out) {
				t.Errorf("lcov --summary:\n%s", out)
			}
			if out, ok := consumer(t, dir, "callgrind_annotate", "out.callgrind"); ok && !regexp.MustCompile(`\n`+total+` \(100.0%\)`).MatchString(out) {
				t.Errorf("callgrind_annotate: want %s in all\n%s", total, out)
			}
			if out, ok := consumer(t, dir, "go", "tool", "pprof", "-top", "-sample_index=calls", "out.pprof"); ok && !strings.Contains(out, "accounting for "+total+", 100% of "+total+" total") {
				t.Errorf("go tool pprof: want %s in all\n%s", total, out)
			}
			if c.method != "FT" { // (its folded values are times)
				folded, _ := os.ReadFile(filepath.Join(dir, "out.folded"))
				sum := 0
				for _, l := range strings.Split(strings.TrimSpace(string(folded)), "\n") {
					n, err := strconv.Atoi(l[strings.LastIndexByte(l, ' ')+1:])
					if err != nil {
						t.Fatalf("folded line %q", l)
					}
					sum += n
				}
				if sum != c.total {
					t.Errorf("folded stacks add up to %d, want %d", sum, c.total)
				}
			}
			var j struct {
				Functions []struct{ Hits int } `json:"functions"`
				Lines     []struct{ Hits int } `json:"lines"`
			}
			data, _ := os.ReadFile(filepath.Join(dir, "out.json"))
			if err := json.Unmarshal(data, &j); err != nil {
				t.Fatal(err)
			}
			sum := 0
			for _, f := range j.Functions {
				sum += f.Hits
			}
			for _, l := range j.Lines {
				sum += l.Hits
			}
			if sum != c.total {
				t.Errorf("JSON hits add up to %d, want %d", sum, c.total)
			}
		})
	}
}
