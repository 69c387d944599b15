package plist

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

var update = testutil.Update

// The goldens of Linux-style profiles: testdata/NAME.pbt.json is the input
// in the text form, written from the builders below with -update, and
// testdata/NAME.OPTIONS.golden the report with those options: the warnings
// as the command prints them on stderr, then the report.

// linuxNow is the Date: of the Linux goldens.
var linuxNow = time.Date(2026, time.March, 5, 9, 7, 3, 0, time.UTC)

func at0907(sec int, cmdline string) datafile.Run {
	return datafile.Run{Time: linuxNow.Add(-time.Hour + time.Duration(sec)*time.Second).Unix(), CommandLine: cmdline}
}

// demoModules are a PIE program and a shared library.
func demoModules() []datafile.Module {
	return []datafile.Module{
		{Name: "prog", Path: "/opt/demo/bin/prog", Arch: "amd64", PIE: true, Size: 20480,
			Files: []string{"/src/demo/main.c", "/src/demo/counter.cpp"}, CompDirs: []string{"/src/demo"}},
		{Name: "libcalc.so.1", Path: "/opt/demo/lib/libcalc.so.1", Arch: "amd64", PIE: true, Size: 8192},
	}
}

// demoFuncs are C, C++, Rust (legacy and v0) functions and ones known only
// from the symbol table.
func demoFuncs() []datafile.Func {
	return []datafile.Func{
		{Module: 0, Name: "main", Source: "main.o", File: "/src/demo/main.c", Line: 20},
		{Module: 0, Name: "_Z5twicei", Source: "main.o"},
		{Module: 0, Name: "_Z5twiced", Source: "main.o"},
		{Module: 0, Name: "_ZN7CounterC2Ev", Source: "counter.o"},
		{Module: 0, Name: "_ZN7Counter4bumpEi", Source: "counter.o"},
		{Module: 0, Name: "_ZNK7Counter5valueEv", Source: "counter.o"},
		{Module: 0, Name: "_Z3maxIiET_S0_S0_", Source: "counter.o"},
		{Module: 0, Name: "helper", Source: "main.o"},
		{Module: 0, Name: "_start", Source: "prog"},
		{Module: 1, Name: "_ZN6mycalc3add17h0123456789abcdefE", Source: "mycalc"},
		{Module: 1, Name: "_RNvCs1234_6mycalc3mul", Source: "mycalc"},
		{Module: 1, Name: "_ZN6mycalc6helper17hfedcba9876543210E", Source: "mycalc"},
		{Module: 1, Name: "calc_version", Source: "libcalc.so.1"},
	}
}

// demoHits are the hits of one run of prog, per demoFuncs.
var demoHits = []uint64{1, 5, 1, 1, 6, 1, 3, 0, 0, 40, 12, 0, 2}

func demoPlan(method datafile.Method) datafile.Plan {
	return datafile.Plan{Method: method, StartIndex: -1, Calibration: -1,
		Modules: demoModules(), Funcs: demoFuncs()}
}

func scaled(hits []uint64, n uint64) []uint64 {
	out := make([]uint64, len(hits))
	for i, h := range hits {
		out[i] = h * n
	}
	return out
}

func seal(m *datafile.Merged) *datafile.Merged {
	m.Plan.ID = datafile.PlanID(&m.Plan)
	for range m.Runs {
		m.Overheads = append(m.Overheads, 0)
	}
	return m
}

// linePlan is a line profile of testdata/src: lines.c, found through the
// compilation directory; util.c, whose recorded place does not exist (found
// only with /D testdata/src); crlf.c in a library, with CR LF line ends.
func linePlan(method datafile.Method) datafile.Plan {
	p := datafile.Plan{Method: method, StartIndex: -1, Calibration: -1,
		Modules: []datafile.Module{
			{Name: "lprog", Arch: "arm64", Files: []string{"src/lines.c", "build/util.c"},
				CompDirs: []string{"testdata"}},
			{Name: "libl.so", Arch: "arm64", Files: []string{"testdata/src/crlf.c"}},
		}}
	for _, l := range lineSites {
		p.Lines = append(p.Lines, datafile.Line{Module: l.mod, File: l.file, Line: l.line})
	}
	return p
}

