package main

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/cli"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
	"github.com/sourceprofiler/sprof/plist"
)

// command is PLIST for the tests of testutil.
var command = testutil.Command{Name: "plist", Env: "PLIST", Banner: tool.Banner(), Run: run}

// runPlist runs the command in-process with env as the variable PLIST.
func runPlist(t *testing.T, args []string, env string) (stdout, stderr string, status int) {
	t.Helper()
	return command.Exec(t, args, env)
}

func words(s string) []string { return strings.Fields(s) }

func TestCommandLine(t *testing.T) {
	with := func(edit func(o *plist.Options)) options {
		o := tool.Defaults()
		edit(&o.report)
		return o
	}
	withCmd := func(edit func(o *options)) options {
		o := tool.Defaults()
		edit(&o)
		return o
	}
	sort := func(s plist.Sort) options { return with(func(o *plist.Options) { o.Sort = s }) }
	tests := []struct {
		name string
		args string
		env  string
		want options
	}{
		{"default", "fcount", "", tool.Defaults()},
		{"C", "/c 10 fcount", "", with(func(o *plist.Options) { o.MinCount = 10 })},
		{"C long", "--count=3 fcount", "", with(func(o *plist.Options) { o.MinCount = 3 })},
		// plist-c-missing-arg: a trailing /C is a second input, ignored.
		{"C trailing", "/nologo fcount /c", "", tool.Defaults()},
		{"D", "/d srcdir /D /usr/src/x --source-dir=a,b --source-dir /tmp fcount", "", with(func(o *plist.Options) {
			o.SourceDirs = []string{"srcdir", "/usr/src/x", "a,b", "/tmp"}
		})},
		{"F", "/f fcount", "", with(func(o *plist.Options) { o.FullPaths = true })},
		{"L long", "--mangled fcount", "", with(func(o *plist.Options) { o.Mangled = true })},
		// original.md §5.5.4: /PL 0 to 16 act as 16.
		{"PL 0", "/pl 0 fcount", "", with(func(o *plist.Options) { o.PageLength = 16 })},
		{"PL long", "--page-length=255 fcount", "", with(func(o *plist.Options) { o.PageLength = 255 })},
		{"PW", "/PW 20 fcount", "", with(func(o *plist.Options) { o.PageWidth, o.PageWidthGiven = 20, true })},
		{"PW 0", "/pw 0 fcount", "", with(func(o *plist.Options) { o.PageWidthGiven = true })},
		{"SC", "/sc fcount", "", sort(plist.SortCount)},
		{"SL", "/sl fcount", "", sort(plist.SortLine)},
		{"SLS", "/SLS fcount", "", sort(plist.SortLineSummary)},
		{"SN upper", "/NOLOGO /SN fcount", "", sort(plist.SortName)},
		{"SNS", "/sns fcount", "", sort(plist.SortNameSummary)},
		{"ST", "/st fcount", "", sort(plist.SortTime)},
		{"STC", "/stc fcount", "", sort(plist.SortChildTime)},
		{"sort long", "--sort=child-time fcount", "", sort(plist.SortChildTime)},
		{"sort long, line summary", "--sort=line-summary fcount", "", sort(plist.SortLineSummary)},
		{"T", "/t fcount", "", with(func(o *plist.Options) { o.Tab = true })},
		{"TRACE TR", "/tr fcount", "", withCmd(func(o *options) { o.trace = true })},
		{"FLAT", "/flat fcount", "", with(func(o *plist.Options) { o.Flat = true })},
		{"FLAT then INDENT", "/flat /indent fcount", "", tool.Defaults()},
		{"INDENT then FLAT", "--indent /flat fcount", "", with(func(o *plist.Options) { o.Flat = true })},
		{"TAB", "/tab 8 fcount", "", with(func(o *plist.Options) { o.TabWidth = 8 })},
		{"TAB zero", "/tab 0 fcount", "", with(func(o *plist.Options) { o.TabWidth = 0 })},
		{"env", "fcount", "/sn /nologo", sort(plist.SortName)},
		{"dump after options", "/nologo --dump a.pbi", "", withCmd(func(o *options) { o.dump = true })},
		{"format and output", "--format=lcov -o x.info fcount", "", withCmd(func(o *options) { o.format, o.output = "lcov", "x.info" })},
		{"O short", "/o x.json --format json fcount", "", withCmd(func(o *options) { o.format, o.output = "json", "x.json" })},
		{"fail-under", "--fail-under=80 fcount", "", withCmd(func(o *options) { o.failUnder = 80 })},
		{"diff-base", "--diff-base old fcount", "", withCmd(func(o *options) { o.diffBase = "old" })},
		{"time", "--time=cpu fcount", "", withCmd(func(o *options) { o.timeView = "cpu" })},
		{"time, the rightmost", "--time cpu --ti=elapsed fcount", "", withCmd(func(o *options) { o.timeView = "elapsed" })},
		{"long options cut short", "--form=lcov --fail 5 --out x --nolo fcount", "", withCmd(func(o *options) {
			o.format, o.failUnder, o.output = "lcov", 5, "x"
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tool.Parse(words(tt.args), func(string) string { return tt.env }, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, c.Options, cmp.AllowUnexported(options{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plist %s (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestSortOverride is plist-sort-override: the second sort option wins with
// PRF4101, also against the environment variable's.
func TestSortOverride(t *testing.T) {
	var warnings []string
	c, err := tool.Parse(words("/nologo /sn /sc fcount"), nil, func(d *prf.Diagnostic) { warnings = append(warnings, prf.Line("plist", d)) })
	if err != nil || c.Options.report.Sort != plist.SortCount {
		t.Fatalf("sort %v, %v", c.Options.report.Sort, err)
	}
	golden := testutil.OriginalLine(t, "diag/plist-sort-override.out")
	if len(warnings) != 1 || warnings[0] != golden {
		t.Errorf("warnings %q, the original printed %q", warnings, golden)
	}
}

func TestDiagnostics(t *testing.T) {
	command.TestDiagnostics(t, []testutil.Diagnostic{
		{Name: "bad option", Args: words("/nologo /bogus fcount"),
			Want: "plist: fatal error PRF1102: bogus: invalid option", Golden: "diag/plist-bad-option.out"},
		{Name: "glued C", Args: words("/nologo /c5 fcount"),
			Want: "plist: fatal error PRF1102: c5: invalid option", Golden: "diag/plist-c-glued.out"},
		{Name: "bad sort key", Args: words("/nologo --sort=bogus fcount"),
			Want: "plist: fatal error PRF1102: --sort=bogus: invalid option"},
		{Name: "PL minus one", Args: words("/nologo /pl -1 fcount"),
			Want: "plist: fatal error PRF1103: PL option requires an additional argument", Golden: "diag/plist-pl-1.out"},
		{Name: "argument is root", Args: words("/nologo /d / fcount"),
			Want: "plist: fatal error PRF1103: D option requires an additional argument"},
		{Name: "nonnumeric C", Args: words("/nologo /c x fcount"),
			Want: "plist: fatal error PRF1104: C option requires a numeric parameter", Golden: "diag/plist-c-nonnumeric.out"},
		{Name: "error in env", Args: words("fcount"), Env: "/nologo /c5",
			Want: "plist: fatal error PRF1102: c5: invalid option"},
		{Name: "ambiguous long option", Args: words("/nologo --f lcov fcount"),
			Want: "plist: fatal error PRF1102: --f: invalid option: ambiguous option, could be --fail-under, --flat, --format or --full-paths"},
		{Name: "dump without files", Args: words("/nologo --dump"),
			Want: "plist: fatal error PRF1421: no input specified"},
	})
}

func TestUsage(t *testing.T) {
	command.TestUsage(t, []testutil.Usage{
		{Golden: "usage/plist-help-q.out", Args: "/?"},
		{Golden: "usage/plist-help-HELP.out", Args: "/HELP"},
		{Golden: "usage/plist-help-h.out", Args: "/h"},
		{Golden: "usage/plist-help-dash.out", Args: "-?"},
		{Golden: "usage/plist-noargs.out", Args: "", NoInput: true},
		{Golden: "usage/plist-nologo-noargs.out", Args: "/nologo", NoInput: true},
		{Golden: "usage/plist-nologo-help.out", Args: "/nologo /?"},
		// plist-no-input: options but no input print the usage.
		{Golden: "diag/plist-no-input.out", Args: "/nologo /t", NoInput: true},
	})
}

func TestLongHelp(t *testing.T) { command.TestLongHelp(t) }

// TestExitStatusDocumented: --help and the man page list the exit status
// of a coverage below --fail-under.
func TestExitStatusDocumented(t *testing.T) {
	status := strconv.Itoa(gateStatus) + " coverage below --fail-under"
	help, _, _ := runPlist(t, []string{"--help"}, "")
	if !strings.Contains(strings.ReplaceAll(help, "\n", " "), "Exit status: 0 success, 1 fatal error, 2 invalid command line, "+status) {
		t.Errorf("--help does not list exit status %s:\n%s", status, help)
	}
	man, _, _ := runPlist(t, []string{"--man"}, "")
	if !strings.Contains(man, ".SH EXIT STATUS\n0 success, 1 fatal error, 2 invalid command line, "+strings.ReplaceAll(status, "-", `\-`)) {
		t.Errorf("--man does not list exit status %s:\n%s", status, man)
	}
}

// TestUnknownFormat asks for a format PLIST does not write, before the
// input is read: PRF1102 with the formats there are, from plist's table,
// each of which --help names too.
func TestUnknownFormat(t *testing.T) {
	t.Chdir(t.TempDir())
	names := plist.FormatNames()
	if len(names) < 9 || !slices.Contains(names, "lcov") || !slices.Contains(names, "chrome") {
		t.Fatalf("formats %q", names)
	}
	for _, format := range []string{"bogus", "LCOVX", ""} {
		stdout, stderr, status := runPlist(t, []string{"/nologo", "--format=" + format + "x", "nosuch"}, "")
		want := "plist: fatal error PRF1102: --format=" + format + "x: invalid option\n" +
			"plist: hint: the formats are " + strings.Join(names, ", ") + "\n"
		if status != 2 || stdout != "" || stderr != want {
			t.Errorf("--format=%sx: status %d, stdout %q, stderr\n%s\nwant status 2, stderr\n%s", format, status, stdout, stderr, want)
		}
	}
	help, _, _ := runPlist(t, []string{"--help"}, "")
	_, foot, _ := strings.Cut(help, "--format's NAME")
	for _, name := range names {
		if _, err := plist.ParseFormat(name); err != nil {
			t.Errorf("format %s: %v", name, err)
		}
		if !regexp.MustCompile(`\b` + name + `\b`).MatchString(foot) {
			t.Errorf("--help does not name the format %s after \"--format's NAME\":\n%s", name, help)
		}
	}
}

// testPlan is a plan of two functions, f and g.
func testPlan() *datafile.Plan {
	p := &datafile.Plan{
		Method: datafile.FuncCounting, StartIndex: -1, Calibration: -1,
		Modules: []datafile.Module{{Name: "prog", Path: "/opt/prog", Arch: "amd64", PIE: true}},
		Funcs: []datafile.Func{
			{Name: "f", Source: "prog.o", Entry: 0x1100},
			{Name: "g", Source: "prog.o", Entry: 0x1200},
		},
	}
	p.ID = datafile.PlanID(p)
	return p
}

// testRun is a run of testPlan in which f ran 1000 times and g 7.
func testRun(p *datafile.Plan) *datafile.Counts {
	return &datafile.Counts{
		PlanID: p.ID, Method: p.Method,
		Run:   datafile.Run{ID: datafile.NewRunID(), Time: 1700000000, CommandLine: "prog"},
		Stats: datafile.Stats{Hits: []uint64{1000, 7}},
	}
}

// writeProfile writes fcount.pbt holding the runs given, in the current
// directory, and returns the database.
func writeProfile(t *testing.T, name string, runs ...*datafile.Counts) *datafile.Merged {
	t.Helper()
	m := datafile.NewMerged(testPlan())
	for _, c := range runs {
		if err := m.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := datafile.SaveMerged(name, m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestInputInAnotherCase lists FCOUNT.PBT, Fcount and fcount.PBT when the
// file on disk is fcount.pbt, as the original's users on Windows typed the
// names (docs/linux.md).
func TestInputInAnotherCase(t *testing.T) {
	t.Chdir(t.TempDir())
	p := testPlan()
	writeProfile(t, "fcount.pbt", testRun(p))
	for _, name := range []string{"fcount", "FCOUNT.PBT", "Fcount", "fcount.PBT"} {
		stdout, stderr, status := runPlist(t, []string{"/nologo", "/t", name}, "")
		if status != 0 || !strings.Contains(stdout, "\t1000\t") || stderr != "" {
			t.Errorf("plist /t %s: status %d, stderr %q, stdout\n%s", name, status, stderr, stdout)
		}
	}
	_, stderr, status := runPlist(t, words("/nologo nosuch"), "")
	if want := "plist: fatal error PRF1011: cannot open file nosuch.pbt: no such file or directory\n"; stderr != want || status != 1 {
		t.Errorf("plist nosuch: status %d, stderr %q, want 1, %q", status, stderr, want)
	}
}

// TestDumpAfterOptions prints data files in text form with --dump anywhere
// on the command line.
func TestDumpAfterOptions(t *testing.T) {
	t.Chdir(t.TempDir())
	p := testPlan()
	writeProfile(t, "fcount.pbt", testRun(p))
	for _, args := range []string{"--dump fcount.pbt", "/nologo --dump fcount.pbt", "/nologo /sc --dump FCOUNT.PBT", "--nologo fcount.pbt --dump"} {
		stdout, _, status := runPlist(t, words(args), "")
		if status != 0 || !strings.Contains(stdout, `"Merged"`) || !strings.Contains(stdout, `"Name": "g"`) {
			t.Errorf("plist %s: status %d, stdout\n%s", args, status, stdout)
		}
	}
	if err := os.WriteFile("prog.c", []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, status := runPlist(t, words("/nologo --dump prog.c"), "")
	if !strings.HasPrefix(stderr, "plist: fatal error PRF1301: file prog.c has an incorrect (old) signature") || status != 1 {
		t.Errorf("plist --dump prog.c: status %d, stderr %q", status, stderr)
	}
}

// TestMergeMissing warns when the .pbo beside the .pbt holds a run the .pbt
// does not, and only then.
func TestMergeMissing(t *testing.T) {
	t.Chdir(t.TempDir())
	p := testPlan()
	first := testRun(p)
	writeProfile(t, "fcount.pbt", first)
	old := time.Now().Add(-time.Hour)
	warning := "plist: warning PRF4482: fcount.pbo holds a run that fcount.pbt does not: this report leaves it out\n" +
		"plist: hint: run 'prep /M fcount' to add it\n"

	// The .pbo of the merged run: nothing to say.
	if err := datafile.SaveCounts("fcount.pbo", first); err != nil {
		t.Fatal(err)
	}
	if _, stderr, _ := runPlist(t, words("/nologo fcount"), ""); stderr != "" {
		t.Errorf("merged run: stderr %q", stderr)
	}
	// A new run, not merged.
	if err := datafile.SaveCounts("fcount.pbo", testRun(p)); err != nil {
		t.Fatal(err)
	}
	if _, stderr, status := runPlist(t, words("/nologo fcount"), ""); stderr != warning || status != 0 {
		t.Errorf("new run: status %d, stderr\n%s\nwant\n%s", status, stderr, warning)
	}
	// The same, but the .pbo is older than the .pbt: not read.
	if err := os.Chtimes("fcount.pbo", old, old); err != nil {
		t.Fatal(err)
	}
	if _, stderr, _ := runPlist(t, words("/nologo fcount"), ""); stderr != "" {
		t.Errorf("older .pbo: stderr %q", stderr)
	}
	// A .pbo of another plan (the program was prepared again): merging it
	// would fail, so no warning.
	other := testPlan()
	other.Funcs = other.Funcs[:1]
	other.ID = datafile.PlanID(other)
	c := &datafile.Counts{PlanID: other.ID, Method: other.Method, Run: datafile.Run{ID: datafile.NewRunID()}, Stats: datafile.Stats{Hits: []uint64{1}}}
	if err := datafile.SaveCounts("fcount.pbo", c); err != nil {
		t.Fatal(err)
	}
	if _, stderr, _ := runPlist(t, words("/nologo fcount"), ""); stderr != "" {
		t.Errorf("other plan: stderr %q", stderr)
	}
	// The .pbo of a run merged into a .pbt that phase I replaced (prep
	// /FC again, as a wrapper does): its run was discarded on purpose, not
	// left unmerged, even with the .pbo newer than the new .pbt.
	fresh := datafile.NewMerged(p)
	fresh.Supersede(writeProfile(t, "fcount.pbt", first))
	if err := datafile.SaveMerged("fcount.pbt", fresh); err != nil {
		t.Fatal(err)
	}
	if err := datafile.SaveCounts("fcount.pbo", first); err != nil {
		t.Fatal(err)
	}
	if _, stderr, _ := runPlist(t, words("/nologo fcount"), ""); stderr != "" {
		t.Errorf("run of the replaced database: stderr %q", stderr)
	}
	// A run of the same plan but another type (prepared for coverage
	// since): merging it would fail, so no warning.
	c = testRun(p)
	c.Method = datafile.FuncCoverage
	if err := datafile.SaveCounts("fcount.pbo", c); err != nil {
		t.Fatal(err)
	}
	if _, stderr, _ := runPlist(t, words("/nologo fcount"), ""); stderr != "" {
		t.Errorf("other type: stderr %q", stderr)
	}
}

// FuzzCommandLine parses any PLIST command line: it never panics and every
// error is a usage diagnostic.
func FuzzCommandLine(f *testing.F) {
	for _, s := range []string{"", "fcount", "/sc\n/sn\nx", "/pl\n-1\nx", "--sort=name\nx", "/c5", "--dump\na\nb"} {
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, line, env string) {
		c := testutil.ParseFuzzed(t, &tool, line, env)
		if c == nil {
			return
		}
		o := c.Options.report
		if o.MinCount < 0 || (o.PageLength != 0 && o.PageLength < 16) || o.PageWidth < 0 || o.TabWidth < 0 || c.Help > cli.LongHelp {
			t.Fatalf("line %q: invalid options %+v", line, o)
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

// fullWriter is standard output on a full disk.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// TestStdoutFull writes a report and a dump to a standard output that
// fails: PRF1013 naming standard output, with the hint, exit status 1
// (before, "fatal error:" without a number).
func TestStdoutFull(t *testing.T) {
	t.Chdir(t.TempDir())
	writeProfile(t, "fcount.pbt", testRun(testPlan()))
	want := "plist: fatal error PRF1013: cannot write expected number of bytes to file standard output: no space left on device\n" +
		"plist: hint: the file system is full, or your disk quota used up: make room, then run again\n"
	for _, args := range []string{"/nologo fcount", "/nologo /T fcount", "--nologo --format=json fcount", "--nologo --dump fcount.pbt"} {
		var stderr bytes.Buffer
		status := run(words(args), fullWriter{}, &stderr)
		if stderr.String() != want || status != 1 {
			t.Errorf("plist %s: status %d, stderr\n%s\nwant status 1, stderr\n%s", args, status, stderr.String(), want)
		}
	}
}

// TestSamplingFormats lists a function sampling profile, writes it for
// gprof (--format=gmon -o gmon.out, warning that without /AT it has no
// callers), and refuses --format=gmon for a profile that has no samples,
// with a hint.
func TestSamplingFormats(t *testing.T) {
	t.Chdir(t.TempDir())
	p := &datafile.Plan{
		Method: datafile.FuncSampling, StartIndex: -1, Calibration: -1,
		Modules: []datafile.Module{{Name: "sprog", Path: "/opt/sprog", Arch: "amd64", Files: []string{"sprog.c"}}},
		Funcs: []datafile.Func{
			{Name: "f", Source: "sprog.o", Entry: 0x401100, Low: 0x401100, High: 0x401140},
			{Name: "g", Source: "sprog.o", Entry: 0x401140, Low: 0x401140, High: 0x401180},
		},
		Lines: []datafile.Line{{Line: 3, Addrs: []uint64{0x401108}}},
	}
	p.ID = datafile.PlanID(p)
	const ms = 1_000_000
	c := &datafile.Counts{
		PlanID: p.ID, Method: p.Method,
		Run: datafile.Run{ID: datafile.NewRunID(), Time: 1700000000, CommandLine: "sprog"},
		Stats: datafile.Stats{Hits: []uint64{1000, 7}, FuncTime: []int64{250 * ms, 50 * ms}, ChildTime: []int64{250 * ms, 50 * ms},
			TotalTime: 310 * ms, OutsideTime: 10 * ms,
			Sampling: datafile.SamplingStats{Interval: ms, Sampler: datafile.PerfSampler, Samples: []uint64{250, 50},
				LineSamples: []uint64{200}, Outside: 10}},
	}
	m := datafile.NewMerged(p)
	if err := m.Add(c); err != nil {
		t.Fatal(err)
	}
	if err := datafile.SaveMerged("sprog.pbt", m); err != nil {
		t.Fatal(err)
	}
	// (The source of its sampled line, which the listing shows.)
	if err := os.WriteFile("sprog.c", []byte("int f(int x)\n{\n\treturn x;\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, status := runPlist(t, words("/nologo sprog"), "")
	if status != 0 || stderr != "" || !strings.Contains(stdout, "Profile: Function sampling, sorted by time") ||
		!strings.Contains(stdout, "    Sampled every 1.000 millisecond of CPU time (perf events)") ||
		!strings.Contains(stdout, "    3:   200  66.7      return x;\n") {
		t.Errorf("plist sprog: status %d, stderr %q, stdout\n%s", status, stderr, stdout)
	}
	_, stderr, status = runPlist(t, words("/nologo --format=gmon -o gmon.out sprog"), "")
	if status != 0 || !strings.HasPrefix(stderr, "plist: warning PRF4484: gmon.out has no callers without /AT") {
		t.Errorf("plist --format=gmon: status %d, stderr %q", status, stderr)
	}
	if b, err := os.ReadFile("gmon.out"); err != nil || !bytes.HasPrefix(b, []byte("gmon\x01\x00\x00\x00")) {
		t.Errorf("gmon.out: %q, %v", b[:min(len(b), 8)], err)
	}
	writeProfile(t, "fcount.pbt", testRun(testPlan()))
	_, stderr, status = runPlist(t, words("/nologo --format=gmon -o gmon2.out fcount"), "")
	// (The option is valid: the profile is not of the type it writes.
	// PRF1102 "--format=gmon: invalid option" said the contrary.)
	want := "plist: fatal error PRF1483: --format=gmon needs a function sampling profile, and fcount.pbt is a function counting profile\n" +
		"plist: hint: gmon.out holds sampled time: prepare the program for function sampling (prep /FS), profile it and merge, then write gmon.out; --format=callgrind or pprof take any profile\n"
	if status != 1 || stderr != want {
		t.Errorf("plist --format=gmon fcount: status %d, stderr\n%s\nwant\n%s", status, stderr, want)
	}
	if _, err := os.Stat("gmon2.out"); err == nil {
		t.Error("gmon2.out written for a counting profile")
	}
}

// TestChromeWithoutTrace: --format=chrome of a profile whose run wrote no
// execution trace names the file it cannot open, as the original's /TRACE
// did (PRF1011), and the hint says what writes one: profile /TRACE, or,
// for a line profile, a function profile first. Before, the message
// named the .pbx alone.
func TestChromeWithoutTrace(t *testing.T) {
	t.Chdir(t.TempDir())
	writeProfile(t, "fcount.pbt", testRun(testPlan()))
	_, stderr, status := runPlist(t, words("/nologo --format=chrome -o trace.json fcount"), "")
	want := "plist: fatal error PRF1011: cannot open file fcount.pbx: no such file or directory\n" +
		"plist: hint: fcount.pbx is written by profile /TRACE: run the program with 'profile /TRACE fcount ...', then 'prep /M fcount'\n"
	if status != 1 || stderr != want {
		t.Errorf("plist --format=chrome fcount: status %d, stderr\n%s\nwant\n%s", status, stderr, want)
	}
	p := &datafile.Plan{
		Method: datafile.LineCounting, StartIndex: -1, Calibration: -1,
		Modules: []datafile.Module{{Name: "prog", Path: "/opt/prog", Arch: "amd64", PIE: true, Files: []string{"prog.c"}}},
		Lines:   []datafile.Line{{Line: 3, Addrs: []uint64{0x1108}}},
	}
	p.ID = datafile.PlanID(p)
	if err := datafile.SaveMerged("lcount.pbt", datafile.NewMerged(p)); err != nil {
		t.Fatal(err)
	}
	_, stderr, status = runPlist(t, words("/nologo --format=chrome -o trace.json lcount"), "")
	want = "plist: hint: an execution trace is of function calls, and this is a line profile: prepare a function profile (prep /FT lcount), then run the program with 'profile /TRACE lcount ...' and 'prep /M lcount'\n"
	if status != 1 || !strings.HasSuffix(stderr, want) {
		t.Errorf("plist --format=chrome lcount: status %d, stderr\n%s\nwant it to end\n%s", status, stderr, want)
	}
	if _, err := os.Stat("trace.json"); err == nil {
		t.Error("trace.json written without a trace")
	}
}

// TestHTMLFormat writes the HTML report to a file, and refuses it with
// what is not a page of its own: /T's records, --diff-base's comparison
// and /TRACE's trace (PRF1102, nothing written).
func TestHTMLFormat(t *testing.T) {
	t.Chdir(t.TempDir())
	writeProfile(t, "fcount.pbt", testRun(testPlan()))
	stdout, stderr, status := runPlist(t, words("/nologo --format=html -o report.html fcount"), "")
	if status != 0 || stdout != "" || stderr != "" {
		t.Errorf("plist --format=html -o report.html: status %d, stdout %q, stderr %q", status, stdout, stderr)
	}
	if b, err := os.ReadFile("report.html"); err != nil || !bytes.HasPrefix(b, []byte("<!DOCTYPE html>\n")) ||
		!bytes.Contains(b, []byte(`<td class="n" data-v="1000">1000</td>`)) {
		t.Errorf("report.html: %v\n%.300s", err, b)
	}
	for _, args := range []string{"/T --format=html", "--format=HTML --diff-base=fcount", "--format=html /TRACE"} {
		_, stderr, status := runPlist(t, words("/nologo -o other.html "+args+" fcount"), "")
		if status != 2 || !strings.Contains(stderr, "PRF1102") || !strings.Contains(stderr, "plist: hint: ") {
			t.Errorf("plist %s: status %d, stderr %q", args, status, stderr)
		}
		if _, err := os.Stat("other.html"); err == nil {
			t.Errorf("plist %s wrote other.html", args)
		}
	}
}
