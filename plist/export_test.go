package plist

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// exportCases are profiles whose figures are the original's goldens':
// the dll programs counted with /AT (caller stacks), ftime timed, and the
// dll programs' lines counted; and sampling.c sampled, with and without
// /AT.
func exportCases(t *testing.T) map[string]*datafile.Merged {
	t.Helper()
	// The caller stacks of a run of dllhost with /AT, as PROFILE records
	// them: each function's nearest profiled callers, outermost first, -1
	// the stack base, and the key of the caller's own stack. (Functions: 0
	// _main, 1 _local_work, 2 and 3 the EXE's thunks _lib_add and
	// _lib_twice, 4 _helper, 5 _lib_add, 6 _lib_twice.) A call through a
	// thunk is the library function's caller's: the thunk does not nest.
	// The keys here are the stacks' places from 1.
	dllAT := functions(dll, datafile.FuncCounting, dllhostRun)("")
	dllAT.Plan.Attribution = true
	for _, s := range []datafile.Stack{
		{Func: 0, Callers: []int{-1}, Hits: 1},
		{Func: 1, Callers: []int{-1, 0}, CallerKey: 1, Hits: 1},
		{Func: 2, Callers: []int{0, 1}, CallerKey: 2, Hits: 4},
		{Func: 3, Callers: []int{-1, 0}, CallerKey: 1, Hits: 2},
		{Func: 4, Callers: []int{1, 5}, CallerKey: 7, Hits: 4},
		{Func: 4, Callers: []int{6, 5}, CallerKey: 8, Hits: 2},
		{Func: 5, Callers: []int{0, 1}, CallerKey: 2, Hits: 4},
		{Func: 5, Callers: []int{0, 6}, CallerKey: 9, Hits: 2},
		{Func: 6, Callers: []int{-1, 0}, CallerKey: 1, Hits: 2},
	} {
		s.Key = uint64(len(dllAT.Stats.Stacks)) + 1
		dllAT.Stats.Stacks = append(dllAT.Stats.Stacks, s)
	}
	return map[string]*datafile.Merged{
		"dll-fc-at": dllAT,
		"ftime-ft":  functions(ftime, datafile.FuncTiming, run("04:50", "ftime"))(""),
		"dll-lc":    lines(dllLines, datafile.LineCounting, dllhostRun)("/src"),
		"fs":        samplingProfile(samplingLayoutGCC, gccRun),
		"fs-at":     samplingProfile(samplingLayoutGCC, gccRunAT),
		"fs-stacks": stackedSampling(),
	}
}

// TestExports pins every format of other tools for each case
// (testdata/export/CASE.FORMAT.golden, rewritten with -update; pprof's as
// its text form, gmon.out's as gmonText's), and checks the figures where
// they can be read back: the sum of the hits in pprof's samples (of the
// samples, for sampling) and in the JSON is the profile's.
func TestExports(t *testing.T) {
	for name, m := range exportCases(t) {
		var total, samples uint64
		for _, h := range m.Stats.Hits {
			total += h
		}
		for _, n := range m.Stats.Sampling.Samples {
			samples += n
		}
		formats := []Format{FormatLcov, FormatCallgrind, FormatPprof, FormatFolded, FormatJSON}
		if m.Plan.Method.IsSampling() {
			formats = append(formats, FormatGmon)
		}
		for _, f := range formats {
			t.Run(name+"/"+f.String(), func(t *testing.T) {
				var buf bytes.Buffer
				o := DefaultOptions()
				o.Format, o.Version = f, "test"
				if err := Generate(&buf, m, o); err != nil {
					t.Fatal(err)
				}
				out := buf.Bytes()
				switch f {
				case FormatPprof:
					p, err := profile.Parse(bytes.NewReader(out))
					if err != nil {
						t.Fatalf("profile.Parse: %v", err)
					}
					if err := p.CheckValid(); err != nil {
						t.Fatalf("CheckValid: %v", err)
					}
					var sum int64
					for _, s := range p.Sample {
						sum += s.Value[0]
					}
					if want := map[bool]uint64{false: total, true: samples}[m.Plan.Method.IsSampling()]; uint64(sum) != want {
						t.Errorf("pprof samples add up to %d %s, the profile has %d", sum, p.SampleType[0].Type, want)
					}
					p.TimeNanos = 0
					out = []byte(p.String())
				case FormatJSON:
					var j jsonProfile
					if err := json.Unmarshal(out, &j); err != nil {
						t.Fatal(err)
					}
					var sum uint64
					for _, fn := range j.Functions {
						sum += fn.Hits
					}
					for _, l := range j.Lines {
						sum += l.Hits
					}
					if j.Schema != jsonSchema || sum != total {
						t.Errorf("JSON: schema %q, hits %d, want %q and %d", j.Schema, sum, jsonSchema, total)
					}
				case FormatGmon:
					text, err := gmonText(out)
					if err != nil {
						t.Fatalf("gmon.out: %v", err)
					}
					out = []byte(text)
				case FormatLcov:
					// The sources found (in testdata/src) are named by
					// their absolute paths, which the golden does not
					// hold.
					wd, err := os.Getwd()
					if err != nil {
						t.Fatal(err)
					}
					out = bytes.ReplaceAll(out, []byte("SF:"+wd+"/"), []byte("SF:${PWD}/"))
				}
				testutil.Golden(t, filepath.Join("testdata", "export", name+"."+f.String()+".golden"), out)
			})
		}
	}
}

