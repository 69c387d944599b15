package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// command is PREP for the tests of testutil.
var command = testutil.Command{Name: "prep", Env: "PREP", Banner: tool.Banner(), Run: run}

// words splits a test command line on spaces.
func words(s string) []string { return strings.Fields(s) }

// splitArgs and joinArgs convert between arguments and a fuzz input, one
// argument a line, so that arguments may hold spaces or be empty.
func splitArgs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func joinArgs(args []string) string { return strings.Join(args, "\n") }

// testOriginalLine is the first line of an output of the original, in the
// form prep prints it.
func testOriginalLine(t *testing.T, name string) string {
	t.Helper()
	return testutil.OriginalLine(t, name)
}

// diagnostics are PREP command lines that fail before doing anything.
var diagnostics = []testutil.Diagnostic{
	{Name: "slash only", Args: words("/nologo / fcount"),
		Want: "prep: fatal error PRF1101: missing option specifier", Golden: "diag/prep-slash-only.out"},
	{Name: "bad option", Args: words("/nologo /bogus fcount"),
		Want: "prep: fatal error PRF1102: bogus: invalid option", Golden: "diag/prep-bad-option.out"},
	{Name: "bad option before nologo", Args: words("/bogus /nologo fcount"), Banner: true,
		Want: "prep: fatal error PRF1102: bogus: invalid option", Golden: "diag/prep-bad-option-banner.out"},
	{Name: "glued OI", Args: words("/nologo /om /fc /OIglued fcount"),
		Want: "prep: fatal error PRF1102: OIglued: invalid option", Golden: "diag/prep-glued-oi.out"},
	{Name: "argument is an option", Args: words("/oi /fc prog"), Banner: true,
		Want: "prep: fatal error PRF1103: OI option requires an additional argument"},
	{Name: "nonnumeric STACK", Args: words("/nologo /om /fc /at /stack x fcount"),
		Want: "prep: fatal error PRF1104: STACK option requires a numeric parameter", Golden: "diag/prep-nonnumeric-stack.out"},
	{Name: "nonnumeric CB", Args: words("/nologo /om /ft /cb abc fcount"),
		Want: "prep: fatal error PRF1104: CB option requires a numeric parameter", Golden: "diag/prep-nonnumeric-cb.out"},
	{Name: "IO 9 times", Args: words("/nologo /it fcount" + strings.Repeat(" /io fcount", 9) + " /ot nine"),
		Want: "prep: fatal error PRF1105: IO option specified more than 8 times", Golden: "diag/prep-io-9-times.out"},
	{Name: "IO and input-pbo count together", Args: words("/nologo /it f" + strings.Repeat(" /io x", 4) + strings.Repeat(" --input-pbo=y", 5) + " /ot o"),
		Want: "prep: fatal error PRF1105: --input-pbo option specified more than 8 times"},
	{Name: "at only", Args: words("@"), Banner: true,
		Want: "prep: fatal error PRF1201: missing filename after @", Golden: "diag/prep-at-only.out"},
	{Name: "response file missing", Args: words("@nosuch.rsp"), Banner: true,
		Want: "prep: fatal error PRF1011: cannot open file nosuch.rsp: no such file or directory", Golden: "diag/prep-response-file.out"},
	{Name: "nologo only", Args: words("/nologo"),
		Want: "prep: fatal error PRF1421: no input specified", Golden: "usage/prep-nologo-noargs.out"},
	{Name: "no input", Args: words("/nologo /om /fc"),
		Want: "prep: fatal error PRF1421: no input specified", Golden: "diag/prep-no-input.out"},
	{Name: "no input, nologo in env", Args: words("/fc"), Env: "/nologo",
		Want: "prep: fatal error PRF1421: no input specified"},
	{Name: "9 modules", Args: words("a b c d e f g h i"), Banner: true,
		Want: "prep: fatal error PRF1423: number of modules exceeds 8"},
	{Name: "IT without OT", Args: words("/nologo /it fcount /io fcount"),
		Want: "prep: fatal error PRF1461: no PBT output file specified", Golden: "diag/prep-it-no-ot.out"},
	{Name: "IO without IT", Args: words("/nologo /io fcount /ot x"),
		Want: "prep: fatal error PRF1462: no PBT input file specified", Golden: "diag/prep-io-no-it.out"},
}

// TestDiagnostics runs PREP on bad command lines: each prints the
// diagnostic and a hint to try --help, and exits with status 2.
func TestDiagnostics(t *testing.T) { command.TestDiagnostics(t, diagnostics) }

