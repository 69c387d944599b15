package plist

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// The function sampling profiles of the tests are those of
// testdata/src/sampling.c, whose functions get samples and calls of the
// tests' own (samplingFuncs): a profile built from the program's ELF
// (TestSamplingELF), with its real addresses, and the same profile at the
// addresses of one gcc -O0 build (samplingLayoutGCC), which the goldens
// are made of. The listings show no address: both give the same reports.

// sampledFunc is a function of sampling.c with its figures in one run
// sampled every millisecond: samples by line, samples on no line (at its
// entry), calls.
type sampledFunc struct {
	name  string
	decl  int // the line of its declaration
	lines map[int]uint64
	off   uint64
	hits  uint64
}

// samplingFuncs are sampling.c's functions: spin_a 1,500 samples (1.5 s
// at 1 ms), spin_b 700, main 30.
var samplingFuncs = []sampledFunc{
	{"spin_a", 6, map[int]uint64{8: 400, 9: 1080}, 20, 3},
	{"spin_b", 12, map[int]uint64{14: 200, 15: 480, 16: 15}, 5, 1},
	{"main", 19, map[int]uint64{21: 25}, 5, 1},
}

// The other figures of the run: the library function calc (no lines),
// called 7 times by spin_b, the samples outside the profiled functions,
// those in PROFILE's counting (in no time), and what the sampler lost
// and could not see.
const (
	calcSamples     = 40
	calcHits        = 7
	outsideSample   = 230
	profilerSamples = 25
	lostSamples     = 12
	kernelTime      = 3_500_000
)

// funcLayout is a function's code: its range and the starts of each of its
// lines' code ranges.
type funcLayout struct {
	low, high uint64
	lines     map[int][]uint64
}

// samplingLayout is the code of sampling.c's functions, by name.
type samplingLayout map[string]funcLayout

// samplingLayoutGCC is sampling.c's code as gcc 12 -O0 -g -no-pie laid
// it out on x86-64.
var samplingLayoutGCC = samplingLayout{
	"spin_a": {0x401106, 0x401140, map[int][]uint64{
		7: {0x401106}, 8: {0x40110e, 0x40112d}, 9: {0x401118}, 10: {0x40113c}}},
	"spin_b": {0x401140, 0x40118d, map[int][]uint64{
		13: {0x401140}, 14: {0x401148, 0x401164}, 15: {0x401152}, 16: {0x401173}, 17: {0x40118a}}},
	"main": {0x40118d, 0x4011c3, map[int][]uint64{
		20: {0x40118d}, 21: {0x401195, 0x4011a8}, 22: {0x40119e}, 23: {0x4011b2}, 24: {0x4011bc}, 25: {0x4011c1}}},
}

// samplingRun says how a profile of sampling.c was taken.
type samplingRun struct {
	// attribution is /AT; pie, arch and path describe the program.
	attribution bool
	pie         bool
	arch, path  string
	// interval is the sampling interval (ns); every figure of a run at 1
	// ms is multiplied by scale, so that the times stay the same.
	interval int64
	scale    uint64
}