// TestParseFormat: every format's name, in any case, and an error naming
// the formats for another.
func TestParseFormat(t *testing.T) {
	for i, name := range formatNames {
		if f, err := ParseFormat(strings.ToUpper(name)); err != nil || f != Format(i) || f.String() != name {
			t.Errorf("ParseFormat(%q) = %v, %v", name, f, err)
		}
	}
	if _, err := ParseFormat("xml"); err == nil || !strings.Contains(err.Error(), "lcov, callgrind") {
		t.Errorf("ParseFormat(xml) = %v", err)
	}
}

// TestCoverageAndDiff: the coverage --fail-under compares is the listing's,
// and a comparison lists only what changed, largest first, with totals.
func TestCoverageAndDiff(t *testing.T) {
	base := functions(dll, datafile.FuncCounting, dllhostRun)("")
	if c := Coverage(base); c != 100 {
		t.Errorf("coverage %v, want 100", c)
	}
	now := functions(dll, datafile.FuncCounting, dllhostRun)("")
	now.Stats.Hits[2] = 40 // _lib_add (dlllib.dll): 4 calls, now 40
	now.Stats.Hits[0] = 0  // _main: never
	if c := Coverage(now); c < 85.7 || c > 85.8 {
		t.Errorf("coverage %v, want 6 of 7", c)
	}
	var buf bytes.Buffer
	o := DefaultOptions()
	o.Path = "base.pbt"
	if err := WriteDiff(&buf, base, now, o); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, filepath.Join("testdata", "export", "dll-diff.golden"), buf.Bytes())
	if lines := strings.Split(buf.String(), "\n"); len(lines) < 6 || !strings.Contains(lines[4], "+36") || !strings.Contains(lines[5], "-1") {
		t.Errorf("diff:\n%s", buf.String())
	}
}

// TestDiffOtherType: --diff-base with a base of another profile type
// warns once (PRF4488), naming the base and both types, before the
// comparison, which is written all the same; a base of the same type
// does not.
func TestDiffOtherType(t *testing.T) {
	base := functions(dll, datafile.FuncCounting, dllhostRun)("")
	for _, c := range []struct {
		now  *datafile.Merged
		want []string
	}{
		{functions(dll, datafile.FuncCounting, dllhostRun)(""), nil},
		{functions(dll, datafile.FuncTiming, dllhostRun)(""), []string{
			"PRF4488 --diff-base base.pbt is a function counting profile, and this one a function timing profile: only what both count is compared, and what one alone counts is listed as a change"}},
		{lines(dllLines, datafile.LineCounting, dllhostRun)("/src"), []string{
			"PRF4488 --diff-base base.pbt is a function counting profile, and this one a line counting profile: only what both count is compared, and what one alone counts is listed as a change"}},
	} {
		var warnings []string
		var buf bytes.Buffer
		o := DefaultOptions()
		o.Path = "base.pbt"
		o.Warn = func(d *prf.Diagnostic) {
			warnings = append(warnings, fmt.Sprintf("PRF%d %s", d.Code, d.Error()))
			if buf.Len() > 0 {
				t.Errorf("warning after %d bytes of the comparison", buf.Len())
			}
		}
		if err := WriteDiff(&buf, base, c.now, o); err != nil {
			t.Fatal(err)
		}
		method := strings.ToLower(c.now.Plan.Method.Words())
		if !slices.Equal(warnings, c.want) {
			t.Errorf("%s: warnings %q, want %q", method, warnings, c.want)
		}
		if !strings.Contains(buf.String(), "compared with base.pbt") {
			t.Errorf("%s: no comparison:\n%s", method, buf.String())
		}
	}
}