// lineSites are the profiled lines with the hits of one run. Line 20 of
// lines.c is beyond its end (the file changed since PREP).
var lineSites = []struct {
	mod, file, line int
	hits            uint64
}{
	{0, 0, 5, 10}, {0, 0, 6, 10}, {0, 0, 7, 10}, {0, 0, 10, 1}, {0, 0, 11, 1},
	{0, 0, 12, 1}, {0, 0, 13, 10}, {0, 0, 14, 1}, {0, 0, 15, 0}, {0, 0, 16, 1},
	{0, 0, 17, 1}, {0, 0, 18, 1}, {0, 0, 20, 2},
	{0, 1, 2, 3}, {0, 1, 3, 3}, {0, 1, 4, 3},
	{1, 0, 2, 4}, {1, 0, 3, 4}, {1, 0, 4, 4},
}

func lineHits(coverage bool) []uint64 {
	var hits []uint64
	for _, l := range lineSites {
		h := l.hits
		if coverage {
			h = min(h, 1)
		}
		hits = append(hits, h)
	}
	return hits
}

// linuxInputs build the inputs of the Linux goldens.
var linuxInputs = map[string]func() *datafile.Merged{
	// Line counting of one run.
	"lines": func() *datafile.Merged {
		return seal(&datafile.Merged{Plan: linePlan(datafile.LineCounting),
			Runs: []datafile.Run{at0907(0, "lprog")}, Stats: datafile.Stats{Hits: lineHits(false)}})
	},
	// Line coverage of one run.
	"linecov": func() *datafile.Merged {
		return seal(&datafile.Merged{Plan: linePlan(datafile.LineCoverage),
			Runs: []datafile.Run{at0907(0, "lprog")}, Stats: datafile.Stats{Hits: lineHits(true)}})
	},
	// Line coverage with branches, of two runs (branchCoverage).
	"branchcov": branchCoverage,
	// Function counting of two runs of a C/C++ program and its Rust library.
	"cpprust": func() *datafile.Merged {
		return seal(&datafile.Merged{Plan: demoPlan(datafile.FuncCounting),
			Runs:  []datafile.Run{at0907(0, "prog --fast input.txt"), at0907(65, "prog input.txt")},
			Stats: datafile.Stats{Hits: scaled(demoHits, 2), CallDepth: 4}})
	},
	// Function coverage of the same program: one hit per function and run.
	"coverage": func() *datafile.Merged {
		hits := make([]uint64, len(demoHits))
		for i, h := range demoHits {
			hits[i] = min(h, 1)
		}
		return seal(&datafile.Merged{Plan: demoPlan(datafile.FuncCoverage),
			Runs:  []datafile.Run{at0907(0, "prog")},
			Stats: datafile.Stats{Hits: hits, CallDepth: 4}})
	},
	// Function timing with /SF main and /CB 40: 2.5 ms inside functions.
	"timing": func() *datafile.Merged {
		p := demoPlan(datafile.FuncTiming)
		p.StartFunc, p.StartIndex, p.Calibration = "main", 0, 40
		m := &datafile.Merged{Plan: p, Runs: []datafile.Run{at0907(0, "prog data.bin")},
			Stats: datafile.Stats{Hits: demoHits, CallDepth: 4,
				TotalTime: 3_000_000, OutsideTime: 500_000,
				//        main     twice(i) twice(d) Counter  bump    value   max     helper _start add      mul      helper ver
				FuncTime:  []int64{100_000, 62_500, 12_000, 1_000, 24_000, 500, 3_000, 0, 0, 1_800_000, 480_000, 0, 17_000},
				ChildTime: []int64{2_500_000, 62_500, 300_000, 1_000, 24_000, 500, 150_000, 0, 0, 1_800_000, 480_000, 0, 17_000}}}
		m = seal(m)
		m.Overheads = []int64{37}
		return m
	},
	// Timing of threads that ran side by side (docs/linux.md,
	// "Timing"): the total time is the three threads' lives added up, 3.6
	// ms for a run of 1.1 ms, and each function's percentage is of the
	// time within outermost calls, 3.5 ms of it.
	"sidebyside": func() *datafile.Merged {
		p := demoPlan(datafile.FuncTiming)
		m := &datafile.Merged{Plan: p, Runs: []datafile.Run{at0907(0, "prog -j4")},
			Stats: datafile.Stats{Hits: demoHits, CallDepth: 4,
				TotalTime: 3_600_000, OutsideTime: 100_000,
				//        main     twice(i) twice(d) Counter  bump    value   max     helper _start add      mul      helper ver
				FuncTime:  []int64{10_000, 0, 0, 0, 0, 0, 0, 0, 0, 1_500_000, 1_000_000, 0, 0},
				ChildTime: []int64{1_000_000, 0, 0, 0, 0, 0, 0, 0, 0, 1_500_000, 1_000_000, 0, 0}}}
		m = seal(m)
		m.Overheads = []int64{12}
		return m
	},
	// Function timing with the books kept in the program, whose run
	// states its cost's uncertainty, 5 µs a call (docs/linux.md,
	// "Timing"): the functions whose own time per call is below it are
	// marked (Counter, bump, value, max), the others are not, and the
	// tab-delimited records are the original's.
	"uncertain": func() *datafile.Merged {
		p := demoPlan(datafile.FuncTiming)
		m := &datafile.Merged{Plan: p, Runs: []datafile.Run{at0907(0, "prog data.bin")},
			Stats: datafile.Stats{Hits: demoHits, CallDepth: 4,
				TotalTime: 3_000_000, OutsideTime: 500_000, CostUncertainty: 5_000,
				//        main     twice(i) twice(d) Counter  bump    value   max     helper _start add      mul      helper ver
				FuncTime:  []int64{100_000, 62_500, 12_000, 1_000, 24_000, 500, 3_000, 0, 0, 1_800_000, 480_000, 0, 17_000},
				ChildTime: []int64{2_500_000, 62_500, 300_000, 1_000, 24_000, 500, 150_000, 0, 0, 1_800_000, 480_000, 0, 17_000}}}
		m = seal(m)
		m.Overheads = []int64{20}
		return m
	},
	// Function timing of a run whose threads mostly waited (docs/linux.md,
	// "Timing"): on a CPU 0.6 ms of its 3 ms, 20 %. The Program
	// Statistics say so in one line; the tab-delimited records are the
	// original's.
	"waited": func() *datafile.Merged {
		p := demoPlan(datafile.FuncTiming)
		m := &datafile.Merged{Plan: p, Runs: []datafile.Run{at0907(0, "prog data.bin")},
			Stats: datafile.Stats{Hits: demoHits, CallDepth: 4,
				TotalTime: 3_000_000, OutsideTime: 500_000, CPUTime: 600_000,
				//        main     twice(i) twice(d) Counter  bump    value   max     helper _start add      mul      helper ver
				FuncTime:  []int64{100_000, 62_500, 12_000, 1_000, 24_000, 500, 3_000, 0, 0, 1_800_000, 480_000, 0, 17_000},
				ChildTime: []int64{2_500_000, 62_500, 300_000, 1_000, 24_000, 500, 150_000, 0, 0, 1_800_000, 480_000, 0, 17_000}}}
		m = seal(m)
		m.Overheads = []int64{37}
		return m
	},
	// Function timing with /AT of a run that measured each call's time
	// on a CPU (docs/linux.md, "Timing"): add waited 1.5 of its 1.8 ms
	// (a read), mul 0.3 of its 0.48, main 40 of its own 100 µs; main, the
	// outermost call, waited 1.846 ms of its 2.5. Its threads were on a
	// CPU 0.8 ms of the 3 ms. Listed with --time=cpu, the times are
	// those less the waits, of 0.654 ms inside, 0.8 ms in all.
	"oncpu": oncpu,
	// A timing profile that was never run (PRF4481).
	"never": func() *datafile.Merged {
		n := len(demoHits)
		return seal(&datafile.Merged{Plan: demoPlan(datafile.FuncTiming),
			Stats: datafile.Stats{Hits: make([]uint64, n), FuncTime: make([]int64, n), ChildTime: make([]int64, n)}})
	},
	// A complete run and one the program did not finish.
	"incomplete": func() *datafile.Merged {
		killed := at0907(30, "prog big.txt")
		killed.Incomplete, killed.Reason = true, "killed by signal SIGKILL"
		hits := scaled(demoHits, 1)
		hits[9] += 17
		return seal(&datafile.Merged{Plan: demoPlan(datafile.FuncCounting),
			Runs:  []datafile.Run{at0907(0, "prog small.txt"), killed},
			Stats: datafile.Stats{Hits: hits, CallDepth: 4}})
	},
	// Attribution (/AT): main calls twice(int) 5 times; add is called by
	// mul, itself called by main (two stacks differing deeper down), and by
	// main directly.
	"attribution": func() *datafile.Merged {
		p := demoPlan(datafile.FuncCounting)
		p.Attribution = true
		return seal(&datafile.Merged{Plan: p, Runs: []datafile.Run{at0907(0, "prog")},
			Stats: datafile.Stats{Hits: demoHits, CallDepth: 4, Stacks: []datafile.Stack{
				{Func: 0, Callers: []int{-1}, Hits: 1},
				{Func: 1, Callers: []int{-1, 0}, Hits: 5},
				{Func: 9, Callers: []int{0, 10}, Key: 1, Hits: 20},
				{Func: 9, Callers: []int{-1, 0}, Hits: 12},
				{Func: 9, Callers: []int{0, 10}, Key: 2, Hits: 8},
				{Func: 10, Callers: []int{-1, 0}, Hits: 12},
			}}})
	},
	// A Go program: package paths as sources, names as they are.
	"golang": func() *datafile.Merged {
		return seal(&datafile.Merged{
			Plan: datafile.Plan{Method: datafile.FuncCounting, StartIndex: -1, Calibration: -1,
				Modules: []datafile.Module{{Name: "gosrv", Arch: "arm64"}},
				Funcs: []datafile.Func{
					{Name: "main.main", Source: "main"},
					{Name: "main.(*server).handle", Source: "main"},
					{Name: "example.com/kv/store.(*DB).Get", Source: "example.com/kv/store"},
					{Name: "example.com/kv/store.Open", Source: "example.com/kv/store"},
				}},
			Runs:  []datafile.Run{at0907(0, "gosrv -port 8080")},
			Stats: datafile.Stats{Hits: []uint64{1, 250, 1000, 1}, CallDepth: 3}})
	},
}