// samplingProfile returns the database of one run of sampling.c laid out
// as lay, with the figures of samplingFuncs.
func samplingProfile(lay samplingLayout, sr samplingRun) *datafile.Merged {
	p := datafile.Plan{Method: datafile.FuncSampling, StartIndex: -1, Calibration: -1, Attribution: sr.attribution,
		Modules: []datafile.Module{
			{Name: "sampling", Path: sr.path, Arch: sr.arch, PIE: sr.pie, Files: []string{"src/sampling.c"}, CompDirs: []string{"testdata"}},
			{Name: "libcalc.so.1", Path: "/opt/sampling/lib/libcalc.so.1", Arch: sr.arch, PIE: true},
		}}
	st := datafile.Stats{CallDepth: 3}
	sm := &st.Sampling
	sm.Interval, sm.Sampler = sr.interval, datafile.PerfSampler
	for _, sf := range samplingFuncs {
		fl := lay[sf.name]
		p.Funcs = append(p.Funcs, datafile.Func{Name: sf.name, Source: "sampling.o", Entry: fl.low, Low: fl.low, High: fl.high,
			File: "src/sampling.c", Line: sf.decl})
		n := sf.off
		for _, line := range slices.Sorted(maps.Keys(fl.lines)) {
			p.Lines = append(p.Lines, datafile.Line{Line: line, Addrs: fl.lines[line]})
			sm.LineSamples = append(sm.LineSamples, sf.lines[line]*sr.scale)
			n += sf.lines[line]
		}
		st.Hits = append(st.Hits, sf.hits)
		sm.Samples = append(sm.Samples, n*sr.scale)
	}
	p.Funcs = append(p.Funcs, datafile.Func{Module: 1, Name: "calc", Source: "libcalc.so.1", Entry: 0x1120, Low: 0x1120, High: 0x1180})
	st.Hits = append(st.Hits, calcHits)
	sm.Samples = append(sm.Samples, calcSamples*sr.scale)
	sm.Outside, sm.Lost, sm.KernelTime = outsideSample*sr.scale, lostSamples*sr.scale, kernelTime
	sm.Overhead = profilerSamples * sr.scale
	total := sm.Outside
	for _, n := range sm.Samples {
		st.FuncTime = append(st.FuncTime, int64(n)*sr.interval)
		total += n
	}
	st.TotalTime, st.OutsideTime = int64(total)*sr.interval, int64(sm.Outside)*sr.interval
	st.ChildTime = slices.Clone(st.FuncTime)
	if sr.attribution {
		// main calls spin_a 3 times and spin_b once, spin_b calls calc 7
		// times: the time with children propagates along those calls.
		const spinA, spinB, main, calc = 0, 1, 2, 3
		ft := st.FuncTime
		st.ChildTime[spinB] = ft[spinB] + ft[calc]
		st.ChildTime[main] = ft[main] + ft[spinA] + st.ChildTime[spinB]
		for _, s := range []datafile.Stack{
			{Func: main, Callers: []int{-1}, Hits: 1},
			{Func: spinA, Callers: []int{-1, main}, Hits: 3},
			{Func: spinB, Callers: []int{-1, main}, Hits: 1},
			{Func: calc, Callers: []int{main, spinB}, Hits: calcHits},
		} {
			s.Time, s.ChildTime = st.FuncTime[s.Func], st.ChildTime[s.Func]
			st.Stacks = append(st.Stacks, s)
		}
	}
	return seal(&datafile.Merged{Plan: p, Runs: []datafile.Run{at0907(0, "sampling")}, Stats: st})
}

// gccRun is the run of the goldens: sampled every millisecond.
var gccRun = samplingRun{arch: "amd64", path: "/opt/sampling/bin/sampling", interval: 1_000_000, scale: 1}

// gccRunAT is gccRun with /AT.
var gccRunAT = samplingRun{attribution: true, arch: "amd64", path: "/opt/sampling/bin/sampling", interval: 1_000_000, scale: 1}

// neverSampled is a sampling database that no run was merged into.
func neverSampled() *datafile.Merged {
	m := samplingProfile(samplingLayoutGCC, gccRun)
	return datafile.NewMerged(&m.Plan)
}

// uncountedSampling is a run of sampling.c that counted no call (prep
// --no-call-counts): its samples, every hit count 0.
func uncountedSampling() *datafile.Merged {
	m := samplingProfile(samplingLayoutGCC, gccRun)
	m.Plan.Uncounted = true
	clear(m.Stats.Hits)
	m.Stats.CallDepth = 0
	m.Plan.ID = datafile.PlanID(&m.Plan)
	return m
}

