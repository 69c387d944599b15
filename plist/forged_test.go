package plist

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// hostile is a profile whose every name holds what a line-based format
// must not write raw: a tab, a newline, a carriage return, a form feed,
// a terminal's escape, NEL (U+0085) and the line separator (U+2028).
// main is called once, f 1000 times, and each of their lines as often.
func hostile(method datafile.Method) *datafile.Merged {
	const bad = "\t\n\r\f\x1b[2J\u0085\u2028"
	m := &datafile.Merged{Plan: datafile.Plan{Method: method, StartIndex: -1, Calibration: -1,
		Modules: []datafile.Module{{Name: "prog" + bad, Path: "/bin/prog" + bad, Files: []string{"/src/x" + bad + ".c"}}}}}
	m.Runs = []datafile.Run{{Time: 1795600000, CommandLine: "prog arg" + bad}}
	if method.IsFunction() {
		m.Plan.Funcs = []datafile.Func{
			{Module: 0, Name: "main" + bad, Source: "x" + bad + ".o", File: "/src/x" + bad + ".c", Line: 3},
			{Module: 0, Name: "f" + bad, Source: "x" + bad + ".o", File: "/src/x" + bad + ".c", Line: 9},
		}
		m.Stats.Hits = []uint64{1, 1000}
		m.Stats.FuncTime, m.Stats.ChildTime = []int64{10, 1000}, []int64{1010, 1000}
	} else {
		m.Plan.Lines = []datafile.Line{{Module: 0, File: 0, Line: 3}, {Module: 0, File: 0, Line: 9}}
		m.Stats.Hits = []uint64{1, 1000}
	}
	m.Plan.ID = datafile.PlanID(&m.Plan)
	return m
}

// TestEscapedNames writes the hostile profiles in every line-based
// format: no line holds a control character but the format's own tabs,
// each holds the records it should (one per function or line, and the
// run's), and the names are written escaped (\t, \n, \r, \x0c, \x1b,
// \u0085, \u2028). JSON keeps them whole. Before, each of their newlines
// began a line of its own in every format, and the listing sent the
// terminal's escape to the terminal.
func TestEscapedNames(t *testing.T) {
	const escaped = `\t\n\r\x0c\x1b[2J\u0085\u2028`
	for _, method := range []datafile.Method{datafile.FuncTiming, datafile.LineCounting} {
		m := hostile(method)
		for _, c := range []struct {
			format Format
			// records is a pattern of each line that is a record of an
			// item or of the run; n is how many the output must have, of
			// the function profile and of the line profile.
			records *regexp.Regexp
			n       [2]int
			tabs    bool // the format's own tabs
		}{
			{FormatText, regexp.MustCompile(`^(\s+[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ +\d+ |Unable to open|    Command line at)`), [2]int{3, 2}, false},
			{FormatTab, regexp.MustCompile(`^(4\t.*\tprog arg|6\t|7\t)`), [2]int{3, 3}, true},
			{FormatLcov, regexp.MustCompile(`^(SF|FNDA|DA):`), [2]int{5, 3}, false},
			{FormatCallgrind, regexp.MustCompile(`^(fn=|cmd: )`), [2]int{3, 2}, false},
			{FormatFolded, regexp.MustCompile(` \d+$`), [2]int{2, 2}, false},
		} {
			name := strings.ToLower(method.Words()) + "/" + c.format.String()
			var buf bytes.Buffer
			o := DefaultOptions()
			o.Format = c.format
			if err := Generate(&buf, m, o); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out := buf.String()
			n := 0
			for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				if i := strings.IndexFunc(l, func(r rune) bool {
					return (r < 0x20 && !(r == '\t' && c.tabs)) || r == 0x7f || r >= 0x80 && r <= 0x9f || r == '\u2028'
				}); i >= 0 {
					t.Errorf("%s: a control character in %q", name, l)
				}
				if c.records.MatchString(l) {
					n++
				}
			}
			want := escaped
			if !c.tabs && c.format == FormatText {
				want = want[len(`\t`):] // (the listing's tabs are spaces)
			}
			wantN := c.n[0]
			if !method.IsFunction() {
				wantN = c.n[1]
			}
			if !strings.Contains(out, want) || n != wantN {
				t.Errorf("%s: %d records (want %d), escaped names %v:\n%s", name, n, wantN, strings.Contains(out, want), out)
			}
		}
		var buf bytes.Buffer
		o := DefaultOptions()
		o.Format = FormatJSON
		if err := Generate(&buf, m, o); err != nil {
			t.Fatal(err)
		}
		var j jsonProfile
		if err := json.Unmarshal(buf.Bytes(), &j); err != nil {
			t.Fatal(err)
		}
		if j.Runs[0].Command != m.Runs[0].CommandLine || j.Modules[0].Name != m.Plan.Modules[0].Name {
			t.Errorf("JSON: %q, %q; want the names whole", j.Runs[0].Command, j.Modules[0].Name)
		}
	}
}

// TestCallgrindCompressedNames: a name that callgrind's readers would
// take for a compressed one ("(1)", "(1) evil.c": the id 1, given a name
// or standing for the one given before) is written compressed itself,
// with an id of its own, so that it is read as it is. Here a program
// named "(1)" has main in the file "(1) evil.c" and f in the file "(1)":
// before, callgrind_annotate read main's file as "evil.c" and f's as the
// same, and the program's name as nothing.
func TestCallgrindCompressedNames(t *testing.T) {
	m := &datafile.Merged{Plan: datafile.Plan{Method: datafile.FuncCounting, StartIndex: -1, Calibration: -1,
		Modules: []datafile.Module{{Name: "(1)", Path: "/bin/(1)"}}}}
	m.Runs = []datafile.Run{{Time: 1795600000, CommandLine: "(1)"}}
	m.Plan.Funcs = []datafile.Func{
		{Module: 0, Name: "main", Source: "evil.o", File: "(1) evil.c", Line: 3},
		{Module: 0, Name: "f", Source: "evil.o", File: "(1)", Line: 9},
	}
	m.Stats.Hits = []uint64{1, 1000}
	m.Plan.ID = datafile.PlanID(&m.Plan)
	var buf bytes.Buffer
	o := DefaultOptions()
	o.Format = FormatCallgrind
	if err := Generate(&buf, m, o); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"\nob=(1) (1)\nfl=(1) (1) evil.c\nfn=main\n3 1\n", "\nob=(1)\nfl=(2) (1)\nfn=f\n9 1000\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("callgrind lacks %q:\n%s", want, out)
		}
	}
	if !testutil.HaveTool("callgrind_annotate") {
		t.Skip("callgrind_annotate not installed")
	}
	path := filepath.Join(t.TempDir(), "evil.callgrind")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	read, err := exec.Command("callgrind_annotate", "--threshold=100", path).CombinedOutput()
	if err != nil {
		t.Fatalf("callgrind_annotate: %v\n%s", err, read)
	}
	for _, want := range []string{`(?m)^1,000 \(99\.90%\)\s+\(1\):f \[\(1\)\]$`, `(?m)^\s+1 \( 0\.10%\)\s+\(1\) evil\.c:main \[\(1\)\]$`} {
		if !regexp.MustCompile(want).Match(read) {
			t.Errorf("callgrind_annotate lacks %s:\n%s", want, read)
		}
	}
}
