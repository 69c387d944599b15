package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// runPrep runs the command in-process with env as the variable PREP and
// returns its standard output, standard error and exit status.
func runPrep(t *testing.T, args []string, env string) (stdout, stderr string, status int) {
	t.Helper()
	t.Setenv("PREP", env)
	var out, errb bytes.Buffer
	status = run(args, &out, &errb)
	return out.String(), errb.String(), status
}

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

// diagnostic is a PREP command line that fails before doing anything, with
// the line prep prints and the original's output of the same command when
// it was captured.
type diagnostic struct {
	name   string
	args   []string
	env    string
	want   string
	golden string // testdata/original file holding the original's line
	banner bool   // the banner comes first: /NOLOGO was not seen before the error
}

var diagnostics = []diagnostic{
	{name: "slash only", args: words("/nologo / fcount"),
		want: "prep: fatal error PRF1101: missing option specifier", golden: "diag/prep-slash-only.out"},
	{name: "bad option", args: words("/nologo /bogus fcount"),
		want: "prep: fatal error PRF1102: bogus: invalid option", golden: "diag/prep-bad-option.out"},
	{name: "bad option before nologo", args: words("/bogus /nologo fcount"), banner: true,
		want: "prep: fatal error PRF1102: bogus: invalid option", golden: "diag/prep-bad-option-banner.out"},
	{name: "glued OI", args: words("/nologo /om /fc /OIglued fcount"),
		want: "prep: fatal error PRF1102: OIglued: invalid option", golden: "diag/prep-glued-oi.out"},
	{name: "argument is an option", args: words("/oi /fc prog"), banner: true,
		want: "prep: fatal error PRF1103: OI option requires an additional argument"},
	{name: "nonnumeric STACK", args: words("/nologo /om /fc /at /stack x fcount"),
		want: "prep: fatal error PRF1104: STACK option requires a numeric parameter", golden: "diag/prep-nonnumeric-stack.out"},
	{name: "nonnumeric CB", args: words("/nologo /om /ft /cb abc fcount"),
		want: "prep: fatal error PRF1104: CB option requires a numeric parameter", golden: "diag/prep-nonnumeric-cb.out"},
	{name: "IO 9 times", args: words("/nologo /it fcount" + strings.Repeat(" /io fcount", 9) + " /ot nine"),
		want: "prep: fatal error PRF1105: IO option specified more than 8 times", golden: "diag/prep-io-9-times.out"},
	{name: "IO and input-pbo count together", args: words("/nologo /it f" + strings.Repeat(" /io x", 4) + strings.Repeat(" --input-pbo=y", 5) + " /ot o"),
		want: "prep: fatal error PRF1105: --input-pbo option specified more than 8 times"},
	{name: "at only", args: words("@"), banner: true,
		want: "prep: fatal error PRF1201: missing filename after @", golden: "diag/prep-at-only.out"},
	{name: "response file missing", args: words("@nosuch.rsp"), banner: true,
		want: "prep: fatal error PRF1011: cannot open file nosuch.rsp: no such file or directory", golden: "diag/prep-response-file.out"},
	{name: "nologo only", args: words("/nologo"),
		want: "prep: fatal error PRF1421: no input specified", golden: "usage/prep-nologo-noargs.out"},
	{name: "no input", args: words("/nologo /om /fc"),
		want: "prep: fatal error PRF1421: no input specified", golden: "diag/prep-no-input.out"},
	{name: "no input, nologo in env", args: words("/fc"), env: "/nologo",
		want: "prep: fatal error PRF1421: no input specified"},
	{name: "9 modules", args: words("a b c d e f g h i"), banner: true,
		want: "prep: fatal error PRF1423: number of modules exceeds 8"},
	{name: "IT without OT", args: words("/nologo /it fcount /io fcount"),
		want: "prep: fatal error PRF1461: no PBT output file specified", golden: "diag/prep-it-no-ot.out"},
	{name: "IO without IT", args: words("/nologo /io fcount /ot x"),
		want: "prep: fatal error PRF1462: no PBT input file specified", golden: "diag/prep-io-no-it.out"},
}

// TestDiagnostics runs PREP on bad command lines: each prints the
// diagnostic (the original's line where it was captured; Linux adds the
// reason of PRF1011), a hint to try --help, and exits with status 2,
// without writing anything.
func TestDiagnostics(t *testing.T) {
	for _, tt := range diagnostics {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			stdout, stderr, status := runPrep(t, tt.args, tt.env)
			want := tt.want + "\nprep: hint: try 'prep --help' for the options\n"
			if tt.banner {
				want = tool.Banner() + want
			}
			if stderr != want || stdout != "" || status != 2 {
				t.Errorf("prep %q: status %d, stdout %q, stderr\n%s\nwant status 2, stderr\n%s", tt.args, status, stdout, stderr, want)
			}
			if tt.golden == "" {
				return
			}
			golden := testOriginalLine(t, tt.golden)
			if tt.want != golden && !(strings.Contains(golden, "PRF1011") && strings.HasPrefix(tt.want, golden+": ")) {
				t.Errorf("%s: the original printed\n%s", tt.golden, golden)
			}
		})
	}
}

// TestUsage compares the usage text with the original's, byte for byte but
// for the line ends, for every way of asking for it.
func TestUsage(t *testing.T) {
	for _, tt := range []struct{ golden, args string }{
		{"usage/prep-help-q.out", "/?"},
		{"usage/prep-help-HELP.out", "/HELP"},
		{"usage/prep-help-h.out", "/h"},
		{"usage/prep-help-dash.out", "-?"},
		{"usage/prep-noargs.out", ""},
		{"usage/prep-nologo-help.out", "/nologo /?"},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			stdout, _, status := runPrep(t, words(tt.args), "")
			if want := testutil.OriginalText(t, tt.golden); stdout != want || status != 0 {
				t.Errorf("prep %s: status %d, stdout\n%q\nwant status 0 and\n%q", tt.args, status, stdout, want)
			}
		})
	}
}

// TestLongHelp pins the --help text (testdata/help.golden, rewritten with
// -update) and checks that it fits 80 columns.
func TestLongHelp(t *testing.T) {
	stdout, _, status := runPrep(t, words("--nologo --help"), "")
	if status != 0 {
		t.Errorf("status %d", status)
	}
	testutil.Golden(t, "testdata/help.golden", []byte(stdout))
	for _, line := range strings.Split(stdout, "\n") {
		if len(line) > 80 {
			t.Errorf("line longer than 80 columns: %q", line)
		}
	}
}