// stackedSampling is a run of sampling.c whose samples' stacks were
// unwound (function sampling without /AT): main's samples at the stack
// base; spin_a's and spin_b's under main; calc's under spin_b under
// main; of the samples outside the profiled functions, stackedOutside
// were in code spin_b called (time with children, no function's own);
// stackedCut stacks not unwound to their end. The kernel was sampled
// too: 5 of main's samples and 50 of spin_b's were taken in system calls
// their code made, and 30 of those outside, in the C library's read that
// spin_b called.
func stackedSampling() *datafile.Merged {
	m := samplingProfile(samplingLayoutGCC, gccRun)
	st := &m.Stats
	const spinA, spinB, main, calc = 0, 1, 2, 3
	ft, iv := st.FuncTime, st.Sampling.Interval
	st.ChildTime[spinB] = ft[spinB] + ft[calc] + stackedOutside*iv
	st.ChildTime[main] = ft[main] + ft[spinA] + st.ChildTime[spinB]
	for _, s := range []datafile.Stack{
		{Func: main, Callers: []int{-1}, Key: 1},
		{Func: spinA, Callers: []int{-1, main}, Key: 2, CallerKey: 1},
		{Func: spinB, Callers: []int{-1, main}, Key: 3, CallerKey: 1},
		{Func: calc, Callers: []int{main, spinB}, Key: 4, CallerKey: 3},
	} {
		s.Time, s.ChildTime = st.FuncTime[s.Func], st.ChildTime[s.Func]
		st.Stacks = append(st.Stacks, s)
	}
	var all uint64
	for _, n := range st.Sampling.Samples {
		all += n
	}
	st.Sampling.Stacks, st.Sampling.StacksCut = all+st.Sampling.Outside, stackedCut
	st.Sampling.Kernel, st.Sampling.KernelTime = 85, 0
	st.Sampling.KernelSamples = make([]uint64, len(m.Plan.Funcs))
	st.Sampling.KernelChildSamples = make([]uint64, len(m.Plan.Funcs))
	st.Sampling.KernelSamples[main], st.Sampling.KernelSamples[spinB] = 5, 50
	st.Sampling.KernelChildSamples[main], st.Sampling.KernelChildSamples[spinB] = 85, 80
	return m
}

// The sampled stacks' figures of stackedSampling.
const (
	stackedOutside = 30
	stackedCut     = 12
)

func init() {
	linuxInputs["sampling-stacks"] = stackedSampling
	linuxInputs["sampling"] = func() *datafile.Merged { return samplingProfile(samplingLayoutGCC, gccRun) }
	linuxInputs["sampling-uncounted"] = uncountedSampling
	linuxInputs["sampling-at"] = func() *datafile.Merged { return samplingProfile(samplingLayoutGCC, gccRunAT) }
	linuxInputs["sampling-never"] = neverSampled
	linuxGoldens = append(linuxGoldens, []struct {
		input, name string
		set         func(*Options)
	}{
		{"sampling", "default", nil},
		{"sampling", "stc", func(o *Options) { o.Sort = SortChildTime }},
		{"sampling", "sc", func(o *Options) { o.Sort = SortCount }},
		{"sampling", "sns", func(o *Options) { o.Sort = SortNameSummary }},
		{"sampling", "sl", func(o *Options) { o.Sort = SortLine }},
		{"sampling", "pl16", func(o *Options) { o.PageLength = 16 }},
		{"sampling", "t", func(o *Options) { o.Tab = true }},
		{"sampling-at", "default", nil},
		{"sampling-at", "flat", func(o *Options) { o.Flat = true }},
		{"sampling-at", "t", func(o *Options) { o.Tab = true }},
		{"sampling-never", "default", nil},
		{"sampling-never", "t", func(o *Options) { o.Tab = true }},
		{"sampling-uncounted", "default", nil},
		{"sampling-stacks", "default", nil},
		{"sampling-stacks", "flat", func(o *Options) { o.Flat = true }},
		{"sampling-stacks", "t", func(o *Options) { o.Tab = true }},
	}...)
}

// samplingGoldens are the goldens TestSamplingELF compares its reports
// with: the listing, /T and the /AT listing.
var samplingGoldens = []struct {
	golden      string
	attribution bool
	tab         bool
}{
	{"sampling.default.golden", false, false},
	{"sampling.t.golden", false, true},
	{"sampling-at.default.golden", true, false},
}