// linuxGoldens are the reports checked per input: the options' name in the
// golden's file name, and how they differ from DefaultOptions.
var linuxGoldens = []struct {
	input, name string
	set         func(*Options)
}{
	{"cpprust", "default", nil},
	{"cpprust", "sn", func(o *Options) { o.Sort = SortName }},
	{"cpprust", "sns", func(o *Options) { o.Sort = SortNameSummary }},
	{"cpprust", "c0", func(o *Options) { o.MinCount = 0 }},
	{"cpprust", "c5", func(o *Options) { o.MinCount = 5 }},
	{"cpprust", "l", func(o *Options) { o.Mangled = true }},
	{"cpprust", "st", func(o *Options) { o.Sort = SortTime }},
	{"cpprust", "pw30", func(o *Options) { o.PageWidth, o.PageWidthGiven = 30, true }},
	{"cpprust", "pl16", func(o *Options) { o.PageLength = 16 }},
	{"cpprust", "t", func(o *Options) { o.Tab = true }},
	{"cpprust", "l-t", func(o *Options) { o.Tab, o.Mangled = true, true }},
	{"cpprust", "f-t", func(o *Options) { o.Tab, o.FullPaths = true, true }},
	{"coverage", "default", nil},
	{"coverage", "sc", func(o *Options) { o.Sort = SortCount }},
	{"coverage", "sns", func(o *Options) { o.Sort = SortNameSummary }},
	{"coverage", "t", func(o *Options) { o.Tab = true }},
	{"timing", "default", nil},
	{"sidebyside", "default", nil},
	{"uncertain", "default", nil},
	{"uncertain", "t", func(o *Options) { o.Tab = true }},
	{"waited", "default", nil},
	{"waited", "t", func(o *Options) { o.Tab = true }},
	{"oncpu", "default", nil},
	{"oncpu", "cpu", func(o *Options) { o.Time = TimeCPU }},
	{"oncpu", "cpu-t", func(o *Options) { o.Time, o.Tab = TimeCPU, true }},
	{"oncpu", "cpu-flat", func(o *Options) { o.Time, o.Flat = TimeCPU, true }},
	{"timing", "stc", func(o *Options) { o.Sort = SortChildTime }},
	{"timing", "sc", func(o *Options) { o.Sort = SortCount }},
	{"timing", "sn", func(o *Options) { o.Sort = SortName }},
	{"timing", "sns", func(o *Options) { o.Sort = SortNameSummary }},
	{"timing", "c2", func(o *Options) { o.MinCount = 2 }},
	{"timing", "sl", func(o *Options) { o.Sort = SortLine }},
	{"timing", "t", func(o *Options) { o.Tab = true }},
	{"never", "default", nil},
	{"never", "t", func(o *Options) { o.Tab = true }},
	{"incomplete", "default", nil},
	{"incomplete", "t", func(o *Options) { o.Tab = true }},
	{"attribution", "default", nil},
	{"attribution", "flat", func(o *Options) { o.Flat = true }},
	{"attribution", "tab4-sn", func(o *Options) { o.TabWidth, o.Sort = 4, SortName }},
	{"attribution", "sns", func(o *Options) { o.Sort = SortNameSummary }},
	{"attribution", "c5", func(o *Options) { o.MinCount = 5 }},
	{"attribution", "t", func(o *Options) { o.Tab = true }},
	{"attribution", "l-t", func(o *Options) { o.Tab, o.Mangled = true, true }},
	{"lines", "default", nil},
	{"lines", "d", func(o *Options) { o.SourceDirs = []string{"testdata/src"} }},
	{"lines", "sc", func(o *Options) { o.Sort = SortCount }},
	{"lines", "sls", func(o *Options) { o.Sort = SortLineSummary }},
	{"lines", "sn", func(o *Options) { o.Sort = SortName }},
	{"lines", "pw24", func(o *Options) { o.PageWidth, o.PageWidthGiven = 24, true }},
	{"lines", "pl16", func(o *Options) { o.PageLength = 16 }},
	{"lines", "t", func(o *Options) { o.Tab = true }},
	{"lines", "f-t", func(o *Options) { o.Tab, o.FullPaths = true, true }},
	{"linecov", "default", nil},
	{"linecov", "sc", func(o *Options) { o.Sort = SortCount }},
	{"linecov", "t", func(o *Options) { o.Tab = true }},
	{"branchcov", "default", nil},
	{"branchcov", "sc", func(o *Options) { o.Sort = SortCount }},
	{"branchcov", "t", func(o *Options) { o.Tab = true }},
	{"golang", "default", nil},
	{"golang", "t", func(o *Options) { o.Tab = true }},
}

