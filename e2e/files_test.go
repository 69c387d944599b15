package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// installAs copies a fixture into dir under another name.
func installAs(t *testing.T, prog, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestNameForms runs the workflow on programs whose names the three tools
// must read alike: with a dot (app.v2, libfoo.so style), and as long as a
// file name can be with the .pbi beside it (251 bytes; the temporary files
// of the atomic writes must not be what fails).
func TestNameForms(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "faults")
	for _, name := range []string{"app.v2", "prog.so.1", strings.Repeat("p", 251)} {
		t.Run(name[:min(len(name), 12)], func(t *testing.T) {
			dir := t.TempDir()
			name := installAs(t, prog, dir, name)
			must(t, dir, "prep", "/nologo", "/FC", name)
			must(t, dir, "profile", "/nologo", name, "args", "a", "b", "c")
			must(t, dir, "prep", "/nologo", "/M", name)
			tb := parseTab(t, must(t, dir, "plist", "/nologo", "/T", name).stdout)
			if tb.hits["f"] != 3 || len(tb.runs) != 1 {
				t.Errorf("plist /T %s: f %d, %d runs; want 3, 1", name, tb.hits["f"], len(tb.runs))
			}
			// The listing names the same file with its extension.
			tb = parseTab(t, must(t, dir, "plist", "/nologo", "/T", name+".pbt").stdout)
			if tb.hits["f"] != 3 {
				t.Errorf("plist /T %s.pbt: f %d", name, tb.hits["f"])
			}
		})
	}
}

// TestConcurrentMerges merges from two loops at once into one .pbt: every
// merge lands (before the directory lock, 29 to 32 runs of 40 did).
func TestConcurrentMerges(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "faults")
	dir, _ := workflow(t, prog, []string{"/FC"}, "args", "a", "b", "c")
	n := 10 // runs each loop merges
	if testutil.Slow() {
		n = 5
	}
	for i := range 2 * n {
		must(t, dir, "profile", "/nologo", "/O", fmt.Sprint("run", i), "faults", "args", "a", "b", "c")
	}
	var wg sync.WaitGroup
	for loop := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := loop * n; i < (loop+1)*n; i++ {
				if r := tool(t, dir, "prep", "/nologo", "/IT", "faults", "/IO", fmt.Sprint("run", i), "/OT", "faults"); r.status != 0 {
					t.Errorf("merge run%d: %s", i, r.stderr)
				}
			}
		}()
	}
	wg.Wait()
	tb := parseTab(t, must(t, dir, "plist", "/nologo", "/T", "faults").stdout)
	if len(tb.runs) != 1+2*n || tb.hits["f"] != uint64(1+2*n)*3 {
		t.Errorf("%d runs, f %d; want %d runs and f %d", len(tb.runs), tb.hits["f"], 1+2*n, (1+2*n)*3)
	}
}

// TestRunsKept profiles one program several times before merging, at once
// and one after the other: no run is lost, and prep /M merges them all.
func TestRunsKept(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "faults")
	dir := t.TempDir()
	name := install(t, prog, dir)
	must(t, dir, "prep", "/nologo", "/FC", name)
	// One after the other: the second run must not replace the first.
	must(t, dir, "profile", "/nologo", name, "args", "a", "b", "c")
	r := must(t, dir, "profile", "/nologo", name, "args", "a", "b", "c")
	if !strings.Contains(r.stderr, "faults.pbo holds a run not merged yet: this run is written to faults.pbo.2") {
		t.Errorf("second run: stderr %q", r.stderr)
	}
	// Four at once.
	const n = 4
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := tool(t, dir, "profile", "/nologo", name, "args", "a", "b", fmt.Sprint(i)); r.status != 0 {
				t.Errorf("profile: %s", r.stderr)
			}
		}()
	}
	wg.Wait()
	must(t, dir, "prep", "/nologo", "/M", name)
	tb := parseTab(t, must(t, dir, "plist", "/nologo", "/T", name).stdout)
	if len(tb.runs) != 2+n || tb.hits["f"] != (2+n)*3 {
		t.Errorf("%d runs, f %d; want %d runs and f %d", len(tb.runs), tb.hits["f"], 2+n, (2+n)*3)
	}
	// The numbered files are gone once merged; counts.pbo stays, and
	// merging again is refused: every run is in.
	left, _ := filepath.Glob(filepath.Join(dir, name+".pbo*"))
	if len(left) != 1 || filepath.Base(left[0]) != name+".pbo" {
		t.Errorf("run files left: %v", left)
	}
	wantFail(t, tool(t, dir, "prep", "/nologo", "/M", name), 1, "is already in")
}