// TestSamplingELF builds sampling.c with gcc -O0 -g, as a position-
// dependent and as a PIE program, makes its sampling profile from the
// addresses of its ELF symbols and line table, and checks PLIST's reports
// against the goldens, the gmon.out against what GNU gprof reads of it,
// and the pprof profile against what github.com/google/pprof and go tool
// pprof read. The PIE build is sampled every 10 microseconds with a
// hundred times the samples: its bins overflow 16 bits, its times are the
// same, and its histogram is cut in records of 8 bins.
func TestSamplingELF(t *testing.T) {
	testutil.MustHaveTool(t, testutil.CC())
	for _, v := range []struct {
		name  string
		flags []string
		run   samplingRun
	}{
		{"nopie", []string{"-no-pie"}, samplingRun{interval: 1_000_000, scale: 1}},
		{"pie", []string{"-pie", "-fPIE"}, samplingRun{interval: 10_000, scale: 100, pie: true}},
	} {
		t.Run(v.name, func(t *testing.T) {
			if v.run.pie {
				// Histogram records of 8 bins: gprof adds up the repeated
				// records of the hot ones.
				defer func(n int) { gmonChunk = n }(gmonChunk)
				gmonChunk = 8
			}
			prog := filepath.Join(t.TempDir(), "sampling")
			args := append([]string{"-O0", "-g"}, v.flags...)
			cmd := exec.Command(testutil.CC(), append(args, "-o", prog, filepath.Join("testdata", "src", "sampling.c"))...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", cmd, err, out)
			}
			lay, pie, arch := elfLayout(t, prog)
			if pie != v.run.pie {
				t.Fatalf("PIE %v, want %v", pie, v.run.pie)
			}
			for _, at := range []bool{false, true} {
				sr := v.run
				sr.attribution, sr.arch, sr.path = at, arch, prog
				m := samplingProfile(lay, sr)
				if err := m.Validate(); err != nil {
					t.Fatal(err)
				}
				name := map[bool]string{false: "fs", true: "fs-at"}[at]
				t.Run(name, func(t *testing.T) {
					if sr.scale == 1 {
						checkSamplingGoldens(t, m)
					}
					checkGprof(t, prog, m)
					checkPprof(t, m)
				})
			}
		})
	}
}

// elfLayout reads the code of sampling.c's functions from the program at
// path: their symbols' ranges and the starts of their lines' ranges in
// the line table. It also says whether the program is a PIE and its
// GOARCH.
func elfLayout(t *testing.T, path string) (samplingLayout, bool, string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	arch := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
	if arch == "" {
		t.Skipf("no gmon.out layout for %v here", f.Machine)
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	lay := samplingLayout{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && slices.ContainsFunc(samplingFuncs, func(sf sampledFunc) bool { return sf.name == s.Name }) {
			lay[s.Name] = funcLayout{low: s.Value, high: s.Value + s.Size, lines: map[int][]uint64{}}
		}
	}
	funcOf := func(a uint64) string {
		for name, fl := range lay {
			if fl.low <= a && a < fl.high {
				return name
			}
		}
		return ""
	}
	d, err := f.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			break
		}
		if e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(e)
		if err != nil || lr == nil {
			continue
		}
		prev := -1
		var le dwarf.LineEntry
		for {
			if err := lr.Next(&le); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatal(err)
			}
			name := funcOf(le.Address)
			if le.EndSequence || name == "" || filepath.Base(le.File.Name) != "sampling.c" {
				prev = -1
				continue
			}
			if le.Line != prev {
				lay[name].lines[le.Line] = append(lay[name].lines[le.Line], le.Address)
			}
			prev = le.Line
		}
		r.SkipChildren()
	}
	for _, sf := range samplingFuncs {
		for line := range sf.lines {
			if len(lay[sf.name].lines[line]) == 0 {
				t.Fatalf("%s: line %d of %s has no code", path, line, sf.name)
			}
		}
	}
	return lay, f.Type == elf.ET_DYN, arch
}