func TestLinuxGoldens(t *testing.T) {
	if *update {
		for name, build := range linuxInputs {
			var b bytes.Buffer
			if err := datafile.WriteText(&b, build()); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join("testdata", name+".pbt.json"), b.Bytes())
		}
	}
	for _, g := range linuxGoldens {
		t.Run(g.input+"."+g.name, func(t *testing.T) {
			m := readInput(t, g.input)
			o := DefaultOptions()
			if g.set != nil {
				g.set(&o)
			}
			o.Now = linuxNow
			o.Path = g.input + ".pbt"
			var out bytes.Buffer
			o.Warn = func(d *prf.Diagnostic) { prf.Write(&out, "plist", d) }
			if err := Generate(&out, m, o); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			compareGolden(t, filepath.Join("testdata", g.input+"."+g.name+".golden"), out.Bytes())
		})
	}
}

// TestLinuxInputsCurrent checks that the committed inputs are what the
// builders make, so that neither drifts from the other.
func TestLinuxInputsCurrent(t *testing.T) {
	for name, build := range linuxInputs {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := datafile.WriteText(&b, build()); err != nil {
				t.Fatal(err)
			}
			have, err := os.ReadFile(filepath.Join("testdata", name+".pbt.json"))
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(have, b.Bytes()) {
				t.Errorf("testdata/%s.pbt.json differs from its builder; run go test -update", name)
			}
		})
	}
}

