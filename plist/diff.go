package plist

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// Coverage returns the profile's coverage in percent: the functions, or
// lines, with a hit among those profiled (0 when none is profiled). It is
// what the listings' "Function coverage" and "Line coverage" say.
func Coverage(m *datafile.Merged) float64 {
	r := newReport(m, Options{})
	items := r.allItems()
	if len(items) == 0 {
		return 0
	}
	_, hit := r.totals(items)
	return 100 * float64(hit) / float64(len(items))
}

// diffRow is one function or line of a comparison.
type diffRow struct {
	name             string
	base, now        uint64
	baseTime, nowTim int64
}

// WriteDiff writes what changed from the profile base to m (--diff-base,
// as pprof's -diff_base): each function, or line, whose hits or time
// differ, matched by module and name (or module, file and line), with its
// figure in each and the change, the largest changes first; then the
// totals. A function or line that one profile has and the other has not
// counts 0 there. Profiles of two types are compared all the same, after
// warning PRF4488 (o.Path names the base): a function profile and a line
// profile have nothing in common, and times are compared only where both
// have them. With o.Time TimeCPU both profiles' times are their times on
// a CPU ([CPUTimes]; [ErrNoWaits] when either has none).
func WriteDiff(w io.Writer, base, m *datafile.Merged, o Options) error {
	var err error
	if base, err = inView(base, o); err != nil {
		return fmt.Errorf("write comparison: base: %w", err)
	}
	if m, err = inView(m, o); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return writeDiff(w, base, m, o)
}

// writeDiff is WriteDiff of profiles in the view o.Time selects.
func writeDiff(w io.Writer, base, m *datafile.Merged, o Options) error {
	rb, rm := newReport(base, o), newReport(m, o)
	if bm, mm := base.Plan.Method, m.Plan.Method; bm != mm {
		rm.warn(prf.DiffOtherType(o.Path, strings.ToLower(bm.Words()), strings.ToLower(mm.Words())))
	}
	timed := rm.hasTimes() && rb.hasTimes()
	keys := func(r *report) map[string]int {
		out := map[string]int{}
		if r.plan.Method.IsFunction() {
			for i, f := range r.plan.Funcs {
				out[r.moduleName(f.Module)+"\x00"+f.Name] = i
			}
			return out
		}
		for i := range r.plan.Lines {
			l := &r.plan.Lines[i]
			out[r.moduleName(l.Module)+"\x00"+r.lineFile(l)+"\x00"+strconv.Itoa(l.Line)] = i
		}
		return out
	}
	label := func(r *report, i int) string {
		if r.plan.Method.IsFunction() {
			return prf.Printable(fmt.Sprintf("%s (%s)", r.names[i], r.plan.Funcs[i].Source))
		}
		l := &r.plan.Lines[i]
		return prf.Printable(fmt.Sprintf("%s:%d (%s)", r.lineFile(l), l.Line, r.moduleName(l.Module)))
	}
	kb, km := keys(rb), keys(rm)
	rows := map[string]*diffRow{}
	for k, i := range km {
		rows[k] = &diffRow{name: label(rm, i), now: rm.hits(i), nowTim: rm.funcTime(i)}
	}
	for k, i := range kb {
		row := rows[k]
		if row == nil {
			row = &diffRow{name: label(rb, i)}
			rows[k] = row
		}
		row.base, row.baseTime = rb.hits(i), rb.funcTime(i)
	}
	var changed []*diffRow
	var totalBase, totalNow uint64
	for _, row := range rows {
		totalBase += row.base
		totalNow += row.now
		if row.base != row.now || (timed && row.baseTime != row.nowTim) {
			changed = append(changed, row)
		}
	}
	abs := func(d int64) int64 { return max(d, -d) }
	slices.SortFunc(changed, func(a, b *diffRow) int {
		da, db := int64(a.now)-int64(a.base), int64(b.now)-int64(b.base)
		if timed {
			da, db = a.nowTim-a.baseTime, b.nowTim-b.baseTime
		}
		return cmp.Or(cmp.Compare(abs(db), abs(da)), cmp.Compare(a.name, b.name))
	})
	bw := bufio.NewWriter(w)
	what := "Function"
	if !rm.plan.Method.IsFunction() {
		what = "Line"
	}
	fmt.Fprintf(bw, "Profile: %s%s, compared with %s\n\n", m.Plan.Method.Words(), viewWords(o), prf.Printable(o.Path))
	head := fmt.Sprintf("%10s %10s %10s", "Base hits", "Hits", "Change")
	if timed {
		head += fmt.Sprintf(" %12s %12s %12s", "Base ms", "ms", "Change ms")
	}
	head += "  " + what
	fmt.Fprintf(bw, "%s\n%s\n", head, strings.Repeat("-", len(head)))
	for _, row := range changed {
		fmt.Fprintf(bw, "%10d %10d %+10d", row.base, row.now, int64(row.now)-int64(row.base))
		if timed {
			fmt.Fprintf(bw, " %12.3f %12.3f %+12.3f", ms(row.baseTime), ms(row.nowTim), ms(row.nowTim-row.baseTime))
		}
		fmt.Fprintf(bw, "  %s\n", row.name)
	}
	fmt.Fprintf(bw, "\n%d of %d %ss changed; total hits %d, were %d (%+d)\n",
		len(changed), len(rows), strings.ToLower(what), totalNow, totalBase, int64(totalNow)-int64(totalBase))
	return bw.Flush()
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }
