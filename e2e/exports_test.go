package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
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
	for _, want := range []string{"main;local_work;lib_add (libdlllib.so) 4\n", "main;local_work;lib_add (dlllib.o);helper 4\n", "main;lib_twice (dlllib.o);lib_add (dlllib.o);helper 2\n"} {
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

// recmulChains are the folded stacks of recmul.c's calls counted with /AT
// and /STACK 8, deeper than the program's: every chain of calls whole,
// from main, with its calls (testdata/progs/c/recmul.c: rec_mul recurses
// four levels, the last calling simple_mul, the others add_parts).
var recmulChains = map[string]int{
	"main":                                 1,
	"main;rec_mul":                         1,
	"main;rec_mul;rec_mul":                 3,
	"main;rec_mul;rec_mul;rec_mul":         9,
	"main;rec_mul;rec_mul;rec_mul;rec_mul": 27,
	"main;rec_mul;rec_mul;rec_mul;rec_mul;simple_mul": 27,
	"main;rec_mul;add_parts":                          1,
	"main;rec_mul;rec_mul;add_parts":                  3,
	"main;rec_mul;rec_mul;rec_mul;add_parts":          9,
}

// recmulChains2 are the same with /STACK 2: the calls told apart by two
// callers, deeper ones together, each chain with its two callers.
var recmulChains2 = map[string]int{
	"main":                       1,
	"main;rec_mul":               1,
	"main;rec_mul;rec_mul":       3,
	"rec_mul;rec_mul;rec_mul":    36,
	"rec_mul;rec_mul;simple_mul": 27,
	"main;rec_mul;add_parts":     1,
	"rec_mul;rec_mul;add_parts":  12,
}

// folded reads folded stacks: each line's stack and value; a stack seen
// twice fails the test.
func folded(t *testing.T, path string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		stack, value, ok := strings.Cut(l, " ")
		n, err := strconv.Atoi(value)
		if !ok || err != nil {
			t.Fatalf("folded line %q", l)
		}
		if _, twice := out[stack]; twice {
			t.Errorf("stack %s twice in %s", stack, path)
		}
		out[stack] = n
	}
	return out
}

// TestExportsRecursion profiles recmul.c, a recursive multiplication (as
// bc's _bc_rec_mul), with /AT. Counted with /STACK 8 its folded stacks are
// its whole chains of calls, each once with its calls (with /STACK 2, the
// chains of two callers); go tool pprof's cumulative calls of rec_mul are
// its calls and its callees': 40 + 27 + 13. Timed, rec_mul's time with
// children is its outermost call's however often it nests: go tool pprof
// -top -cum and callgrind_annotate --inclusive=yes give the listing's
// exact figure (the JSON's timeWithChildrenNs), never above 100 %.
func TestExportsRecursion(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "recmul")
	for _, c := range []struct {
		stack string
		want  map[string]int
	}{{"8", recmulChains}, {"2", recmulChains2}} {
		t.Run("FC-STACK"+c.stack, func(t *testing.T) {
			dir, _ := workflow(t, prog, []string{"/FC", "/AT", "/STACK", c.stack})
			must(t, dir, "plist", "/nologo", "--format=folded", "-o", "recmul.folded", "recmul")
			got := folded(t, filepath.Join(dir, "recmul.folded"))
			if !maps.Equal(got, c.want) {
				t.Errorf("folded stacks %v, want %v", got, c.want)
			}
			if c.stack != "8" {
				return
			}
			must(t, dir, "plist", "/nologo", "--format=pprof", "-o", "recmul.pprof", "recmul")
			if out, ok := consumer(t, dir, "go", "tool", "pprof", "-top", "-cum", "-sample_index=calls", "recmul.pprof"); ok &&
				!regexp.MustCompile(`\n\s+40 49\.38%\s+\S+\s+80 98\.77%  rec_mul\n`).MatchString(out) {
				t.Errorf("go tool pprof: want rec_mul's 40 calls, 80 with its callees'\n%s", out)
			}
		})
	}
	t.Run("FT", func(t *testing.T) {
		dir, _ := workflow(t, prog, []string{"/FT", "/AT"})
		out := must(t, dir, "plist", "/nologo", "--format=json", "recmul").stdout
		var j struct {
			Functions []struct {
				Name    string
				ChildNs int64 `json:"timeWithChildrenNs"`
			}
		}
		if err := json.Unmarshal([]byte(out), &j); err != nil {
			t.Fatal(err)
		}
		var want int64 = -1
		for _, f := range j.Functions {
			if f.Name == "rec_mul" {
				want = f.ChildNs
			}
		}
		if want <= 0 {
			t.Fatalf("rec_mul's time with children %d: %s", want, out)
		}
		// The consumers' shares of a total: the figure, and at most 100 %.
		share := func(tool, figure, percent string) {
			t.Helper()
			n, err := strconv.ParseInt(strings.ReplaceAll(figure, ",", ""), 10, 64)
			p, perr := strconv.ParseFloat(percent, 64)
			if err != nil || perr != nil || n != want || p > 100 {
				t.Errorf("%s: rec_mul's inclusive time %s (%s%%), want %d ns, at most 100 %%", tool, figure, percent, want)
			}
		}
		must(t, dir, "plist", "/nologo", "--format=pprof", "-o", "recmul.pprof", "recmul")
		if out, ok := consumer(t, dir, "go", "tool", "pprof", "-top", "-cum", "-unit=ns", "-sample_index=time", "recmul.pprof"); ok {
			if m := regexp.MustCompile(`\s(\d+)ns\s+([\d.]+)%  rec_mul\n`).FindStringSubmatch(out); m == nil {
				t.Errorf("go tool pprof: no rec_mul\n%s", out)
			} else {
				share("go tool pprof -cum", m[1], m[2])
			}
		}
		must(t, dir, "plist", "/nologo", "--format=callgrind", "-o", "recmul.callgrind", "recmul")
		if out, ok := consumer(t, dir, "callgrind_annotate", "--inclusive=yes", "recmul.callgrind"); ok {
			if m := regexp.MustCompile(`\n\s*40 \(\s*[\d.]+%\)\s+([\d,]+) \(\s*([\d.]+)%\)\s+\S*recmul\.c:rec_mul `).FindStringSubmatch(out); m == nil {
				t.Errorf("callgrind_annotate: no rec_mul\n%s", out)
			} else {
				share("callgrind_annotate --inclusive=yes", m[1], m[2])
			}
		}
	})
}

// buildParser builds testdata/progs/c/parser as an out-of-tree build
// does: the sources copied into src/, compiled from build/ as
// ../src/main.c and ../src/parse.c. parse.c is a parser as bison writes
// one, whose grammar's code is named by #line "parse.y": relative to
// where bison ran (src/), which the compiler, run in build/, records as
// build/parse.y. It returns the program and the source directory, or ""
// for a prebuilt fixture, whose sources are not here.
func buildParser(t *testing.T) (prog, src string) {
	t.Helper()
	prog = testutil.Fixture(t, "c", "parser", nil, func(out string) *exec.Cmd {
		dir := filepath.Dir(out)
		from := filepath.Join(testutil.Root(t), "testdata", "progs", "c", "parser")
		script := fmt.Sprintf("set -e; mkdir -p src build; cp '%s'/main.c '%s'/parse.c '%s'/parse.y src/; cd build; '%s' -g -O0 %s ../src/main.c ../src/parse.c -o '%s'",
			from, from, from, testutil.CC(), os.Getenv("SPROF_CFLAGS"), out)
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = dir
		return cmd
	})
	src = filepath.Join(filepath.Dir(prog), "src")
	if _, err := os.Stat(filepath.Join(src, "parse.y")); err != nil || os.Getenv("SPROF_FIXTURES") != "" {
		// (Prebuilt on another machine, the arm64 VM's: its debugging
		// information names the directories it was built in there.)
		return prog, ""
	}
	return prog, src
}

// TestLcovSources profiles the parser of an out-of-tree build
// (buildParser), where PLIST runs in a third directory. The tracefile
// names its sources where they are (parse.y found in the source directory
// of its unit, not in build/ where the compiler put it), so genhtml makes
// a page of each without --ignore-errors source; lcov --summary counts
// its three functions, and as many lines as the listing, all run. A line
// profile has its functions (parse_item's calls: its first line's 5); a
// function profile its functions' calls. The listing shows every source;
// without parse.y it says once which file it leaves out with how many of
// its lines, and /D finds it.
func TestLcovSources(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog, src := buildParser(t)
	if src == "" {
		t.Skip("a prebuilt parser: its sources are not where it was built")
	}
	t.Run("LC", func(t *testing.T) {
		dir, _ := workflow(t, prog, []string{"/LC"})
		r := must(t, dir, "plist", "/nologo", "parser")
		total := regexp.MustCompile(`Total lines: (\d+)`).FindStringSubmatch(r.stdout)
		if total == nil || strings.Contains(r.stderr, "PRF4487") {
			t.Fatalf("listing: stderr %q\n%s", r.stderr, r.stdout)
		}
		for _, f := range []string{"parse.y", "parse.c", "main.c"} {
			if !strings.Contains(r.stdout, "Source file: "+filepath.Join(src, f)+"\n") {
				t.Errorf("the listing does not show %s:\n%s", filepath.Join(src, f), r.stdout)
			}
		}
		// The lines of parse.y the listing counts (parse_item's).
		section := r.stdout[strings.Index(r.stdout, "Source file: "+filepath.Join(src, "parse.y")):]
		section = section[:strings.Index(section[1:], "Source file: ")+1]
		yLines := len(regexp.MustCompile(`(?m)^\s+\d+:\s+\d+\s+[\d.]+\s`).FindAllString(section, -1))

		must(t, dir, "plist", "/nologo", "--format=lcov", "-o", "parser.info", "parser")
		info, err := os.ReadFile(filepath.Join(dir, "parser.info"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"SF:" + filepath.Join(src, "parse.y") + "\nFN:9,parse_item\nFNDA:5,parse_item\nFNF:1\nFNH:1\n",
			"DA:12,2\nDA:13,3\n", "SF:" + filepath.Join(src, "main.c") + "\n"} {
			if !strings.Contains(string(info), want) {
				t.Errorf("the tracefile lacks %q:\n%s", want, info)
			}
		}
		if out, ok := consumer(t, dir, "lcov", "--summary", "parser.info"); ok {
			lines := fmt.Sprintf("lines......: 100.0%% (%s of %s lines)", total[1], total[1])
			if !strings.Contains(out, lines) || !strings.Contains(out, "functions..: 100.0% (3 of 3 functions)") {
				t.Errorf("lcov --summary: want %q and 3 of 3 functions\n%s", lines, out)
			}
		}
		if _, ok := consumer(t, dir, "genhtml", "-q", "-o", "html", "parser.info"); ok {
			for _, f := range []string{"parse.y", "parse.c", "main.c"} {
				if _, err := os.Stat(filepath.Join(dir, "html", "src", f+".gcov.html")); err != nil {
					t.Errorf("genhtml made no page of %s: %v", f, err)
				}
			}
		}

		// Without parse.y: left out, said once, with its lines.
		away := filepath.Join(t.TempDir(), "grammar")
		if err := os.Mkdir(away, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(src, "parse.y"), filepath.Join(away, "parse.y")); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(filepath.Join(away, "parse.y"), filepath.Join(src, "parse.y"))
		r = must(t, dir, "plist", "/nologo", "parser")
		want := fmt.Sprintf("plist: warning PRF4487: the listing leaves out a source file it cannot find, with %d of the profile's lines: parse.y (%d lines)\nplist: hint: name the directories that hold them with /D DIR", yLines, yLines)
		if yLines == 0 || !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "PRF4487") != 1 ||
			!strings.Contains(r.stdout, "Unable to open source file parse.y\n") || !strings.Contains(r.stdout, "Total lines: "+total[1]+"\n") {
			t.Errorf("listing without parse.y: stderr %q, want %q\n%s", r.stderr, want, r.stdout)
		}
		r = must(t, dir, "plist", "/nologo", "/D", away, "parser")
		if strings.Contains(r.stderr, "PRF4487") || !strings.Contains(r.stdout, "Source file: "+filepath.Join(away, "parse.y")+"\n") {
			t.Errorf("listing with /D %s: stderr %q\n%s", away, r.stderr, r.stdout)
		}
	})
	t.Run("FC", func(t *testing.T) {
		dir, _ := workflow(t, prog, []string{"/FC"})
		must(t, dir, "plist", "/nologo", "--format=lcov", "-o", "parser.info", "parser")
		info, err := os.ReadFile(filepath.Join(dir, "parser.info"))
		if err != nil {
			t.Fatal(err)
		}
		if want := "SF:" + filepath.Join(src, "parse.y") + "\nFN:9,parse_item\nFNDA:5,parse_item\n"; !strings.Contains(string(info), want) {
			t.Errorf("the tracefile lacks %q:\n%s", want, info)
		}
		if out, ok := consumer(t, dir, "lcov", "--summary", "parser.info"); ok && !strings.Contains(out, "functions..: 100.0% (3 of 3 functions)") {
			t.Errorf("lcov --summary:\n%s", out)
		}
		if _, ok := consumer(t, dir, "genhtml", "-q", "-o", "html", "parser.info"); ok {
			if _, err := os.Stat(filepath.Join(dir, "html", "src", "parse.y.gcov.html")); err != nil {
				t.Errorf("genhtml made no page of parse.y: %v", err)
			}
		}
	})
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
	// A base of another type: compared all the same, after a warning.
	must(t, dir, "prep", "/nologo", "/FT", "counts")
	must(t, dir, "profile", "/nologo", "counts")
	must(t, dir, "prep", "/nologo", "/M", "counts")
	r = must(t, dir, "plist", "/nologo", "--diff-base", "base", "counts")
	if want := "plist: warning PRF4488: --diff-base base.pbt is a function counting profile, and this one a function timing profile"; !strings.HasPrefix(r.stderr, want) ||
		strings.Count(r.stderr, "PRF4488") != 1 || !strings.Contains(r.stdout, "Profile: Function timing, compared with base.pbt") {
		t.Errorf("--diff-base of another type: stderr %q, want %q\n%s", r.stderr, want, r.stdout)
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
