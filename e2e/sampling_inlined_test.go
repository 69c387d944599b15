package e2e

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

var inlinedLine = regexp.MustCompile(`inlined outer=(\d+) deep=(\d+) own=(\d+)`)

// TestSamplingInlined samples a program whose functions run inlined
// where they are called (testdata/progs/c/inlined.c): spin inlined into
// outer, wrap inlined into deep with spin inlined in it, and spin's own
// copy, each phase a known share of the CPU time by the program's own
// clock, after a warm-up in code of its own (where the sampler's start,
// slow under emulation, falls). The plan names the inlined calls; every sample of the spinning
// is spin's own time, wherever its code is; spin, wrap, outer and deep
// have their phases' shares with children, outer, deep and wrap none of
// their own (wrap, never called, listed by its samples in the listing
// and the HTML report); and the folded stacks have the inlined frames,
// each chain its phase's share.
func TestSamplingInlined(t *testing.T) {
	testutil.MustHavePtrace(t)
	for _, b := range []build{{"O2", []string{"-O2"}}, {"O0-pie", []string{"-O0", "-pie", "-fPIE"}}} {
		t.Run(b.name, func(t *testing.T) {
			prog := testutil.BuildC(t, "inlined", b.flags...)
			args := []string{"100"} // (ms a phase; the warm-up as long)
			if testutil.Slow() {
				// Under emulation PROFILE's first unwinding, which loads
				// the modules' call frame information, is slow enough for
				// the rings to overflow: a longer warm-up takes it.
				args = append(args, "800")
			}
			dir, r := workflowWith(t, prog, []string{"/FS"}, nil, args...)
			if r.status != 0 {
				t.Fatalf("profile: status %d\n%s", r.status, r.stderr)
			}
			needsPerf(t, r.stderr)
			m := inlinedLine.FindStringSubmatch(r.stdout)
			if m == nil {
				t.Fatalf("the program's output %q", r.stdout)
			}
			var phase [3]float64 // outer, deep, own (ns)
			for i := range phase {
				phase[i], _ = strconv.ParseFloat(m[i+1], 64)
			}
			whole := phase[0] + phase[1] + phase[2]
			name := filepath.Base(prog)
			s := openSampled(t, dir, name)
			checkInlinedPlan(t, s)

			st := &s.m.Stats
			// (Shares of the spinning, spin's time with children: the
			// program's warm-up before it takes the sampler's start.)
			all := float64(st.ChildTime[s.fn(t, "spin")])
			share := func(v int64) float64 { return percentOf(float64(v), all) }
			t.Logf("%d samples lost; spin %.0f with children, main %d", st.Sampling.Lost, all/float64(st.Sampling.Interval), st.ChildTime[s.fn(t, "main")]/st.Sampling.Interval)
			// (Samples lost, the rings overflowed, could have been any
			// phase's: each may miss by their share more.)
			tol := 8 + percentOf(float64(st.Sampling.Lost), all/float64(st.Sampling.Interval))
			for _, c := range []struct {
				fn        string
				own, with float64 // percent of the spinning
			}{
				{"spin", 100, 100},
				{"outer", 0, 100 * phase[0] / whole},
				{"deep", 0, 100 * phase[1] / whole},
				{"wrap", 0, 100 * phase[1] / whole},
			} {
				i := s.fn(t, c.fn)
				own, with := share(st.FuncTime[i]), share(st.ChildTime[i])
				t.Logf("%s: %.1f %% own, %.1f %% with children; want %.1f and %.1f", c.fn, own, with, c.own, c.with)
				if math.Abs(own-c.own) > tol || math.Abs(with-c.with) > tol {
					t.Errorf("%s: %.1f %% of the samples its own, %.1f %% with children; want %.1f %% and %.1f %%", c.fn, own, with, c.own, c.with)
				}
			}
			// wrap ran only inlined: no hit, and a row by its samples.
			if report := must(t, dir, "plist", "/nologo", name).stdout; !regexp.MustCompile(`(?m)^wrap \(inlined\.o\) +\|.* 0$`).MatchString(report) {
				t.Errorf("the listing has no row of wrap, never called:\n%s", report)
			}
			must(t, dir, "plist", "/nologo", "--format=html", "-o", "out.html", name)
			if page, _ := os.ReadFile(filepath.Join(dir, "out.html")); !regexp.MustCompile(`<tr><td>(<a href="#fn-\d+">)?wrap(</a>)?</td>`).Match(page) {
				t.Errorf("the HTML report has no row of wrap, or marks it as never run")
			}
			must(t, dir, "plist", "/nologo", "--format=folded", "-o", "out.folded", name)
			stacks := folded(t, filepath.Join(dir, "out.folded"))
			for chain, want := range map[string]float64{
				"main;outer;spin":     phase[0] / whole,
				"main;deep;wrap;spin": phase[1] / whole,
				"main;spin":           phase[2] / whole,
			} {
				if got := share(int64(stacks[chain])); math.Abs(got-100*want) > tol {
					t.Errorf("folded stack %s: %.1f %% of the samples, want %.1f %%\n%v", chain, got, 100*want, stacks)
				}
			}
		})
	}
}

// checkInlinedPlan checks the inlined calls of inlined.c's plan: spin's
// copy in outer, wrap's in deep and spin's in wrap's copy, each in its
// caller's code.
func checkInlinedPlan(t *testing.T, s sampled) {
	t.Helper()
	p := &s.m.Plan
	spin, wrap := s.fn(t, "spin"), s.fn(t, "wrap")
	in := func(fn, code int) bool { // (a copy of fn inside code's)
		for _, c := range p.Inlined {
			f := &p.Funcs[code]
			if c.Func == fn && c.Ranges[0].Low >= f.Low && c.Ranges[0].Low < f.High {
				return true
			}
		}
		return false
	}
	if !in(spin, s.fn(t, "outer")) || !in(wrap, s.fn(t, "deep")) || !in(spin, s.fn(t, "deep")) {
		t.Errorf("the plan's inlined calls %+v: want spin's in outer, wrap's and spin's in deep", p.Inlined)
	}
	for i, c := range p.Inlined {
		if c.Func == spin && c.Parent >= 0 && p.Inlined[c.Parent].Func != wrap {
			t.Errorf("inlined call %d of spin: in a copy of %s, want wrap's", i, p.Funcs[p.Inlined[c.Parent].Func].Name)
		}
	}
}
