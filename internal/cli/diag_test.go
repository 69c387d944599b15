package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// diagTest is a command line that fails, with the line the command prints.
type diagTest struct {
	name   string
	tool   Tool
	args   []string
	env    string
	files  map[string]string
	want   string
	golden string // ../golden/diag file holding the original's line, if any
	noLogo bool   // /NOLOGO was seen before the error
}

var ioNine = "/nologo /it fcount" + strings.Repeat(" /io fcount", 9) + " /ot nine"

var diagTests = []diagTest{
	{name: "slash only", tool: Prep, args: words("/nologo / fcount"), noLogo: true,
		want: "prep: fatal error PRF1101: missing option specifier", golden: "diag/prep-slash-only.out"},
	{name: "dash only", tool: Plist, args: words("- fcount"),
		want: "plist: fatal error PRF1101: missing option specifier"},
	{name: "bad option", tool: Prep, args: words("/nologo /bogus fcount"), noLogo: true,
		want: "prep: fatal error PRF1102: bogus: invalid option", golden: "diag/prep-bad-option.out"},
	{name: "bad option banner", tool: Prep, args: words("/bogus /nologo fcount"),
		want: "prep: fatal error PRF1102: bogus: invalid option", golden: "diag/prep-bad-option-banner.out"},
	{name: "plist bad option", tool: Plist, args: words("/nologo /bogus fcount"), noLogo: true,
		want: "plist: fatal error PRF1102: bogus: invalid option", golden: "diag/plist-bad-option.out"},
	{name: "profile bad option", tool: Profile, args: words("/nologo /bogus fcount"), noLogo: true,
		want: "profile: fatal error PRF1102: bogus: invalid option", golden: "diag/profile-bad-option.out"},
	{name: "profile bad option with E", tool: Profile, args: words("/nologo /e errs3.txt /a /bogus"), noLogo: true,
		want: "profile: fatal error PRF1102: bogus: invalid option", golden: "diag/profile-e-warning.out"},
	{name: "glued OI", tool: Prep, args: words("/nologo /om /fc /OIglued fcount"), noLogo: true,
		want: "prep: fatal error PRF1102: OIglued: invalid option", golden: "diag/prep-glued-oi.out"},
	{name: "glued C", tool: Plist, args: words("/nologo /c5 fcount"), noLogo: true,
		want: "plist: fatal error PRF1102: c5: invalid option", golden: "diag/plist-c-glued.out"},
	{name: "too short abbreviation", tool: Prep, args: words("/e x prog"),
		want: "prep: fatal error PRF1102: e: invalid option"},
	{name: "TA is neither T nor TAB", tool: Plist, args: words("/ta 2 fcount"),
		want: "plist: fatal error PRF1102: ta: invalid option"},
	{name: "single slash word", tool: Prep, args: words("/fc /tmp"),
		want: "prep: fatal error PRF1102: tmp: invalid option"},
	{name: "unknown long option", tool: Prep, args: words("--bogus prog"),
		want: "prep: fatal error PRF1102: --bogus: invalid option"},
	{name: "long options are case-sensitive", tool: Prep, args: words("--NOLOGO prog"),
		want: "prep: fatal error PRF1102: --NOLOGO: invalid option"},
	{name: "long option with stray value", tool: Plist, args: words("--nologo=yes fcount"),
		want: "plist: fatal error PRF1102: --nologo=yes: invalid option"},
	{name: "bad sort key", tool: Plist, args: words("--sort=bogus fcount"),
		want: "plist: fatal error PRF1102: --sort=bogus: invalid option"},
	{name: "PL minus one", tool: Plist, args: words("/nologo /pl -1 fcount"), noLogo: true,
		want: "plist: fatal error PRF1103: PL option requires an additional argument", golden: "diag/plist-pl-1.out"},
	{name: "C minus five", tool: Plist, args: words("/c -5 fcount"),
		want: "plist: fatal error PRF1103: C option requires an additional argument"},
	{name: "argument is an option", tool: Prep, args: words("/oi /fc prog"),
		want: "prep: fatal error PRF1103: OI option requires an additional argument"},
	{name: "argument is end of options", tool: Prep, args: words("/sf -- prog"),
		want: "prep: fatal error PRF1103: SF option requires an additional argument"},
	{name: "argument is root", tool: Plist, args: words("/d / fcount"),
		want: "plist: fatal error PRF1103: D option requires an additional argument"},
	{name: "empty argument", tool: Profile, args: []string{"/e", "", "prog"},
		want: "profile: fatal error PRF1103: E option requires an additional argument"},
	{name: "long option at the end", tool: Prep, args: words("prog --output-pbt"),
		want: "prep: fatal error PRF1103: --output-pbt option requires an additional argument"},
	{name: "long option empty value", tool: Prep, args: words("--start= prog"),
		want: "prep: fatal error PRF1103: --start option requires an additional argument"},
	{name: "long option dash argument", tool: Profile, args: words("--input -x prog"),
		want: "profile: fatal error PRF1103: --input option requires an additional argument"},
	{name: "nonnumeric STACK", tool: Prep, args: words("/nologo /om /fc /at /stack x fcount"), noLogo: true,
		want: "prep: fatal error PRF1104: STACK option requires a numeric parameter", golden: "diag/prep-nonnumeric-stack.out"},
	{name: "nonnumeric CB", tool: Prep, args: words("/nologo /om /ft /cb abc fcount"), noLogo: true,
		want: "prep: fatal error PRF1104: CB option requires a numeric parameter", golden: "diag/prep-nonnumeric-cb.out"},
	{name: "nonnumeric C", tool: Plist, args: words("/nologo /c x fcount"), noLogo: true,
		want: "plist: fatal error PRF1104: C option requires a numeric parameter", golden: "diag/plist-c-nonnumeric.out"},
	{name: "hexadecimal", tool: Plist, args: words("/pw 0x10 fcount"),
		want: "plist: fatal error PRF1104: PW option requires a numeric parameter"},
	{name: "too large", tool: Prep, args: words("/stack 2147483648 prog"),
		want: "prep: fatal error PRF1104: STACK option requires a numeric parameter"},
	{name: "far too large", tool: Profile, args: words("/s 99999999999999999999999 prog"),
		want: "profile: fatal error PRF1104: S option requires a numeric parameter"},
	{name: "long nonnumeric", tool: Plist, args: words("--tab-width=two fcount"),
		want: "plist: fatal error PRF1104: --tab-width option requires a numeric parameter"},
	{name: "IO 9 times", tool: Prep, args: words(ioNine), noLogo: true,
		want: "prep: fatal error PRF1105: IO option specified more than 8 times", golden: "diag/prep-io-9-times.out"},
	{name: "at only", tool: Prep, args: words("@"),
		want: "prep: fatal error PRF1201: missing filename after @", golden: "diag/prep-at-only.out"},
	{name: "at only in response file", tool: Plist, args: words("@r"), files: map[string]string{"r": "/nologo @"}, noLogo: true,
		want: "plist: fatal error PRF1201: missing filename after @"},
	{name: "response file missing", tool: Prep, args: words("@nosuch.rsp"),
		want: "prep: fatal error PRF1011: cannot open file nosuch.rsp: file does not exist", golden: "diag/prep-response-file.out"},
	{name: "response file loops", tool: Prep, args: words("@loop"), files: map[string]string{"loop": "/nologo @loop"}, noLogo: true,
		want: "prep: fatal error PRF1202: response files nested too deeply"},
	{name: "nologo only", tool: Prep, args: words("/nologo"), noLogo: true,
		want: "prep: fatal error PRF1421: no input specified", golden: "usage/prep-nologo-noargs.out"},
	{name: "no input", tool: Prep, args: words("/nologo /om /fc"), noLogo: true,
		want: "prep: fatal error PRF1421: no input specified", golden: "diag/prep-no-input.out"},
	{name: "no input env", tool: Prep, args: words("/fc"), env: "/nologo", noLogo: true,
		want: "prep: fatal error PRF1421: no input specified"},
	{name: "9 modules", tool: Prep, args: words("a b c d e f g h i"),
		want: "prep: fatal error PRF1423: number of modules exceeds 8"},
	{name: "9 modules with trailing option", tool: Prep, args: words("a b c d e f g h /ot"),
		want: "prep: fatal error PRF1423: number of modules exceeds 8"},
	{name: "IT without OT", tool: Prep, args: words("/nologo /it fcount /io fcount"), noLogo: true,
		want: "prep: fatal error PRF1461: no PBT output file specified", golden: "diag/prep-it-no-ot.out"},
	{name: "IO without IT", tool: Prep, args: words("/nologo /io fcount /ot x"), noLogo: true,
		want: "prep: fatal error PRF1462: no PBT input file specified", golden: "diag/prep-io-no-it.out"},
	{name: "first error wins", tool: Prep, args: words("/bogus @nosuch /stack x"),
		want: "prep: fatal error PRF1102: bogus: invalid option"},
	{name: "first error wins response file", tool: Prep, args: words("@nosuch /bogus"),
		want: "prep: fatal error PRF1011: cannot open file nosuch: file does not exist"},
	{name: "env error", tool: Plist, args: words("fcount"), env: "/nologo /c5",
		noLogo: true, want: "plist: fatal error PRF1102: c5: invalid option"},
}