// checkSamplingGoldens compares the reports of m, built from an ELF, with
// those the goldens hold of the same profile at other addresses.
func checkSamplingGoldens(t *testing.T, m *datafile.Merged) {
	t.Helper()
	for _, g := range samplingGoldens {
		if g.attribution != m.Plan.Attribution {
			continue
		}
		o := DefaultOptions()
		o.Now, o.Path, o.Tab = linuxNow, "sampling.pbt", g.tab
		if g.attribution {
			o.Path = "sampling-at.pbt"
		}
		var out bytes.Buffer
		o.Warn = func(d *prf.Diagnostic) { prf.Write(&out, "plist", d) }
		if err := Generate(&out, m, o); err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("testdata", g.golden))
		if err != nil {
			t.Fatalf("%v (run go test -update)", err)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("the report of the ELF's profile differs from testdata/%s:\n%s", g.golden, out.Bytes())
		}
	}
}

// export writes m in format f and returns it with the warnings.
func export(t *testing.T, m *datafile.Merged, f Format) ([]byte, []string) {
	t.Helper()
	var warnings []string
	o := DefaultOptions()
	o.Format = f
	o.Warn = func(d *prf.Diagnostic) { warnings = append(warnings, prf.Line("plist", d)) }
	var out bytes.Buffer
	if err := Generate(&out, m, o); err != nil {
		t.Fatalf("Generate %v: %v", f, err)
	}
	return out.Bytes(), warnings
}

// funcFigures are the figures of a function as a consumer reads them.
type funcFigures struct {
	seconds string // gprof's self seconds, "%.2f"
	calls   string // gprof's calls column, "" when empty
}

// checkGprof writes m as gmon.out and checks the warnings, then, where
// gprof is installed, what gprof -b -p and -q read of it: each function's
// self seconds (samples x interval), the calls from profiled callers
// (with /AT; main, called from outside, is <spontaneous> and has none,
// as in gprof -pg's own files), no calls without /AT.
func checkGprof(t *testing.T, prog string, m *datafile.Merged) {
	t.Helper()
	out, warnings := export(t, m, FormatGmon)
	wantWarnings := []string{"plist: warning PRF4483: gmon.out leaves out the functions of libcalc.so.1: gprof reads the program's own functions only"}
	if !m.Plan.Attribution {
		wantWarnings = append(wantWarnings, "plist: warning PRF4484: gmon.out has no callers without /AT: gprof shows every function <spontaneous> and counts no calls")
	}
	if !slices.Equal(warnings, wantWarnings) {
		t.Errorf("warnings %q, want %q", warnings, wantWarnings)
	}
	if !testutil.HaveTool("gprof") {
		t.Log("gprof is not installed: gmon.out not read")
		return
	}
	gprof := "gprof"
	gmon := filepath.Join(t.TempDir(), "gmon.out")
	if err := os.WriteFile(gmon, out, 0o644); err != nil {
		t.Fatal(err)
	}
	flat := runTool(t, gprof, "-b", "-p", prog, gmon)
	got := parseGprofFlat(t, flat)
	want := map[string]funcFigures{}
	for i, f := range m.Plan.Funcs {
		if f.Module != 0 {
			continue
		}
		ff := funcFigures{seconds: fmt.Sprintf("%.2f", float64(m.Stats.FuncTime[i])/1e9)}
		if m.Plan.Attribution && f.Name != "main" {
			ff.calls = strconv.FormatUint(m.Stats.Hits[i], 10)
		}
		want[f.Name] = ff
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("gprof -p: %s has %+v, want %+v (samples x interval, calls)\n%s", name, got[name], w, flat)
		}
	}
	if w := "1.50"; want["spin_a"].seconds != w {
		t.Errorf("spin_a: %s seconds, want %s", want["spin_a"].seconds, w)
	}
	graph := runTool(t, gprof, "-b", "-q", prog, gmon)
	parents := parseGprofParents(graph)
	wantParents := map[string][]string{"main": {"<spontaneous>"}, "spin_a": {"main 3/3"}, "spin_b": {"main 1/1"}}
	if !m.Plan.Attribution {
		wantParents = map[string][]string{"main": {"<spontaneous>"}, "spin_a": {"<spontaneous>"}, "spin_b": {"<spontaneous>"}}
	}
	for name, w := range wantParents {
		if !slices.Equal(parents[name], w) {
			t.Errorf("gprof -q: %s called by %q, want %q\n%s", name, parents[name], w, graph)
		}
	}
}