// BenchmarkExports writes each format of a timing profile of 100,000
// functions with caller stacks (one each), the size of a large C++
// program's.
func BenchmarkExports(b *testing.B) {
	const n = 100000
	m := &datafile.Merged{Plan: datafile.Plan{Method: datafile.FuncTiming, StartIndex: -1, Attribution: true,
		Modules: []datafile.Module{{Name: "big", Path: "/bin/big"}}}}
	m.Runs = []datafile.Run{{Time: 1795600000, CommandLine: "big"}}
	for i := range n {
		m.Plan.Funcs = append(m.Plan.Funcs, datafile.Func{Name: fmt.Sprintf("_ZN3big4funcEi%d", i), Source: "big.o",
			File: fmt.Sprintf("/src/big%d.cc", i%500), Line: i%1000 + 1})
		m.Stats.Hits = append(m.Stats.Hits, uint64(i))
		m.Stats.FuncTime = append(m.Stats.FuncTime, int64(i)*10)
		m.Stats.ChildTime = append(m.Stats.ChildTime, int64(i)*20)
		m.Stats.Stacks = append(m.Stats.Stacks, datafile.Stack{Func: i, Callers: []int{-1, (i + 1) % n}, Hits: uint64(i), Time: int64(i) * 10})
	}
	for _, f := range []Format{FormatText, FormatTab, FormatLcov, FormatCallgrind, FormatPprof, FormatFolded, FormatJSON, FormatHTML} {
		b.Run(f.String(), func(b *testing.B) {
			o := DefaultOptions()
			o.Format, o.Sort = f, SortName
			var size int
			for b.Loop() {
				var buf bytes.Buffer
				if err := Generate(&buf, m, o); err != nil {
					b.Fatal(err)
				}
				size = buf.Len()
			}
			b.ReportMetric(float64(size)/1e6, "MB")
		})
	}
}