func TestDiagnostics(t *testing.T) {
	for _, tt := range diagTests {
		t.Run(tt.name, func(t *testing.T) {
			opts, _, err := parseAny(t, tt.tool, tt.args, tt.env, tt.files)
			if err == nil {
				t.Fatalf("%s %q: no error, want %s", tt.tool.Name, tt.args, tt.want)
			}
			if got := fatal(tt.tool, err); got != tt.want {
				t.Errorf("%s %q:\n got %s\nwant %s", tt.tool.Name, tt.args, got, tt.want)
			}
			if !IsUsageError(err) {
				t.Errorf("%s %q: IsUsageError(%v) = false", tt.tool.Name, tt.args, err)
			}
			if got := noLogoOf(t, opts); got != tt.noLogo {
				t.Errorf("%s %q: NoLogo after the error = %v, want %v", tt.tool.Name, tt.args, got, tt.noLogo)
			}
		})
	}
}

// noLogoOf returns the NoLogo field of any options struct.
func noLogoOf(t *testing.T, opts any) bool {
	t.Helper()
	switch o := opts.(type) {
	case *PrepOptions:
		return o.NoLogo
	case *ProfileOptions:
		return o.NoLogo
	case *PlistOptions:
		return o.NoLogo
	}
	t.Fatalf("options of type %T", opts)
	return false
}