// runTool runs a consumer and returns its standard output.
func runTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.Bytes())
	}
	return string(out)
}

// parseGprofFlat reads gprof's flat profile: per function its self
// seconds and its calls ("%6.2f %9.2f %8.2f %8lu %8.2f %8.2f  name", the
// last three numbers left out for a function without calls).
func parseGprofFlat(t *testing.T, out string) map[string]funcFigures {
	t.Helper()
	got := map[string]funcFigures{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 && len(f) != 7 {
			continue
		}
		if _, err := strconv.ParseFloat(f[0], 64); err != nil {
			continue
		}
		ff := funcFigures{seconds: f[2]}
		if len(f) == 7 {
			ff.calls = f[3]
		}
		got[f[len(f)-1]] = ff
	}
	return got
}

// parseGprofParents reads gprof's call graph: per function, its parents'
// lines ("name called/total", or "<spontaneous>").
func parseGprofParents(out string) map[string][]string {
	parents := map[string][]string{}
	var above []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "---"):
			above = nil
		case len(f) > 0 && strings.HasPrefix(f[0], "["):
			// The function's own line: "[n] %time self children called name [n]".
			if len(f) >= 2 {
				parents[f[len(f)-2]] = above
			}
			above = nil
		case len(f) == 1 && f[0] == "<spontaneous>":
			above = append(above, f[0])
		case len(f) >= 5 && strings.Contains(f[2], "/"):
			// "self children called/total name [n]"
			above = append(above, f[3]+" "+f[2])
		}
	}
	return parents
}

// checkPprof writes m as a pprof profile and reads it back: a CPU
// profile, each function with its samples and samples x interval
// nanoseconds (the listing's function time), each sampled line at its
// line; then go tool pprof -top, when go is on PATH, shows each
// function's time.
func checkPprof(t *testing.T, m *datafile.Merged) {
	t.Helper()
	out, _ := export(t, m, FormatPprof)
	p, err := profile.Parse(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("profile.Parse: %v", err)
	}
	iv := m.Stats.Sampling.Interval
	types := func(vt ...*profile.ValueType) (s []string) {
		for _, v := range vt {
			s = append(s, v.Type+"/"+v.Unit)
		}
		return s
	}
	if got, want := types(append(p.SampleType, p.PeriodType)...), []string{"samples/count", "cpu/nanoseconds", "cpu/nanoseconds"}; !slices.Equal(got, want) || p.Period != iv {
		t.Errorf("pprof: sample and period types %q, period %d; want %q, %d", got, p.Period, want, iv)
	}
	type figures struct{ samples, ns int64 }
	byFunc := map[string]figures{}
	byLine := map[string]int64{}
	for _, s := range p.Sample {
		if len(s.Location) != 1 || len(s.Location[0].Line) != 1 {
			t.Fatalf("sample %v: want a leaf of one line", s)
		}
		l := s.Location[0].Line[0]
		f := byFunc[l.Function.Name]
		f.samples += s.Value[0]
		f.ns += s.Value[1]
		byFunc[l.Function.Name] = f
		byLine[fmt.Sprintf("%s:%d", l.Function.Name, l.Line)] += s.Value[0]
	}
	for i, f := range m.Plan.Funcs {
		want := figures{int64(m.Stats.Sampling.Samples[i]), m.Stats.FuncTime[i]}
		if byFunc[f.Name] != want {
			t.Errorf("pprof: %s has %+v, want %+v", f.Name, byFunc[f.Name], want)
		}
	}
	scale := int64(m.Stats.Sampling.Samples[0] / 1500)
	for line, want := range map[string]int64{"spin_a:9": 1080, "spin_a:8": 400, "spin_a:6": 20, "spin_b:16": 15, "main:21": 25, "calc:0": 40} {
		if byLine[line] != want*scale {
			t.Errorf("pprof: %s has %d samples, want %d", line, byLine[line], want*scale)
		}
	}
	if !testutil.HaveTool("go") {
		return
	}
	file := filepath.Join(t.TempDir(), "sampling.pprof")
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
	top := runTool(t, "go", "tool", "pprof", "-top", "-unit=ms", file)
	for name, want := range map[string]string{"spin_a": "1500ms", "spin_b": "700ms", "main": "30ms", "calc": "40ms"} {
		found := false
		for _, line := range strings.Split(top, "\n") {
			if f := strings.Fields(line); len(f) == 6 && f[5] == name {
				found = f[0] == want
			}
		}
		if !found {
			t.Errorf("go tool pprof -top: %s's flat time is not %s\n%s", name, want, top)
		}
	}
}