// readInput reads testdata/NAME.pbt.json.
func readInput(t *testing.T, name string) *datafile.Merged {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".pbt.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := datafile.ReadText(f)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	m, ok := v.(*datafile.Merged)
	if !ok {
		t.Fatalf("read %s: %T, want a merged profile", name, v)
	}
	return m
}

// compareGolden compares got with the golden file, or rewrites it with
// -update.
func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		writeFile(t, path, got)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLeftOutHeader: what the default selection left out (Plan.LeftOut)
// is said in the header, after the date, with the option that profiles
// it; a profile that left nothing out has the original's header.
func TestLeftOutHeader(t *testing.T) {
	m := &datafile.Merged{
		Plan: datafile.Plan{Method: datafile.LineCounting, StartIndex: -1,
			Modules: []datafile.Module{{Name: "gofmt", Files: []string{"/nonexistent/main.go"}}},
			Lines:   []datafile.Line{{File: 0, Line: 3, Addrs: []uint64{0x100}}},
			LeftOut: []datafile.LeftOut{{What: "the Go runtime and standard library", Funcs: 5884, Include: "/INC runtime, /INC 'fmt.*'"}},
		},
		Runs:      []datafile.Run{{Time: 1795600000, CommandLine: "gofmt x.go"}},
		Overheads: []int64{0},
		Stats:     datafile.Stats{Hits: []uint64{1}},
	}
	m.Plan.ID = datafile.PlanID(&m.Plan)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	if err := Generate(&buf, m, o); err != nil {
		t.Fatal(err)
	}
	want := "Profile: Line counting, sorted by line\n" +
		"Date:    Sat Nov 28 12:00:00 2026\n" +
		"Left out: 5,884 functions of the Go runtime and standard library, by profiler.ini (prep /INC runtime, /INC 'fmt.*'... profiles them)\n\n\n"
	if got := buf.String(); !strings.HasPrefix(got, want) {
		t.Errorf("listing:\n%s\nwant it to begin\n%s", got, want)
	}
	m.Plan.LeftOut = nil
	buf.Reset()
	if err := Generate(&buf, m, o); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); !strings.HasPrefix(got, "Profile: Line counting, sorted by line\nDate:    Sat Nov 28 12:00:00 2026\n\n\nProgram Statistics\n") {
		t.Errorf("listing without LeftOut:\n%s", got)
	}
	if g := grouped(1234567); g != "1,234,567" {
		t.Errorf("grouped(1234567) = %q", g)
	}
}

// TestWaitedLine: the line that the threads mostly waited is printed when
// they were on a CPU less than half the total time, and not at half, nor
// where the run did not measure it (0).
func TestWaitedLine(t *testing.T) {
	for _, c := range []struct {
		cpu  int64
		want string
	}{
		{600_000, "    Threads on a CPU 20.0% of the total time: the times are elapsed, waits included; function sampling (/FS) shows where the CPU time went\n"},
		{1_499_999, "    Threads on a CPU 50.0% of the total time:"},
		{1_500_000, ""},
		{2_900_000, ""},
		{0, ""},
	} {
		m := linuxInputs["waited"]()
		m.Stats.CPUTime = c.cpu
		var buf bytes.Buffer
		if err := Generate(&buf, m, DefaultOptions()); err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(buf.String(), "Threads on a CPU")
		if got != (c.want != "") || !strings.Contains(buf.String(), c.want) {
			t.Errorf("CPU time %d of 3,000,000: the line printed %v, want %q", c.cpu, got, c.want)
		}
	}
}
