package dwarf

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestInlinedCalls reads the inlined calls of testdata/inlined.c, built
// unoptimised and optimised, with DWARF 4 and 5 and with split DWARF, and
// for arm64 as PIE (whose code starts in its first page): sq inlined twice
// into twosq, on the lines of its two calls, and into outer, inlined into
// nested, the inner call's parent the outer; each call's code inside its
// caller's, and named by the function inlined.
func TestInlinedCalls(t *testing.T) {
	for _, c := range []struct {
		cc    string
		flags []string
	}{
		{"gcc", []string{"-O0", "-gdwarf-4"}}, {"gcc", []string{"-O2", "-gdwarf-5"}}, {"gcc", []string{"-O2", "-gdwarf-4"}},
		{"gcc", []string{"-O2", "-gdwarf-5", "-gsplit-dwarf"}},
		{"aarch64-linux-gnu-gcc", []string{"-O0", "-pie", "-fPIE"}}, {"aarch64-linux-gnu-gcc", []string{"-O2", "-pie", "-fPIE"}},
	} {
		t.Run(filepath.Join(append([]string{c.cc}, c.flags...)...), func(t *testing.T) {
			dir, path := buildC(t, c.cc, "inlined.c", "inlined", c.flags...)
			f := open(t, path)
			calls, err := f.InlinedCalls()
			if err != nil {
				t.Fatal(err)
			}
			src := filepath.Join(dir, "inlined.c")
			line := func(marker string) int { return markerLine(t, "inlined.c", "L:"+marker+" ") }
			in := func(fn string) []int { // the calls in fn's code, with none around them
				var out []int
				for i, c := range calls {
					if inside(c.Ranges, funcNamed(t, f, fn).Ranges) {
						out = append(out, i)
					}
				}
				return out
			}
			var got []int
			for _, i := range in("twosq") {
				c := calls[i]
				if c.Parent != -1 || c.CallFile != src || c.Origin != "sq" || c.Unit != funcNamed(t, f, "twosq").Unit {
					t.Errorf("call in twosq %+v: want sq's, no parent, called from %s in twosq's unit", c, src)
				}
				got = append(got, c.CallLine)
			}
			slices.Sort(got)
			if want := []int{line("call-a"), line("call-b")}; !slices.Equal(got, want) {
				t.Errorf("the calls inlined into twosq are on lines %v, want %v", got, want)
			}
			nested := in("nested")
			if len(nested) != 2 {
				t.Fatalf("%d calls inlined into nested, want 2: %+v", len(nested), calls)
			}
			// Of nested's code alone: its two calls, none of twosq's.
			code := funcNamed(t, f, "nested").Ranges
			some, err := f.InlinedCallsIn(func(low, high uint64) bool {
				return slices.ContainsFunc(code, func(r Range) bool { return r.Low < high && low < r.High })
			})
			if err != nil || len(some) != 2 || some[0].Parent != -1 || some[1].Parent != 0 || !slices.EqualFunc(some, []Inlined{calls[nested[0]], calls[nested[1]]}, func(a, b Inlined) bool {
				return a.Origin == b.Origin && a.CallLine == b.CallLine && slices.Equal(a.Ranges, b.Ranges)
			}) {
				t.Errorf("the calls in nested's code alone: %+v (%v), want %+v then %+v", some, err, calls[nested[0]], calls[nested[1]])
			}
			outer, inner := calls[nested[0]], calls[nested[1]]
			if outer.CallLine != line("call-outer") || outer.Parent != -1 || outer.Origin != "outer" ||
				inner.CallLine != line("call-inner") || inner.Parent != nested[0] || inner.Origin != "sq" || !inside(inner.Ranges, outer.Ranges) {
				t.Errorf("the calls inlined into nested: %+v then %+v; want outer's on line %d, then sq's inside it on line %d",
					outer, inner, line("call-outer"), line("call-inner"))
			}
		})
	}
}

// inside reports whether every range of rs lies in one of outer.
func inside(rs, outer []Range) bool {
	for _, r := range rs {
		if !slices.ContainsFunc(outer, func(o Range) bool { return o.Low <= r.Low && r.High <= o.High }) {
			return false
		}
	}
	return len(rs) > 0
}

// TestRows: the rows of a line table, statement rows and the others, in
// address order; those marked Stmt are the statement rows, in the same
// order.
func TestRows(t *testing.T) {
	_, path := buildC(t, "gcc", "inlined.c", "inlined", "-O2")
	f := open(t, path)
	all, err := f.Rows()
	if err != nil {
		t.Fatal(err)
	}
	stmts, err := f.StatementRows()
	if err != nil {
		t.Fatal(err)
	}
	var marked []LineRow
	for i, r := range all {
		if i > 0 && all[i-1].Addr > r.Addr {
			t.Fatalf("rows %d and %d out of order: %+v %+v", i-1, i, all[i-1], r)
		}
		if r.Stmt {
			marked = append(marked, r)
		}
	}
	if !slices.Equal(marked, stmts) || len(all) <= len(stmts) {
		t.Errorf("%d rows, %d marked statement rows; %d statement rows (want the same, and fewer than the rows)", len(all), len(marked), len(stmts))
	}
}
