package plist

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// TestFindSource: a source is found where PREP recorded it; a generated
// parser's grammar, named by #line relative to where the generator ran
// (its srcdir) and recorded under the compiler's directory, in the
// directory of its unit's source; a relative name (a compilation
// directory made relative by -ffile-prefix-map) in the unit
// directories; and in the /D directories, by relative path or base name.
// Directories are not sources, and a file found nowhere is "".
func TestFindSource(t *testing.T) {
	root := t.TempDir()
	build, src, extra := filepath.Join(root, "build"), filepath.Join(root, "src"), filepath.Join(root, "extra")
	for _, f := range []string{"src/gram.y", "src/gram.c", "src/lib/util.c", "extra/other.c", "extra/sub/deep.c"} {
		path := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(build, "dir.c"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := &datafile.Merged{Plan: datafile.Plan{Method: datafile.LineCounting, StartIndex: -1,
		Modules: []datafile.Module{{Name: "prog", CompDirs: []string{build, src}}}}}
	o := DefaultOptions()
	o.SourceDirs = []string{extra}
	r := newReport(m, o)
	for _, c := range []struct{ name, want string }{
		{filepath.Join(src, "gram.c"), filepath.Join(src, "gram.c")},
		{filepath.Join(build, "gram.y"), filepath.Join(src, "gram.y")},
		{filepath.Join(build, "lib/util.c"), filepath.Join(src, "lib/util.c")},
		{"gram.y", filepath.Join(src, "gram.y")},
		{"/elsewhere/other.c", filepath.Join(extra, "other.c")},
		{filepath.Join(build, "sub/deep.c"), filepath.Join(extra, "sub/deep.c")},
		{"sub/deep.c", filepath.Join(extra, "sub/deep.c")},
		{filepath.Join(build, "dir.c"), ""},
		{"/elsewhere/none.c", ""},
		{"", ""},
	} {
		if got := r.findSource(0, c.name); got != c.want {
			t.Errorf("findSource(%q) = %q, want %q", c.name, got, c.want)
		}
	}
	if got, want := r.exportPath(0, "/elsewhere/none.c"), "/elsewhere/none.c"; got != want {
		t.Errorf("exportPath of a source found nowhere = %q, want the recorded %q", got, want)
	}
}

// TestLcovLineFunctions: a line profile's tracefile has its functions,
// each with the count of its first line (its lowest site in its code,
// wherever that is), FNF and FNH; a function none of whose lines is
// profiled, or without a source file, is left out.
func TestLcovLineFunctions(t *testing.T) {
	m := &datafile.Merged{
		Plan: datafile.Plan{Method: datafile.LineCounting, StartIndex: -1,
			Modules: []datafile.Module{{Name: "prog", Files: []string{"/nonexistent/a.c"}}},
			Funcs: []datafile.Func{
				{Name: "f1", Entry: 0x100, Low: 0x100, High: 0x140, File: "/nonexistent/a.c", Line: 3},
				{Name: "f2", Entry: 0x140, Low: 0x140, High: 0x180, File: "/nonexistent/a.c", Line: 10},
				{Name: "f3", Entry: 0x180, Low: 0x180, High: 0x1a0, File: "/nonexistent/a.c", Line: 19},
				{Name: "f4", Entry: 0x1c0, Low: 0x1c0, High: 0x1d0, File: "/nonexistent/a.c", Line: 30},
				{Name: "f5", Entry: 0x1d0, Low: 0x1d0, High: 0x1e0},
			},
			Lines: []datafile.Line{
				{File: 0, Line: 3, Addrs: []uint64{0x100}},
				{File: 0, Line: 4, Addrs: []uint64{0x110}},
				{File: 0, Line: 10, Addrs: []uint64{0x140}},
				{File: 0, Line: 11, Addrs: []uint64{0x150}},
				{File: 0, Line: 20, Addrs: []uint64{0x188}},
				{File: 0, Line: 31, Addrs: []uint64{0x1e8}},
			},
		},
		Runs:      []datafile.Run{{Time: 1795600000, CommandLine: "prog"}},
		Overheads: []int64{0},
		Stats:     datafile.Stats{Hits: []uint64{5, 50, 0, 0, 7, 1}},
	}
	m.Plan.ID = datafile.PlanID(&m.Plan)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	o := DefaultOptions()
	o.Format = FormatLcov
	if err := Generate(&buf, m, o); err != nil {
		t.Fatal(err)
	}
	want := `TN:prog
SF:/nonexistent/a.c
FN:3,f1
FN:10,f2
FN:19,f3
FNDA:5,f1
FNDA:0,f2
FNDA:7,f3
FNF:3
FNH:2
DA:3,5
DA:4,50
DA:10,0
DA:11,0
DA:20,7
DA:31,1
LF:6
LH:4
end_of_record
`
	if got := buf.String(); got != want {
		t.Errorf("lcov:\n%s\nwant:\n%s", got, want)
	}
}

// TestLcovInlinedFunctions: a function whose first line was also inlined
// elsewhere has no count of its own in a line profile (the line's count
// adds every copy's), so it is left out of the tracefile's functions: sq,
// called 7 times, inlined into main's loop of 1000, was listed with
// FNDA:1007. Its lines keep their counts; main's first line is its own.
func TestLcovInlinedFunctions(t *testing.T) {
	m := &datafile.Merged{
		Plan: datafile.Plan{Method: datafile.LineCounting, StartIndex: -1,
			Modules: []datafile.Module{{Name: "prog", Files: []string{"/nonexistent/a.c"}}},
			Funcs: []datafile.Func{
				{Name: "sq", Entry: 0x100, Low: 0x100, High: 0x120, File: "/nonexistent/a.c", Line: 3},
				{Name: "main", Entry: 0x200, Low: 0x200, High: 0x300, File: "/nonexistent/a.c", Line: 10},
			},
			Lines: []datafile.Line{
				{File: 0, Line: 4, Addrs: []uint64{0x100, 0x240}}, // return x * x; in sq, and inlined in main
				{File: 0, Line: 11, Addrs: []uint64{0x200}},
				{File: 0, Line: 12, Addrs: []uint64{0x230}},
			},
		},
		Runs:      []datafile.Run{{Time: 1795600000, CommandLine: "prog"}},
		Overheads: []int64{0},
		Stats:     datafile.Stats{Hits: []uint64{1007, 1, 1000}},
	}
	m.Plan.ID = datafile.PlanID(&m.Plan)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	o := DefaultOptions()
	o.Format = FormatLcov
	if err := Generate(&buf, m, o); err != nil {
		t.Fatal(err)
	}
	want := `TN:prog
SF:/nonexistent/a.c
FN:10,main
FNDA:1,main
FNF:1
FNH:1
DA:4,1007
DA:11,1
DA:12,1000
LF:3
LH:3
end_of_record
`
	if got := buf.String(); got != want {
		t.Errorf("lcov:\n%s\nwant:\n%s", got, want)
	}
}

// TestAutogeneratedSource: the lines of Go's <autogenerated> wrappers are
// code of no file: the listing says so, and PLIST does not warn that it
// cannot find the file (PRF4487 named it in every Go report). A file
// that is missing is still warned about.
func TestAutogeneratedSource(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {\n\tf()\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &datafile.Merged{
		Plan: datafile.Plan{Method: datafile.LineCounting, StartIndex: -1,
			Modules: []datafile.Module{{Name: "prog", Files: []string{src, "<autogenerated>"}}},
			Lines: []datafile.Line{
				{File: 0, Line: 4, Addrs: []uint64{0x100}},
				{File: 1, Line: 1, Addrs: []uint64{0x200}},
			},
		},
		Runs:      []datafile.Run{{Time: 1795600000, CommandLine: "prog"}},
		Overheads: []int64{0},
		Stats:     datafile.Stats{Hits: []uint64{1, 3}},
	}
	m.Plan.ID = datafile.PlanID(&m.Plan)
	var warnings []string
	o := DefaultOptions()
	o.Warn = func(d *prf.Diagnostic) { warnings = append(warnings, d.Error()) }
	var buf bytes.Buffer
	if err := Generate(&buf, m, o); err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings %q, want none", warnings)
	}
	if want := "No source file for <autogenerated>: code the compiler generated\n"; !strings.Contains(buf.String(), want) || !strings.Contains(buf.String(), "Source file: "+src+"\n") {
		t.Errorf("listing lacks %q or main.go's listing:\n%s", want, buf.String())
	}
	m.Plan.Modules[0].Files[0] = filepath.Join(dir, "gone.go")
	warnings = nil
	if err := Generate(&buf, m, o); err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "gone.go (1 line)") || strings.Contains(warnings[0], "autogenerated") {
		t.Errorf("warnings %q, want one for gone.go alone", warnings)
	}
}
