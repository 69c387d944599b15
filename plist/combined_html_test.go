package plist

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// suiteSources writes lib.c, a.c and b.c, the sources of twoTests and
// branchTests (/src/...), in a directory of their own, each line N of
// them "/* name:N */", and returns the options that find them there
// (/D DIR).
func suiteSources(t *testing.T) (Options, string) {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"lib.c", "a.c", "b.c"} {
		var text strings.Builder
		for n := 1; n <= 10; n++ {
			fmt.Fprintf(&text, "/* %s:%d */\n", name, n)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := DefaultOptions()
	o.SourceDirs, o.Version = []string{dir}, "test"
	return o, dir
}

// combinedPage returns the page of the profiles combined, with o.
func combinedPage(t *testing.T, o Options, profiles ...*datafile.Merged) string {
	t.Helper()
	c := combineAll(t, o, profiles...)
	var buf bytes.Buffer
	if err := c.WriteHTML(&buf, o); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// filesRow returns the cells of the row of the Files summary named
// name (a directory's or a file's), their text, or nil.
func filesRow(page, name string) []string {
	start := strings.Index(page, `<section id="files">`)
	if start < 0 {
		return nil
	}
	files := page[start:]
	files = files[:strings.Index(files, "</section>")]
	tag := regexp.MustCompile(`<[^>]*>`)
	for _, tr := range regexp.MustCompile(`<tr class="(?:dir|f)">(.*)</tr>`).FindAllStringSubmatch(files, -1) {
		var cells []string
		for _, td := range regexp.MustCompile(`<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(tr[1], -1) {
			cells = append(cells, tag.ReplaceAllString(td[1], ""))
		}
		if len(cells) > 0 && cells[0] == name {
			return cells
		}
	}
	return nil
}

// pageLine returns line id of the page's annotated source: its class,
// count and branch marks, as text; ok is false where it has none.
func pageLine(page, id string) (class, count, marks string, ok bool) {
	m := regexp.MustCompile(`<tr id="` + id + `" class="([^"]*)"><td class="ln">\d+</td><td class="c">([^<]*)</td><td class="p">[^<]*</td>(?:<td class="br">(.*?)</td>)?<td class="code">`).FindStringSubmatch(page)
	if m == nil {
		return "", "", "", false
	}
	marks = strings.ReplaceAll(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(m[3], ""), "&#43;", "+")
	return m[1], m[2], marks, true
}

// TestCombinedHTML: the page of branchTests combined, line coverage
// with branches. Its files are where /D finds them, by directory and
// name: a.c, b.c, lib.c (F0-0, F0-1, F0-2). The Files summary has the
// sums of the text summary (TestCombinedBranches): lib.c 4 lines, 3
// covered, 75.0 %, 8 ways, 4 taken, 50.0 %; b.c 2, 1, 50.0, 2, 0, 0.0;
// the directory 7, 5, 71.4, 12, 6, 50.0. lib.c's line 3 ran (1 + 3
// runs) and is partial: block 0 went to its target in 1 + 2 runs and on
// in 0 + 1, block 1 on alone: "[ + + ][ - + ]"; line 8 ran in test_b
// alone, "[ + - ]"; line 9 never ran, "[ # # ]"; b.c's line 6 neither.
// The header names the two profiles and their runs, the statistics are
// the suite's, its four runs'. The page is self-contained, as every
// page (TestHTMLSelfContained), and does not depend on the profiles'
// addresses: moved, they give the same page.
func TestCombinedHTML(t *testing.T) {
	o, dir := suiteSources(t)
	a, b := branchTests(t)
	page := combinedPage(t, o, a, b)
	for name, want := range map[string]string{
		dir:     dir + " 7 5 71.4 12 6 50.0",
		"lib.c": "lib.c 4 3 75.0 8 4 50.0",
		"a.c":   "a.c 1 1 100.0 2 2 100.0",
		"b.c":   "b.c 2 1 50.0 2 0 0.0",
	} {
		if got := strings.Join(filesRow(page, name), " "); got != want {
			t.Errorf("Files row of %s: %q, want %q", name, got, want)
		}
	}
	if !strings.Contains(page, `<td title="`+filepath.Join(dir, "lib.c")+`"><a href="#F0-2">lib.c</a></td>`) {
		t.Error("lib.c's row does not link to its annotated source, F0-2")
	}
	for _, l := range []struct{ id, class, count, marks string }{
		{"L0-2-3", "run partial", "\u2713", "[ + + ][ - + ]"},
		{"L0-2-4", "run", "\u2713", ""},
		{"L0-2-8", "run partial", "\u2713", "[ + - ]"},
		{"L0-2-9", "never", "\u2717", "[ # # ]"},
		{"L0-0-2", "run", "\u2713", "[ + + ]"},
		{"L0-1-6", "never", "\u2717", "[ # # ]"},
	} {
		class, count, marks, ok := pageLine(page, l.id)
		if !ok || class != l.class || count != l.count || marks != l.marks {
			t.Errorf("line %s: class %q, count %q, marks %q (found %v); want %q, %q, %q", l.id, class, count, marks, ok, l.class, l.count, l.marks)
		}
	}
	for _, want := range []string{
		`<title>Combined coverage of 2 profiles: Line coverage</title>`,
		"<h1>Combined coverage of 2 profiles</h1>\n<p class=\"about\">Line coverage of a suite: the coverage of the profiles below added by source file and line",
		`<ul class="profiles"><li><span class="path">test_a.pbt</span>: line coverage, 1 run</li><li><span class="path">test_b.pbt</span>: line coverage, 3 runs</li></ul>`,
		`title="Branch 0, to its target: taken in 3 runs">&#43;</span>`,
		`<h3>Suite Statistics</h3>`,
		`<dt>Total lines</dt><dd>7</dd>`,
		`<dt>Line coverage</dt><dd>71.4%</dd>`,
		`<footer>Written by plist (sprof test) from 2 profiles.`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if m := external.FindString(page); m != "" {
		t.Errorf("the page refers outside itself: %q", m)
	}
	if n := strings.Count(page, "<dt>Command line at "); n != 4 {
		t.Errorf("%d runs in the statistics, want 4", n)
	}
	for _, bad := range []string{"Module Statistics", "(suite)", "0x"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page has %q", bad)
		}
	}
	for _, m := range []*datafile.Merged{a, b} {
		moveAddresses(m, 0x4000)
	}
	if moved := combinedPage(t, o, a, b); moved != page {
		t.Errorf("the profiles' addresses moved, and the page changed: %s", firstDifference(moved, page))
	}
}

// moveAddresses adds delta to every address of m's plan, and gives it
// its new ID.
func moveAddresses(m *datafile.Merged, delta uint64) {
	p := &m.Plan
	for i := range p.Funcs {
		f := &p.Funcs[i]
		f.Entry, f.Low, f.High = f.Entry+delta, f.Low+delta, f.High+delta
	}
	for i := range p.Lines {
		for k := range p.Lines[i].Addrs {
			p.Lines[i].Addrs[k] += delta
		}
	}
	for i := range p.Branches {
		p.Branches[i].Addr += delta
		p.Branches[i].Target += delta
	}
	p.ID = datafile.PlanID(p)
}

// TestCombinedHTMLCounting: line counting combined shows each line's
// count summed (twoTests counted: lib.c's line 3, 1 + 3 = 4 of the 8
// hits, 50.0 %), and the Files summary the hits (lib.c's 6, 75.0 %); with a profile with
// branches (branchTests' test_b) the page is of line coverage, with
// their marks, and says why. Function profiles have no page (PRF1102),
// and nothing is written; the combined profile validates, and has no
// address.
func TestCombinedHTMLCounting(t *testing.T) {
	o, dir := suiteSources(t)
	a, b := twoTests(t)
	for _, m := range []*datafile.Merged{a, b} {
		m.Plan.Method = datafile.LineCounting
		m.Plan.ID = datafile.PlanID(&m.Plan)
	}
	page := combinedPage(t, o, a, b)
	if class, count, marks, ok := pageLine(page, "L0-2-3"); !ok || class != "hot" || count != "4" || marks != "" {
		t.Errorf("lib.c's line 3: class %q, count %q, marks %q (found %v); want hot, 4, none", class, count, marks, ok)
	}
	if !strings.Contains(page, `<td class="c">4</td><td class="p">50.0</td>`) {
		t.Error("lib.c's line 3 has not its share of the suite's 8 hits, 50.0")
	}
	if got, want := strings.Join(filesRow(page, "lib.c"), " "), "lib.c 4 3 75.0 6 75.0"; got != want {
		t.Errorf("Files row of lib.c: %q, want %q", got, want)
	}
	if !strings.Contains(page, "test_a.pbt</span>: line counting, 1 run") || strings.Contains(page, `class="br"`) {
		t.Error("the page of line counting does not name test_a's type, or has branches")
	}
	_, withBranches := branchTests(t)
	page = combinedPage(t, o, a, withBranches)
	if _, count, marks, ok := pageLine(page, "L0-2-3"); !ok || count != "\u2713" || marks != "[ + + ][ - - ]" {
		t.Errorf("line counting and branches, lib.c's line 3: count %q, marks %q (found %v); want covered, [ + + ][ - - ]", count, marks, ok)
	}
	if !strings.Contains(page, "line counting&#39;s lines are shown covered or not") {
		t.Error("the page does not say line counting is shown as coverage")
	}

	c := NewCombined()
	if err := c.Add(readInput(t, "coverage"), "coverage.pbt", o); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := c.WriteHTML(&buf, o); prf.Code(err) != 1102 || buf.Len() > 0 {
		t.Errorf("function profiles: %v, %d bytes written; want PRF1102 and nothing", err, buf.Len())
	}

	c = combineAll(t, o, a, withBranches)
	m, err := c.merged()
	if err != nil {
		t.Fatal(err)
	}
	if m.Plan.Method != datafile.LineCoverage || len(m.Plan.Modules) != 1 || len(m.Plan.Lines) != 7 || len(m.Plan.Branches) != 5 || len(m.Runs) != 4 {
		t.Errorf("combined profile: %v, %d modules, %d lines, %d branches, %d runs; want line coverage, 1, 7, 5, 4",
			m.Plan.Method, len(m.Plan.Modules), len(m.Plan.Lines), len(m.Plan.Branches), len(m.Runs))
	}
	if got := m.Plan.Modules[0].Files; len(got) != 3 || got[2] != filepath.Join(dir, "lib.c") {
		t.Errorf("files %q, want a.c, b.c and lib.c in %s", got, dir)
	}
	for _, l := range m.Plan.Lines {
		if len(l.Addrs) > 0 {
			t.Errorf("line %d has addresses", l.Line)
		}
	}
	for _, f := range m.Plan.Funcs {
		if f.Entry != 0 || f.Low != 0 || f.High != 0 {
			t.Errorf("function %s has addresses", f.Name)
		}
	}
}