// goldenDir is the original's recorded outputs, seen from this package.
const goldenDir = "../../testdata/original"

// goldenLine returns the first line of a golden file in the Linux form of
// the diagnostic ("PREP : fatal error" becomes "prep: fatal error"),
// skipping the test when the goldens are absent.
func goldenLine(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(goldenDir, name))
	if os.IsNotExist(err) {
		t.Skipf("golden %s absent", name)
	}
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\r\n")
	tool, rest, ok := strings.Cut(line, " : ")
	if !ok {
		t.Fatalf("golden %s: %q is not a diagnostic", name, line)
	}
	return strings.ToLower(tool) + ": " + rest
}

// TestDiagnosticsMatchGoldens checks the expected lines above against the
// original's outputs. Linux adds the cause of PRF1011 after the file name.
func TestDiagnosticsMatchGoldens(t *testing.T) {
	for _, tt := range diagTests {
		if tt.golden == "" {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			golden := goldenLine(t, tt.golden)
			withCause := strings.Contains(golden, "PRF1011") && strings.HasPrefix(tt.want, golden+": ")
			if tt.want != golden && !withCause {
				t.Errorf("%s:\n golden %s\n   want %s", tt.golden, golden, tt.want)
			}
		})
	}
	warnings := []struct{ golden, want string }{
		{"sf/name6-prep.out", "prep: warning PRF4101: option SF overrides an earlier option"},
		{"diag/plist-sort-override.out", "plist: warning PRF4101: option SC overrides an earlier option"},
	}
	for _, w := range warnings {
		t.Run(w.golden, func(t *testing.T) {
			if golden := goldenLine(t, w.golden); golden != w.want {
				t.Errorf("%s:\n golden %s\n   want %s", w.golden, golden, w.want)
			}
		})
	}
	// profile-a-without-e: the warning follows the program's output line.
	t.Run("diag/profile-a-without-e.out", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(goldenDir, "diag/profile-a-without-e.out"))
		if os.IsNotExist(err) {
			t.Skip("golden absent")
		}
		want := "PROFILE : warning PRF4111: no error file (/E) specified for /A option\r\n"
		if !strings.HasSuffix(string(data), want) {
			t.Errorf("golden does not end in %q", want)
		}
	})
}

func TestIsUsageError(t *testing.T) {
	_, err := ParsePlist(words("/c5"), nil, nil)
	if !IsUsageError(err) || prf.Code(err) != 1102 {
		t.Errorf("plist /c5: IsUsageError = %v, Code = %d, want true, 1102", IsUsageError(err), prf.Code(err))
	}
	if IsUsageError(prf.Errorf(1102, "x")) {
		t.Error("IsUsageError of a plain prf.Error = true")
	}
	if IsUsageError(nil) {
		t.Error("IsUsageError(nil) = true")
	}
}
