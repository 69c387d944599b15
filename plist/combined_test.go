package plist

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// suiteProfile is a line coverage profile of program name: its module's
// files, its functions (each one line site at its entry, its code the 16
// bytes from there) and its lines' hits, one run.
func suiteProfile(t *testing.T, method datafile.Method, name string, files []string, funcs []datafile.Func, lines []datafile.Line, hits []uint64) *datafile.Merged {
	t.Helper()
	m := &datafile.Merged{
		Plan:      datafile.Plan{Method: method, StartIndex: -1, Modules: []datafile.Module{{Name: name, Files: files}}, Funcs: funcs, Lines: lines},
		Runs:      []datafile.Run{{Time: 1795600000, CommandLine: name + " --test"}},
		Overheads: []int64{0},
		Stats:     datafile.Stats{Hits: hits},
	}
	m.Plan.ID = datafile.PlanID(&m.Plan)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	return m
}

// twoTests are the line coverage of two test programs that share a
// library's source (/src/lib.c): test_a runs lib_add's two lines and
// misses lib_sub; test_b runs lib_sub's first line, and lib_add's first
// line three times, its second never (an early return); each has a file
// of its own.
func twoTests(t *testing.T) (a, b *datafile.Merged) {
	fn := func(name, file string, line int, at uint64) datafile.Func {
		return datafile.Func{Name: name, Entry: at, Low: at, High: at + 16, File: file, Line: line}
	}
	a = suiteProfile(t, datafile.LineCoverage, "test_a", []string{"/src/lib.c", "/src/a.c"},
		[]datafile.Func{fn("lib_add", "/src/lib.c", 3, 0x100), fn("lib_sub", "/src/lib.c", 8, 0x110), fn("main", "/src/a.c", 2, 0x120)},
		[]datafile.Line{
			{File: 0, Line: 3, Addrs: []uint64{0x100}}, {File: 0, Line: 4, Addrs: []uint64{0x108}},
			{File: 0, Line: 8, Addrs: []uint64{0x110}}, {File: 0, Line: 9, Addrs: []uint64{0x118}},
			{File: 1, Line: 2, Addrs: []uint64{0x120}},
		},
		[]uint64{1, 1, 0, 0, 1})
	b = suiteProfile(t, datafile.LineCoverage, "test_b", []string{"/src/b.c", "/src/lib.c"},
		[]datafile.Func{fn("main", "/src/b.c", 5, 0x200), fn("lib_add", "/src/lib.c", 3, 0x210), fn("lib_sub", "/src/lib.c", 8, 0x220)},
		[]datafile.Line{
			{File: 0, Line: 5, Addrs: []uint64{0x200}}, {File: 0, Line: 6, Addrs: []uint64{0x208}},
			{File: 1, Line: 3, Addrs: []uint64{0x210}}, {File: 1, Line: 4, Addrs: []uint64{0x218}},
			{File: 1, Line: 8, Addrs: []uint64{0x220}},
		},
		[]uint64{1, 0, 3, 0, 1})
	return a, b
}

// TestCombined adds the coverage of two test programs by source file and
// line, as lcov -a does: lib.c's line 3 ran in both (1 + 3), line 4 in
// test_a, line 8 in test_b, line 9 in neither (test_b does not profile
// it: test_a's 0 alone); lib_add is called in both (its first line's
// counts, 1 + 3), lib_sub in test_b. Each program's own file is its
// own. Line coverage: 5 lines of 7 ran.
func TestCombined(t *testing.T) {
	a, b := twoTests(t)
	c := combineAll(t, DefaultOptions(), a, b)
	var buf bytes.Buffer
	if err := c.WriteLcov(&buf); err != nil {
		t.Fatal(err)
	}
	want := `TN:
SF:/src/lib.c
FN:3,lib_add
FN:8,lib_sub
FNDA:4,lib_add
FNDA:1,lib_sub
FNF:2
FNH:2
DA:3,4
DA:4,1
DA:8,1
DA:9,0
LF:4
LH:3
end_of_record
TN:
SF:/src/a.c
FN:2,main
FNDA:1,main
FNF:1
FNH:1
DA:2,1
LF:1
LH:1
end_of_record
TN:
SF:/src/b.c
FN:5,main
FNDA:1,main
FNF:1
FNH:1
DA:5,1
DA:6,0
LF:2
LH:1
end_of_record
`
	if got := buf.String(); got != want {
		t.Errorf("lcov:\n%s\nwant:\n%s", got, want)
	}
	if got, want := c.Coverage(), 500.0/7; math.Abs(got-want) > 1e-9 {
		t.Errorf("coverage %.2f %%, want 5 lines of 7: %.2f %%", got, want)
	}
	buf.Reset()
	if err := c.WriteSummary(&buf); err != nil {
		t.Fatal(err)
	}
	wantSummary := `Combined coverage of 2 line profiles

  test_a.pbt  line coverage, 1 run
  test_b.pbt  line coverage, 1 run

   Lines      Run    Cover   Functions      Run    Cover  Source file
       1        1   100.0%           1        1   100.0%  /src/a.c
       2        1    50.0%           1        1   100.0%  /src/b.c
       4        3    75.0%           2        2   100.0%  /src/lib.c
       7        5    71.4%           4        4   100.0%  Total (3 files)
`
	if got := buf.String(); got != wantSummary {
		t.Errorf("summary:\n%s\nwant:\n%s", got, wantSummary)
	}
}