// TestUsage compares the usage text with the original's for every way of
// asking for it.
func TestUsage(t *testing.T) {
	command.TestUsage(t, []testutil.Usage{
		{Golden: "usage/prep-help-q.out", Args: "/?"},
		{Golden: "usage/prep-help-HELP.out", Args: "/HELP"},
		{Golden: "usage/prep-help-h.out", Args: "/h"},
		{Golden: "usage/prep-help-dash.out", Args: "-?"},
		{Golden: "usage/prep-noargs.out", Args: "", NoInput: true},
		{Golden: "usage/prep-nologo-help.out", Args: "/nologo /?"},
	})
}

// TestLongHelp pins the --help text.
func TestLongHelp(t *testing.T) { command.TestLongHelp(t) }

// TestTable checks the option table: every option reachable, with a Set
// and a help text.
func TestTable(t *testing.T) {
	if err := tool.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestMergeAfterPrepAgain runs prep /M where phase I replaced the .pbt
// that held the run of prog.pbo (a wrapper run twice, or the three steps
// by hand): that run is not merged again, and prep /M says why; a run
// profiled since, in prog.pbo.2, is merged alone; /IT /IO /OT still adds
// the discarded run when asked to, as the original did.
func TestMergeAfterPrepAgain(t *testing.T) {
	t.Chdir(t.TempDir())
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
	old := datafile.NewMerged(p)
	first := run(5)
	if err := old.Add(first); err != nil {
		t.Fatal(err)
	}
	fresh := datafile.NewMerged(p)
	fresh.Supersede(old)
	for _, err := range []error{datafile.SaveCounts("prog.pbo", first), datafile.SaveMerged("prog.pbt", fresh)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	_, stderr, status := command.Exec(t, words("/nologo /M prog"), "")
	want := "prep: fatal error PRF1309: the run in prog.pbo was discarded when prog.pbt was prepared again: it is not merged\n" +
		"prep: hint: run profile again for a new run; to add this one all the same: prep /IT prog.pbt /IO prog.pbo /OT prog.pbt\n"
	if stderr != want || status != 1 {
		t.Errorf("prep /M: status %d, stderr\n%s\nwant status 1, stderr\n%s", status, stderr, want)
	}
	hits := func() (uint64, int) {
		t.Helper()
		m, err := datafile.OpenMerged("prog.pbt")
		if err != nil {
			t.Fatal(err)
		}
		return m.Stats.Hits[0], len(m.Runs)
	}
	if h, n := hits(); h != 0 || n != 0 {
		t.Errorf("after the refused merge: f %d, %d runs; want 0, 0", h, n)
	}
	// A new run beside it: merged alone.
	if err := datafile.SaveCounts("prog.pbo.2", run(6)); err != nil {
		t.Fatal(err)
	}
	if _, stderr, status := command.Exec(t, words("/nologo /M prog"), ""); status != 0 {
		t.Fatalf("prep /M with a new run: status %d, stderr %s", status, stderr)
	}
	if h, n := hits(); h != 6 || n != 1 {
		t.Errorf("after the merge of the new run: f %d, %d runs; want 6, 1", h, n)
	}
	// The discarded run, asked for by name.
	if _, stderr, status := command.Exec(t, words("/nologo /IT prog /IO prog /OT prog"), ""); status != 0 {
		t.Fatalf("prep /IT /IO /OT: status %d, stderr %s", status, stderr)
	}
	if h, n := hits(); h != 11 || n != 2 {
		t.Errorf("after the merge asked for: f %d, %d runs; want 11, 2", h, n)
	}
}

// TestMergeRunOfOtherPlan runs prep /M where prog.pbo.2, a file PROFILE
// wrote to keep a run for prep /M, holds a run of another preparation of
// the program (one phase I left there before it cleared such files):
// PRF1306, whose hint says to remove the file. Profiling again, which
// the hint of prog.pbo says, would write prog.pbo.3 beside it and fail
// the same way.
func TestMergeRunOfOtherPlan(t *testing.T) {
	t.Chdir(t.TempDir())
	plan := func(m datafile.Method) *datafile.Plan {
		p := &datafile.Plan{
			Method: m, StartIndex: -1, Calibration: -1,
			Modules: []datafile.Module{{Name: "prog", Path: "/opt/prog", Arch: "amd64", PIE: true}},
			Funcs:   []datafile.Func{{Name: "f", Source: "prog.o", Entry: 0x1100}},
		}
		p.ID = datafile.PlanID(p)
		return p
	}
	counting, timing := plan(datafile.FuncCounting), plan(datafile.FuncTiming)
	run := &datafile.Counts{PlanID: counting.ID, Method: counting.Method, Run: datafile.Run{ID: datafile.NewRunID(), CommandLine: "prog"},
		Stats: datafile.Stats{Hits: []uint64{3}}}
	timed := &datafile.Counts{PlanID: timing.ID, Method: timing.Method, Run: datafile.Run{ID: datafile.NewRunID(), CommandLine: "prog"},
		Stats: datafile.Stats{Hits: []uint64{3}, FuncTime: []int64{5}, ChildTime: []int64{5}}}
	for _, err := range []error{datafile.SaveMerged("prog.pbt", datafile.NewMerged(timing)), datafile.SaveCounts("prog.pbo", timed), datafile.SaveCounts("prog.pbo.2", run)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	_, stderr, status := command.Exec(t, words("/nologo /M prog"), "")
	want := "prep: fatal error PRF1306: PBT or PBO file prog.pbo.2 is not derived from same PBI file: merge: not derived from the same plan: counts of plan " + counting.ID.String() + ", not the database's\n" +
		"prep: hint: its run is of another preparation of the program, which prep /M cannot add: remove prog.pbo.2 and merge again\n"
	if stderr != want || status != 1 {
		t.Errorf("prep /M: status %d, stderr\n%s\nwant status 1, stderr\n%s", status, stderr, want)
	}
}

// TestFatalErrorsNumbered runs PREP where it used to print "fatal error:"
// without a number: each failure has its number and a hint.
func TestFatalErrorsNumbered(t *testing.T) {
	p := &datafile.Plan{
		Method: datafile.FuncCounting, StartIndex: -1, Calibration: -1,
		Modules: []datafile.Module{{Name: "prog", Path: "/opt/prog", Arch: "amd64", PIE: true}},
		Funcs:   []datafile.Func{{Name: "f", Source: "prog.o", Entry: 0x1100}},
	}
	p.ID = datafile.PlanID(p)
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		args  string
		env   map[string]string
		want  string // the first line
		hint  string
	}{
		{
			name: "current directory removed",
			setup: func(t *testing.T, dir string) {
				if err := os.Remove(dir); err != nil {
					t.Fatal(err)
				}
			},
			args: "/nologo /FC prog",
			want: "prep: fatal error PRF1647: cannot find the current directory: ",
			hint: "prep: hint: it was removed, or a directory above it cannot be read: change to an existing directory and run again\n",
		},
		{
			name: "malformed tools.ini",
			setup: func(t *testing.T, dir string) {
				if err := os.WriteFile(filepath.Join(dir, "tools.ini"), []byte("[profiler]\nexclud:main\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			args: "/nologo /FC prog",
			want: "prep: fatal error PRF1648: cannot read the selections of {DIR}/tools.ini: line 2: \"exclud:main\" is not an include: or exclude: directive\n",
			hint: "prep: hint: its [profiler] section holds lines 'exclude:SPEC' and 'include:SPEC'",
		},
		{
			name: "sums overflow",
			setup: func(t *testing.T, dir string) {
				m := datafile.NewMerged(p)
				m.Stats.Hits[0] = math.MaxUint64
				c := &datafile.Counts{PlanID: p.ID, Method: p.Method, Run: datafile.Run{ID: datafile.NewRunID()}, Stats: datafile.Stats{Hits: []uint64{1}}}
				for _, err := range []error{datafile.SaveMerged("prog.pbt", m), datafile.SaveCounts("prog.pbo", c)} {
					if err != nil {
						t.Fatal(err)
					}
				}
			},
			args: "/nologo /M prog",
			want: "prep: fatal error PRF1650: the counts of prog.pbo cannot be added to prog.pbt: merge: hits of item 0: sum overflows\n",
			hint: "prep: hint: prog.pbt holds too much to add more: merge into another database (prep /IT prog.pbt /IO prog.pbo /OT OTHER), or prepare the program again for an empty one\n",
		},
		{
			name: "output in a missing directory",
			setup: func(t *testing.T, dir string) {
				if err := datafile.SaveMerged("prog.pbt", datafile.NewMerged(p)); err != nil {
					t.Fatal(err)
				}
			},
			args: "/nologo /IT prog /OT nosuchdir/out",
			want: "prep: fatal error PRF1013: cannot write expected number of bytes to file nosuchdir/out.pbt: lock nosuchdir: open nosuchdir: no such file or directory\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			t.Setenv("INIT", "")
			tt.setup(t, dir)
			_, stderr, status := command.Exec(t, words(tt.args), "")
			want := strings.ReplaceAll(tt.want, "{DIR}", dir)
			if !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, tt.hint) || status != 1 {
				t.Errorf("prep %s: status %d, stderr\n%s\nwant status 1, stderr beginning\n%s\nwith\n%s", tt.args, status, stderr, want, tt.hint)
			}
		})
	}
}