// generatedUncertain returns the "uncertain" fixture (linuxInputs) in format f.
func generatedUncertain(t *testing.T, f Format) []byte {
	t.Helper()
	var buf bytes.Buffer
	o := DefaultOptions()
	o.Format, o.Version = f, "test"
	if err := Generate(&buf, linuxInputs["uncertain"](), o); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestJSONUncertain: the JSON states the run's cost uncertainty and
// marks the functions whose own time per call is below it, as the
// listing marks them (the "uncertain" fixture: 5 µs a call).
func TestJSONUncertain(t *testing.T) {
	var j jsonProfile
	if err := json.Unmarshal(generatedUncertain(t, FormatJSON), &j); err != nil {
		t.Fatal(err)
	}
	var marked []string
	for _, f := range j.Functions {
		if f.Unsure {
			marked = append(marked, f.Name)
		}
	}
	want := []string{"Counter::Counter()", "Counter::bump(int)", "Counter::value() const", "max<int>(int, int)"}
	if j.CostNs != 5000 || !slices.Equal(marked, want) {
		t.Errorf("cost uncertainty %d ns, uncertain %q; want 5000 and %q", j.CostNs, marked, want)
	}
}

// TestHTMLUncertain: the HTML page marks the own time of the functions
// the listing marks, and says why in its title.
func TestHTMLUncertain(t *testing.T) {
	page := string(generatedUncertain(t, FormatHTML))
	if n := strings.Count(page, "not measured exactly"); n != 4 || !strings.Contains(page, "0.024 ~") {
		t.Errorf("%d own times marked uncertain, Counter::bump's %v; want 4, and marked", n, strings.Contains(page, "0.024 ~"))
	}
}

// TestJSONCPUTime: the JSON states the threads' time on a CPU where the
// run measured it (the "waited" fixture: 0.6 ms of 3), and leaves it out
// where it did not (the "timing" fixture).
func TestJSONCPUTime(t *testing.T) {
	for name, want := range map[string]int64{"waited": 600_000, "timing": 0} {
		var buf bytes.Buffer
		o := DefaultOptions()
		o.Format, o.Version = FormatJSON, "test"
		if err := Generate(&buf, linuxInputs[name](), o); err != nil {
			t.Fatal(err)
		}
		var j jsonProfile
		if err := json.Unmarshal(buf.Bytes(), &j); err != nil {
			t.Fatal(err)
		}
		if j.CPUNs != want || strings.Contains(buf.String(), "cpuTimeNs") != (want != 0) {
			t.Errorf("%s: cpuTimeNs %d, want %d (omitted when 0)", name, j.CPUNs, want)
		}
	}
}

// TestLineFuncOverlapping: a line's function is the first in the plan's
// order whose range holds its first site, where ranges nest or are the
// same (folded code), as where they do not.
func TestLineFuncOverlapping(t *testing.T) {
	fn := func(name string, lo, hi uint64) datafile.Func {
		return datafile.Func{Name: name, Entry: lo, Low: lo, High: hi}
	}
	for _, c := range []struct {
		name  string
		funcs []datafile.Func
		addrs []uint64
		want  []int
	}{
		{"apart", []datafile.Func{fn("a", 0x100, 0x200), fn("b", 0x200, 0x300)}, []uint64{0x150, 0x250, 0x300}, []int{0, 1, -1}},
		{"nested", []datafile.Func{fn("outer", 0x100, 0x200), fn("inner", 0x150, 0x180)}, []uint64{0x160, 0x190, 0x120}, []int{0, 0, 0}},
		{"inner first", []datafile.Func{fn("inner", 0x150, 0x180), fn("outer", 0x100, 0x200)}, []uint64{0x160, 0x190}, []int{0, 1}},
		{"folded", []datafile.Func{fn("x", 0x100, 0x140), fn("y", 0x100, 0x140)}, []uint64{0x120}, []int{0}},
	} {
		m := &datafile.Merged{Plan: datafile.Plan{Method: datafile.LineCounting, Modules: []datafile.Module{{Name: "prog"}}, Funcs: c.funcs}}
		r := newReport(m, DefaultOptions())
		for k, a := range c.addrs {
			if got := r.lineFunc(&datafile.Line{Addrs: []uint64{a}}); got != c.want[k] {
				t.Errorf("%s: the line at %#x is in function %d, want %d", c.name, a, got, c.want[k])
			}
		}
	}
}

// TestFuncRangesFirst: the function holding an address, the first in the
// plan's order, found by search as a scan of every function finds it, in
// modules of random ranges, apart, nested and the same.
func TestFuncRangesFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 7))
	for round := range 200 {
		var funcs []datafile.Func
		for range 1 + rng.IntN(30) {
			lo := 0x1000 + uint64(rng.IntN(64))*16
			funcs = append(funcs, datafile.Func{Entry: lo, Low: lo, High: lo + 16 + uint64(rng.IntN(round%4*8+1))*16})
		}
		m := &datafile.Merged{Plan: datafile.Plan{Method: datafile.LineCounting, Modules: []datafile.Module{{Name: "prog"}}, Funcs: funcs}}
		r := newReport(m, DefaultOptions())
		for a := uint64(0xff0); a < 0x1000+64*16+200*16; a += 8 {
			want := slices.IndexFunc(funcs, func(f datafile.Func) bool { return f.Low <= a && a < f.High })
			if got := r.ranges.first(0, a); got != want {
				t.Fatalf("round %d: the function at %#x is %d, want %d (%+v)", round, a, got, want, funcs)
			}
		}
	}
}
