package prep

import (
	"slices"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// TestPlanInlined plans testdata/progs/c/inlined.c, whose spin and wrap
// have code of their own and copies inlined where they are called: a
// function sampling plan has spin's copy in outer, wrap's in deep,
// spin's inside wrap's copy and in wrap's own code, each in its holder's
// code; one with spin left
// out keeps wrap's copy alone; no other plan has any.
func TestPlanInlined(t *testing.T) {
	for _, flags := range [][]string{{"-O2"}, {"-O0", "-pie", "-fPIE"}} {
		prog := testutil.BuildC(t, "inlined", flags...)
		o := Options{Method: datafile.FuncSampling, Programs: []string{prog}, Specs: defaults(t), Calibration: -1}
		p, err := BuildPlan(o)
		if err != nil {
			t.Fatal(err)
		}
		got := inlinedCopies(p)
		if want := []string{"spin in outer", "wrap in deep", "spin in wrap in deep", "spin in wrap"}; !sameSet(got, want) {
			t.Errorf("%v: inlined copies %v, want %v", flags, got, want)
		}
		o.Specs = append(defaults(t), Spec{Op: Exclude, Text: "spin"})
		if p, err = BuildPlan(o); err != nil {
			t.Fatal(err)
		}
		if got, want := inlinedCopies(p), []string{"wrap in deep"}; !sameSet(got, want) {
			t.Errorf("%v, spin left out: inlined copies %v, want %v", flags, got, want)
		}
		for _, other := range []Options{
			{Method: datafile.FuncSampling, Attribution: true},
			{Method: datafile.FuncCounting},
		} {
			other.Programs, other.Specs, other.Calibration = []string{prog}, defaults(t), -1
			if p, err := BuildPlan(other); err != nil || p.Inlined != nil {
				t.Errorf("%v, %v /AT %v: inlined copies %v (%v), want none", flags, other.Method, other.Attribution, p.Inlined, err)
			}
		}
	}
}

// TestPlanInlinedStatic: of two static functions named helper in two
// files, the one with code of its own is selected and inlined into
// afunc, the other only ever inlined, into bfunc: the plan has the first
// one's copy in afunc, and no copy in bfunc.
func TestPlanInlinedStatic(t *testing.T) {
	prog := buildC(t, t.TempDir(), "samename", "-g", "-O2", "samename_a.c", "samename_b.c")
	p, err := BuildPlan(Options{Method: datafile.FuncSampling, Programs: []string{prog}, Specs: defaults(t), Calibration: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := inlinedCopies(p), []string{"helper in afunc"}; !sameSet(got, want) {
		t.Errorf("inlined copies %v, want %v", got, want)
	}
}

// inlinedCopies names each inlined call of p: "f in g", "f in g in h",
// and checks that its code is in its holder's.
func inlinedCopies(p *datafile.Plan) []string {
	var out []string
	for _, c := range p.Inlined {
		name := p.Funcs[c.Func].Name
		for q := c.Parent; q >= 0; q = p.Inlined[q].Parent {
			name += " in " + p.Funcs[p.Inlined[q].Func].Name
		}
		holder := "(nowhere)"
		for _, f := range p.Funcs {
			if c.Ranges[0].Low >= f.Low && c.Ranges[0].Low < f.High {
				holder = f.Name
			}
		}
		out = append(out, name+" in "+holder)
	}
	return out
}

// sameSet reports whether a and b hold the same strings, each as often.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