// TestCombinedOne: the combination of one profile is its lcov export,
// its test name (TN) its run's program.
func TestCombinedOne(t *testing.T) {
	a, _ := twoTests(t)
	c := NewCombined()
	if err := c.Add(a, "test_a.pbt", DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	var got, want bytes.Buffer
	if err := c.WriteLcov(&got); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Format = FormatLcov
	if err := Generate(&want, a, o); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() || !bytes.HasPrefix(got.Bytes(), []byte("TN:test_a\n")) {
		t.Errorf("the combination of one profile:\n%s\nits lcov export:\n%s", got.String(), want.String())
	}
}

// TestCombinedFunctions: function coverage profiles add by function, a
// function's declaration line its line; a line profile does not add to
// them (PRF1485), nor they to a line profile.
func TestCombinedFunctions(t *testing.T) {
	fn := func(name string, line int, at uint64) datafile.Func {
		return datafile.Func{Name: name, Entry: at, Low: at, High: at + 16, File: "/src/lib.c", Line: line}
	}
	x := suiteProfile(t, datafile.FuncCoverage, "test_x", nil, []datafile.Func{fn("lib_add", 3, 0x100), fn("lib_sub", 8, 0x110)}, nil, []uint64{1, 0})
	y := suiteProfile(t, datafile.FuncCoverage, "test_y", nil, []datafile.Func{fn("lib_sub", 8, 0x200), fn("lib_mul", 12, 0x210)}, nil, []uint64{0, 0})
	c := combineAll(t, DefaultOptions(), x, y)
	if got, want := c.Coverage(), 100.0/3; math.Abs(got-want) > 1e-9 {
		t.Errorf("coverage %.2f %%, want a function of 3: %.2f %%", got, want)
	}
	var buf bytes.Buffer
	if err := c.WriteSummary(&buf); err != nil {
		t.Fatal(err)
	}
	want := `Combined coverage of 2 function profiles

  test_x.pbt  function coverage, 1 run
  test_y.pbt  function coverage, 1 run

   Functions      Run    Cover  Source file
           3        1    33.3%  /src/lib.c
           3        1    33.3%  Total (1 file)
`
	if got := buf.String(); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
	a, _ := twoTests(t)
	var d *prf.Diagnostic
	if err := c.Add(a, "test_a.pbt", DefaultOptions()); !errors.As(err, &d) || d.Code != 1485 {
		t.Errorf("a line profile added to function profiles: %v, want PRF1485", err)
	}
	c = NewCombined()
	if err := c.Add(a, "test_a.pbt", DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(x, "test_x.pbt", DefaultOptions()); !errors.As(err, &d) || d.Code != 1485 {
		t.Errorf("a function profile added to a line profile: %v, want PRF1485", err)
	}
}

// combineAll combines profiles, each read from a .pbt named after its
// module, with options o.
func combineAll(t *testing.T, o Options, profiles ...*datafile.Merged) *Combined {
	t.Helper()
	c := NewCombined()
	for _, m := range profiles {
		if err := c.Add(m, m.Plan.Modules[0].Name+".pbt", o); err != nil {
			t.Fatal(err)
		}
	}
	return c
}