// gmonText is the text form of a gmon.out that the export goldens hold:
// its header, each histogram's range, bin count, rate, unit and nonzero
// bins, each arc.
func gmonText(b []byte) (string, error) {
	var w strings.Builder
	le := binary.LittleEndian
	if len(b) < 20 || string(b[:4]) != "gmon" {
		return "", errors.New("no gmon header")
	}
	fmt.Fprintf(&w, "gmon version %d\n", le.Uint32(b[4:]))
	b = b[20:]
	for len(b) > 0 {
		tag := b[0]
		b = b[1:]
		switch tag {
		case gmonTagHist:
			if len(b) < 40 {
				return "", errors.New("short histogram header")
			}
			lo, hi, n, rate := le.Uint64(b), le.Uint64(b[8:]), int(le.Uint32(b[16:])), le.Uint32(b[20:])
			dim, abbrev := strings.TrimRight(string(b[24:39]), "\x00"), b[39]
			b = b[40:]
			if len(b) < 2*n {
				return "", errors.New("short histogram")
			}
			fmt.Fprintf(&w, "histogram [%#x, %#x) %d bins %d/%s (%c)\n", lo, hi, n, rate, dim, abbrev)
			for i := range n {
				if c := le.Uint16(b[2*i:]); c != 0 {
					fmt.Fprintf(&w, "  bin %d [%#x]: %d\n", i, lo+uint64(i)*(hi-lo)/uint64(n), c)
				}
			}
			b = b[2*n:]
		case gmonTagArc:
			if len(b) < 20 {
				return "", errors.New("short arc")
			}
			fmt.Fprintf(&w, "arc %#x -> %#x: %d\n", le.Uint64(b), le.Uint64(b[8:]), le.Uint32(b[16:]))
			b = b[20:]
		default:
			return "", fmt.Errorf("unknown tag %d", tag)
		}
	}
	return w.String(), nil
}