// TestManyArguments gives PREP 10,000 selections and PROFILE a program
// with 40,000 arguments: every one is taken (the parse is linear: kong's
// took 5 s and 19 s for these; BenchmarkParse in internal/cli measures
// it).
func TestManyArguments(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "faults")
	dir := t.TempDir()
	name := install(t, prog, dir)
	args := []string{"/nologo", "/FC"}
	for i := range 10000 {
		args = append(args, "/EXC", fmt.Sprint("nosuch", i))
	}
	r := must(t, dir, "prep", append(args, name)...)
	if n := strings.Count(r.stderr, "was never matched"); n != 10000 {
		t.Errorf("prep: %d warnings of unmatched selections, want 10000", n)
	}
	// Each argument is a call of f: fewer where breakpoints are slow.
	n := testutil.Scale(40000)
	progArgs := []string{"/nologo", name, "args"}
	for i := range n {
		progArgs = append(progArgs, fmt.Sprintf("/x%05d", i))
	}
	r = must(t, dir, "profile", progArgs...)
	if want := fmt.Sprintf("args %d last 7\n", n); r.stdout != want {
		t.Errorf("the program printed %q, want %q", r.stdout, want)
	}
	must(t, dir, "prep", "/nologo", "/M", name)
	tb := parseTab(t, must(t, dir, "plist", "/nologo", "/T", name).stdout)
	if tb.hits["f"] != uint64(n) {
		t.Errorf("f %d, want %d", tb.hits["f"], n)
	}
}

// TestProfileAgain profiles a program twice, with other arguments, each
// time from phase I on, as a user runs a wrapper or a make target again:
// the second report holds the second run alone (before, phase I discarded
// the first run's .pbt but PROFILE took its .pbo for a run not merged yet,
// and prep /M added both). The same with the three steps by hand.
func TestProfileAgain(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "faults")
	// The wrapper and profile.mk beside the tools, as make build puts them:
	// from the tools' directory where they are (SPROF_BIN: the arm64 VM,
	// which has no repository), else from scripts/.
	scripts := bin
	if _, err := os.Stat(filepath.Join(bin, "fcount")); err != nil {
		scripts = filepath.Join(testutil.Root(t), "scripts")
	}
	wbin := t.TempDir()
	for _, name := range []string{"prep", "profile", "plist", "profiler.ini"} {
		if err := os.Symlink(filepath.Join(bin, name), filepath.Join(wbin, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"fcount", "profile.mk"} {
		b, err := os.ReadFile(filepath.Join(scripts, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(wbin, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	shell := func(t *testing.T, dir, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PREP=", "PROFILE=", "PLIST=", "INIT=")
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr)
		}
		return string(out)
	}
	// f runs once per argument after "args": 3 calls, then 5.
	first, second := []string{"args", "a", "b", "c"}, []string{"args", "a", "b", "c", "d", "e"}
	ways := []struct {
		name string
		// run profiles the program in dir with args and returns the report.
		run func(t *testing.T, dir, name string, args []string) string
	}{
		{"fcount", func(t *testing.T, dir, name string, args []string) string {
			return shell(t, dir, filepath.Join(wbin, "fcount"), append([]string{"./" + name}, args...)...)
		}},
		{"make fcount", func(t *testing.T, dir, name string, args []string) string {
			testutil.MustHaveTool(t, "make")
			mk := fmt.Sprintf("PROFILE_PROG = ./%s\nPROFILE_ARGS = %s\nPROFILE_BIN = %s\nPROFILE_DEPS =\ninclude %s\n",
				name, strings.Join(args, " "), wbin, filepath.Join(wbin, "profile.mk"))
			if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644); err != nil {
				t.Fatal(err)
			}
			shell(t, dir, "make", "-s", "fcount")
			b, err := os.ReadFile(filepath.Join(dir, name+".fcount.txt"))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}},
		{"by hand", func(t *testing.T, dir, name string, args []string) string {
			must(t, dir, "prep", "/nologo", "/FC", name)
			must(t, dir, "profile", append([]string{"/nologo", name}, args...)...)
			must(t, dir, "prep", "/nologo", "/M", name)
			return must(t, dir, "plist", "/nologo", name).stdout
		}},
	}
	hitLine := regexp.MustCompile(`(?m)^ +(\d+) +[0-9.]+ f \(faults\.o\)$`)
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			dir := t.TempDir()
			name := install(t, prog, dir)
			for i, args := range [][]string{first, second} {
				report := w.run(t, dir, name, args)
				want := 2*i + 3
				m := hitLine.FindStringSubmatch(report)
				if lines := strings.Count(report, "Command line at"); m == nil || m[1] != fmt.Sprint(want) || lines != 1 {
					t.Errorf("run %d: f %v, %d command lines; want f %d and one command line\n%s", i+1, m, lines, want, report)
				}
				tb := parseTab(t, must(t, dir, "plist", "/nologo", "/T", name).stdout)
				if tb.hits["f"] != uint64(want) || len(tb.runs) != 1 || !strings.HasSuffix(tb.runs[0], strings.Join(args, " ")) {
					t.Errorf("run %d: plist /T: f %d, runs %q; want f %d and the run %q", i+1, tb.hits["f"], tb.runs, want, strings.Join(args, " "))
				}
			}
			// The run wrote over the first one's .pbo: no numbered file.
			if left, _ := filepath.Glob(filepath.Join(dir, name+".pbo.*")); len(left) != 0 {
				t.Errorf("run files left: %v", left)
			}
		})
	}
}
