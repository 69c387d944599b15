package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/cli"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// command is PROFILE for the tests of testutil.
var command = testutil.Command{Name: "profile", Env: "PROFILE", Banner: tool.Banner(), Run: run}

// runProfile runs the command in-process with env as the variable PROFILE.
func runProfile(t *testing.T, args []string, env string) (stdout, stderr string, status int) {
	t.Helper()
	return command.Exec(t, args, env)
}

func words(s string) []string { return strings.Fields(s) }

// parse parses a PROFILE command line with env as the variable PROFILE.
func parse(t *testing.T, args []string, env string) (*cli.Command[options], error) {
	t.Helper()
	return tool.Parse(args, func(string) string { return env }, nil)
}

func TestCommandLine(t *testing.T) {
	type want struct {
		o       options
		program string
		args    []string
		noLogo  bool
	}
	def := tool.Defaults()
	with := func(edit func(o *options)) options {
		o := tool.Defaults()
		edit(&o)
		return o
	}
	tests := []struct {
		name string
		args []string
		env  string
		want want
	}{
		{"default", words("prog"), "", want{o: def, program: "prog"}},
		{"A with E", words("/a /e errs.txt prog"), "", want{o: with(func(o *options) { o.appendErrors, o.errorFile = true, "errs.txt" }), program: "prog"}},
		{"A E long", words("--error-file=errs.txt --append prog"), "", want{o: with(func(o *options) { o.appendErrors, o.errorFile = true, "errs.txt" }), program: "prog"}},
		{"I O", words("/I dlllib /O dlllib dllhost"), "", want{o: with(func(o *options) { o.input, o.output = "dlllib", "dlllib" }), program: "dllhost"}},
		{"O long", words("--output named prog"), "", want{o: with(func(o *options) { o.output = "named" }), program: "prog"}},
		{"NC is accepted", words("/nc prog"), "", want{o: def, program: "prog"}},
		{"S", words("/s 10000 prog"), "", want{o: with(func(o *options) { o.sampleInterval = 10000 }), program: "prog"}},
		{"S long", words("--sample-interval=0 prog"), "", want{o: with(func(o *options) { o.sampleInterval = 0 }), program: "prog"}},
		{"X", words("/x exitcode"), "", want{o: with(func(o *options) { o.exitCode = true }), program: "exitcode"}},
		{"X long", words("--exit-code prog"), "", want{o: with(func(o *options) { o.exitCode = true }), program: "prog"}},
		{"explain", words("--explain prog"), "", want{o: with(func(o *options) { o.explain = true }), program: "prog"}},
		{"explain limit", words("--explain-limit=3 prog"), "", want{o: with(func(o *options) { o.explain, o.explainLimit = true, 3 }), program: "prog"}},
		{"explain limit 0", words("--explain --explain-limit 0 prog"), "", want{o: with(func(o *options) { o.explain, o.explainLimit = true, 0 }), program: "prog"}},
		{"no stacks", words("--no-stacks prog"), "", want{o: with(func(o *options) { o.noStacks = true }), program: "prog"}},
		{"user only", words("--user-only prog"), "", want{o: with(func(o *options) { o.userOnly = true }), program: "prog"}},
		{"TRACE", words("/tr prog"), "", want{o: with(func(o *options) { o.trace = true }), program: "prog"}},
		{"trace limit", words("--trace --trace-limit=0 prog"), "", want{o: with(func(o *options) { o.trace, o.traceLimit = true, 0 }), program: "prog"}},
		{"NOLOGO env", words("fcount"), "/nologo", want{o: def, program: "fcount", noLogo: true}},
		// args-profile: everything after the program is the program's.
		{"program arguments", []string{"/nologo", "args", "alpha", "beta gamma", "/x", "-y"}, "",
			want{o: def, program: "args", args: []string{"alpha", "beta gamma", "/x", "-y"}, noLogo: true}},
		{"program arguments untouched", []string{"prog", "@resp", "--", "", "--help", "/?", "-o", "x"}, "",
			want{o: def, program: "prog", args: []string{"@resp", "--", "", "--help", "/?", "-o", "x"}}},
		{"path program", words("/usr/bin/ls -l /tmp"), "", want{o: def, program: "/usr/bin/ls", args: []string{"-l", "/tmp"}}},
		{"end of options", words("/x -- -prog -x"), "", want{o: with(func(o *options) { o.exitCode = true }), program: "-prog", args: []string{"-x"}}},
		{"program in env", words("/x a"), "/nologo prog", want{o: def, program: "prog", args: []string{"/x", "a"}, noLogo: true}},
		{"trailing O is the program", words("/nologo /o"), "", want{o: def, program: "/o", noLogo: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parse(t, tt.args, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			got := want{o: c.Options, args: c.Args, noLogo: c.NoLogo}
			if len(c.Names) > 0 {
				got.program = c.Names[0]
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(want{}, options{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("profile %q (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestAppendWithoutErrorFile is profile-a-without-e: /A alone warns
// PRF4111 and the program still runs (here it fails for want of a .pbi).
func TestAppendWithoutErrorFile(t *testing.T) {
	w := "profile: warning PRF4111: no error file (/E) specified for /A option\n"
	for _, tt := range []struct {
		args    string
		warning bool
	}{
		{"/nologo /a fcount", true},
		{"--nologo --append fcount", true},
		{"/nologo /a /e errs.txt fcount", false},
		{"/nologo fcount /a", false}, // the program's /a
		{"/nologo /a /?", false},
	} {
		t.Run(tt.args, func(t *testing.T) {
			t.Chdir(t.TempDir())
			_, stderr, _ := runProfile(t, words(tt.args), "")
			if got := strings.HasPrefix(stderr, w); got != tt.warning {
				t.Errorf("profile %s: stderr %q, warning %v, want %v", tt.args, stderr, got, tt.warning)
			}
		})
	}
	if golden := testutil.OriginalText(t, "diag/profile-a-without-e.out"); !strings.HasSuffix(golden, "PROFILE : warning PRF4111: no error file (/E) specified for /A option\n") {
		t.Errorf("the original printed %q", golden)
	}
}

func TestDiagnostics(t *testing.T) {
	command.TestDiagnostics(t, []testutil.Diagnostic{
		{Name: "bad option", Args: words("/nologo /bogus fcount"),
			Want: "profile: fatal error PRF1102: bogus: invalid option", Golden: "diag/profile-bad-option.out"},
		{Name: "bad option after E", Args: words("/nologo /e errs3.txt /a /bogus"),
			Want: "profile: fatal error PRF1102: bogus: invalid option", Golden: "diag/profile-e-warning.out"},
		{Name: "empty argument", Args: []string{"/nologo", "/e", "", "prog"},
			Want: "profile: fatal error PRF1103: E option requires an additional argument"},
		{Name: "long option dash argument", Args: words("/nologo --input -x prog"),
			Want: "profile: fatal error PRF1103: --input option requires an additional argument"},
		{Name: "far too large", Args: words("/nologo /s 99999999999999999999999 prog"),
			Want: "profile: fatal error PRF1104: S option requires a numeric parameter"},
		{Name: "negative trace limit", Args: words("/nologo --trace-limit=-1 prog"),
			Want: "profile: fatal error PRF1104: --trace-limit option requires a numeric parameter"},
		{Name: "trace limit not a number", Args: words("/nologo --trace-limit=1G prog"),
			Want: "profile: fatal error PRF1104: --trace-limit option requires a numeric parameter"},
	})
}

// TestProfileBeforePrep runs PROFILE where PREP has not run: it says which
// file is missing and that prep writes it.
func TestProfileBeforePrep(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("prog", []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, stderr, status := runProfile(t, words("/nologo prog"), "")
	want := "profile: fatal error PRF1011: cannot open file prog.pbi: no such file or directory\n" +
		"profile: hint: prog.pbi is written by prep: run 'prep /FC prog' (or another profile type) first\n"
	if stderr != want || status != 1 {
		t.Errorf("status %d, stderr\n%s\nwant status 1, stderr\n%s", status, stderr, want)
	}
	if _, err := os.Stat("prog.pbo"); err == nil {
		t.Error("a .pbo was written")
	}
}

func TestUsage(t *testing.T) {
	command.TestUsage(t, []testutil.Usage{
		{Golden: "usage/profile-help-q.out", Args: "/?"},
		{Golden: "usage/profile-help-HELP.out", Args: "/HELP"},
		{Golden: "usage/profile-help-h.out", Args: "/h"},
		{Golden: "usage/profile-help-dash.out", Args: "-?"},
		{Golden: "usage/profile-noargs.out", Args: "", NoInput: true},
		{Golden: "usage/profile-nologo-noargs.out", Args: "/nologo", NoInput: true},
		{Golden: "usage/profile-nologo-help.out", Args: "/nologo /?"},
		// profile-no-program: options but no program print the usage.
		{Golden: "diag/profile-no-program.out", Args: "/nologo /o named", NoInput: true},
	})
}

func TestLongHelp(t *testing.T) { command.TestLongHelp(t) }

// FuzzCommandLine parses any PROFILE command line: it never panics, every
// error is a usage diagnostic, and without the variable and response files
// the program's arguments are the last arguments, as typed.
func FuzzCommandLine(f *testing.F) {
	for _, s := range []string{"", "prog", "/x\nprog\n-a\n/b", "/e\nerr\n/a\nprog", "--\n-x", "/s\n5", "/bogus"} {
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, line, env string) {
		c := testutil.ParseFuzzed(t, &tool, line, env)
		if c == nil {
			return
		}
		var args []string
		if line != "" {
			args = strings.Split(line, "\n")
		}
		if n := len(c.Args); strings.TrimSpace(env) == "" && n > 0 && (n > len(args) || !cmp.Equal(c.Args, args[len(args)-n:])) {
			t.Fatalf("args %q: program arguments %q are not a suffix", args, c.Args)
		}
	})
}

// TestTable checks the option table: every option reachable, with a Set
// and a help text.
func TestTable(t *testing.T) {
	if err := tool.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestSaveRun checks where PROFILE writes a run when prog.pbo exists: over
// it when its run was merged, into the .pbt or into one that phase I
// replaced (a wrapper run twice), or when it cannot be merged (another
// type, no run ID); beside it, in prog.pbo.2, when its run is pending.
func TestSaveRun(t *testing.T) {
	p := &datafile.Plan{
		Method: datafile.FuncCounting, StartIndex: -1, Calibration: -1,
		Modules: []datafile.Module{{Name: "prog", Path: "/opt/prog", Arch: "amd64", PIE: true}},
		Funcs:   []datafile.Func{{Name: "f", Source: "prog.o", Entry: 0x1100}},
	}
	p.ID = datafile.PlanID(p)
	run := func(hits uint64) *datafile.Counts {
		return &datafile.Counts{PlanID: p.ID, Method: p.Method, Run: datafile.Run{ID: datafile.NewRunID(), CommandLine: "prog"},
			Stats: datafile.Stats{Hits: []uint64{hits}}}
	}
	merged := func(runs ...*datafile.Counts) *datafile.Merged {
		m := datafile.NewMerged(p)
		for _, c := range runs {
			if err := m.Add(c); err != nil {
				t.Fatal(err)
			}
		}
		return m
	}
	old := run(5)
	rerun := datafile.NewMerged(p)
	rerun.Supersede(merged(old))
	otherType, noID := run(5), run(5)
	otherType.Method = datafile.FuncCoverage
	noID.Run.ID = nil
	tests := []struct {
		name string
		pbo  *datafile.Counts // prog.pbo before the run
		pbt  *datafile.Merged // prog.pbt, or nil for none
		want string
	}{
		{"merged", old, merged(old), "prog.pbo"},
		{"merged, then phase I again", old, rerun, "prog.pbo"},
		{"not merged", old, datafile.NewMerged(p), "prog.pbo.2"},
		{"not merged, then phase I again", run(3), rerun, "prog.pbo.2"},
		{"no database", old, nil, "prog.pbo.2"},
		{"another type", otherType, datafile.NewMerged(p), "prog.pbo"},
		{"no run id", noID, datafile.NewMerged(p), "prog.pbo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			if err := datafile.SaveCounts("prog.pbo", tt.pbo); err != nil {
				t.Fatal(err)
			}
			if tt.pbt != nil {
				if err := datafile.SaveMerged("prog.pbt", tt.pbt); err != nil {
					t.Fatal(err)
				}
			}
			var warnings []string
			c := run(6)
			got, err := saveRun("prog.pbo", c, func(d *prf.Diagnostic) { warnings = append(warnings, prf.Line("profile", d)) })
			if err != nil || got != tt.want {
				t.Fatalf("saveRun = %q, %v; want %q", got, err, tt.want)
			}
			if back, err := datafile.OpenCounts(got); err != nil || !bytes.Equal(back.Run.ID, c.Run.ID) {
				t.Errorf("%s does not hold the run: %v", got, err)
			}
			var want []string
			if tt.want != "prog.pbo" {
				want = []string{"profile: warning PRF4307: prog.pbo holds a run not merged yet: this run is written to prog.pbo.2"}
			}
			if d := cmp.Diff(want, warnings); d != "" {
				t.Errorf("warnings (-want +got):\n%s", d)
			}
		})
	}
}

// TestWorkingDirGone runs PROFILE in a directory removed since: PRF1647
// with its hint (before, "fatal error: getwd: ..." without a number), and
// the program does not run.
func TestWorkingDirGone(t *testing.T) {
	keep := t.TempDir()
	p := &datafile.Plan{Method: datafile.FuncCounting, StartIndex: -1, Calibration: -1,
		Modules: []datafile.Module{{Name: "true", Path: "/bin/true", Arch: "amd64"}}}
	p.ID = datafile.PlanID(p)
	pbi, pbo := filepath.Join(keep, "true.pbi"), filepath.Join(keep, "true.pbo")
	if err := datafile.SavePlan(pbi, p); err != nil {
		t.Fatal(err)
	}
	gone := t.TempDir()
	t.Chdir(gone)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	_, stderr, status := runProfile(t, []string{"/nologo", "/I", pbi, "/O", pbo, "/bin/true"}, "")
	want := "profile: fatal error PRF1647: cannot find the current directory: "
	hint := "profile: hint: it was removed, or a directory above it cannot be read: change to an existing directory and run again\n"
	if !strings.HasPrefix(stderr, want) || !strings.HasSuffix(stderr, hint) || status != 1 {
		t.Errorf("status %d, stderr\n%s\nwant status 1, stderr beginning\n%s", status, stderr, want)
	}
	if _, err := os.Stat(pbo); err == nil {
		t.Error("a .pbo was written")
	}
}

// TestSampleInterval checks /S: microseconds, for sampling profiles only
// (PRF4677 for the others), between PROFILE's bounds (PRF1464).
func TestSampleInterval(t *testing.T) {
	for _, tt := range []struct {
		us     int
		method datafile.Method
		want   time.Duration
		diag   int // the number warned or refused with, or 0
	}{
		{-1, datafile.FuncSampling, 0, 0},
		{1000, datafile.FuncSampling, time.Millisecond, 0},
		{250, datafile.FuncSampling, 250 * time.Microsecond, 0},
		{10000, datafile.FuncCounting, 0, 4677},
		{50, datafile.FuncSampling, 0, 1464},
		{2000000, datafile.FuncSampling, 0, 1464},
	} {
		var warned []*prf.Diagnostic
		got, err := sampleInterval(tt.us, tt.method, func(d *prf.Diagnostic) { warned = append(warned, d) })
		num := 0
		var d *prf.Diagnostic
		switch {
		case errors.As(err, &d):
			num = d.Code
		case len(warned) == 1:
			num = warned[0].Code
		}
		if got != tt.want || num != tt.diag {
			t.Errorf("/S %d for %s: %v, PRF%d (%v); want %v, PRF%d", tt.us, tt.method, got, num, err, tt.want, tt.diag)
		}
	}
}