// TestGmonBins checks the histogram's records and bins: counts above
// 65,535 in repeated records of the same range that add up, only in the
// chunk of the histogram that needs them; samples at a line start
// spilling over the function's start taken inside it; and coarser bins
// for a large range.
func TestGmonBins(t *testing.T) {
	defer func(n int) { gmonChunk = n }(gmonChunk)
	gmonChunk = 2
	g := newGmonWriter("amd64")
	if err := g.histogram(0x1000, 0x1010, 1000, []uint64{0, 70000, 1, 65535}); err != nil {
		t.Fatal(err)
	}
	text, err := gmonText(g.buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := `gmon version 1
histogram [0x1000, 0x1008) 2 bins 1000/seconds (s)
  bin 1 [0x1004]: 65535
histogram [0x1000, 0x1008) 2 bins 1000/seconds (s)
  bin 1 [0x1004]: 4465
histogram [0x1008, 0x1010) 2 bins 1000/seconds (s)
  bin 0 [0x1008]: 1
  bin 1 [0x100c]: 65535
`
	if text != want {
		t.Errorf("histogram:\n%s\nwant\n%s", text, want)
	}
	if err := g.histogram(0, 8, 1000, []uint64{1 << 31, 0}); err == nil {
		t.Error("a bin of 2^31 samples: no error")
	}
	for _, tt := range []struct {
		addr, low, bin, fLow, fHigh, want uint64
	}{
		{0x100a, 0x1000, 4, 0x100a, 0x1040, 3},  // [0x1008, 0x100c) starts before the function
		{0x1009, 0x1000, 4, 0x1009, 0x1040, 2},  // which starts at 0x1008 for gprof
		{0x1010, 0x1000, 4, 0x1009, 0x1040, 4},  // inside
		{0x103f, 0x1000, 4, 0x1009, 0x1041, 15}, // the function ends at 0x1040 for gprof
		{0x103e, 0x1000, 4, 0x1009, 0x103f, 14}, // ... at 0x103e
		{0x1003, 0x1000, 4, 0x1003, 0x1007, 0},  // no bin fits: the address's
		{0x2000, 0x1000, 4, 0, 0, 0x400},        // unknown range
	} {
		if got := gmonBin(tt.addr, tt.low, tt.bin, tt.fLow, tt.fHigh); got != tt.want {
			t.Errorf("gmonBin(%#x, low %#x, function [%#x, %#x)) = %d, want %d", tt.addr, tt.low, tt.fLow, tt.fHigh, got, tt.want)
		}
	}
	m := samplingProfile(samplingLayoutGCC, gccRun)
	m.Plan.Funcs[1].Low, m.Plan.Funcs[1].High = 0x10000000, 0x10000010 // spin_b far away
	r := newReport(m, Options{})
	low, high, bin, err := gmonExport{r}.gmonRange()
	if err != nil || low != 0x401100 || bin != 0x100 || (high-low)/bin > gmonMaxBins {
		t.Errorf("gmonRange = %#x, %#x, %d, %v; want bins of 256 bytes from 0x401100", low, high, bin, err)
	}
	for _, f := range []datafile.Func{
		{Name: "end", Entry: 1<<64 - 2, Low: 1<<64 - 4, High: 1<<64 - 1},
		{Name: "past", Entry: 1<<64 - 1},
	} {
		m.Plan.Funcs[0] = f
		r := newReport(m, Options{})
		if low, high, bin, err := (gmonExport{r}).gmonRange(); err == nil {
			t.Errorf("function %s: gmonRange = %#x, %#x, %d, no error", f.Name, low, high, bin)
		}
		o := DefaultOptions()
		o.Format = FormatGmon
		if err := Generate(io.Discard, m, o); err == nil {
			t.Errorf("function %s: gmon.out written", f.Name)
		}
	}
}

// TestSampledExportsErrors: gmon.out refuses the profiles it cannot hold,
// and no format fails on a database that was never sampled.
func TestSampledExportsErrors(t *testing.T) {
	counting := readInput(t, "cpprust")
	o := DefaultOptions()
	o.Format = FormatGmon
	err := Generate(io.Discard, counting, o)
	if !errors.Is(err, errNotSampling) || !strings.Contains(err.Error(), "not function counting ones") {
		t.Errorf("gmon of function counting: %v", err)
	}
	never := neverSampled()
	if err := Generate(io.Discard, never, o); err == nil || !strings.Contains(err.Error(), "no sampling run") {
		t.Errorf("gmon of a database never sampled: %v", err)
	}
	for f := range Format(len(formatNames)) {
		if f == FormatGmon || f == FormatChrome { // (the timeline needs a trace: TestChromeNoTrace)
			continue
		}
		o.Format = f
		if err := Generate(io.Discard, never, o); err != nil {
			t.Errorf("%v of a database never sampled: %v", f, err)
		}
	}
}

// TestGmonMachines: gmon.out is written in the program's byte order,
// with addresses of its size.
func TestGmonMachines(t *testing.T) {
	for _, c := range []struct {
		arch string
		big  bool
		ptr  int
	}{{"amd64", false, 8}, {"arm64", false, 8}, {"386", false, 4}, {"mips", true, 4}, {"s390x", true, 8}} {
		g := newGmonWriter(c.arch)
		if big := g.order.String() == "BigEndian"; big != c.big || g.ptr != c.ptr {
			t.Errorf("%s: %s, %d-byte addresses; want big-endian %v, %d-byte", c.arch, g.order, g.ptr, c.big, c.ptr)
		}
	}
}
