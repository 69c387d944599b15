package plist

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// TestHTMLLongNames lays out in headless Chromium the page of a function
// profile whose names are long Go names without a space (a generic
// method of a deep package, 300 characters): the table wraps them and
// fits the window, no wider than the page, each name whole.
func TestHTMLLongNames(t *testing.T) {
	b, ok := testutil.OpenBrowser(t, "chromium-headless-shell", 1000, 800)
	if !ok {
		t.Skip("chromium-headless-shell is not installed")
	}
	long := "github.com/example/" + strings.Repeat("averyveryverylongpackagename/", 8) + "pkg.(*Table[go.shape.struct{Key string; Value []int}]).Insert"
	m := &datafile.Merged{
		Plan: datafile.Plan{Method: datafile.FuncCounting, StartIndex: -1,
			Modules: []datafile.Module{{Name: "prog"}},
			Funcs: []datafile.Func{
				{Name: long, Entry: 0x100, Low: 0x100, High: 0x140, File: "/src/" + strings.Repeat("deep/", 30) + "table.go", Line: 3, Source: "github.com/example/pkg"},
				{Name: "main.main", Entry: 0x140, Low: 0x140, High: 0x180, File: "/src/main.go", Line: 10, Source: "main"},
			}},
		Runs:      []datafile.Run{{Time: 1795600000, CommandLine: "prog"}},
		Overheads: []int64{0},
		Stats:     datafile.Stats{Hits: []uint64{1000, 1}},
	}
	m.Plan.ID = datafile.PlanID(&m.Plan)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	var page strings.Builder
	o := DefaultOptions()
	o.Format = FormatHTML
	if err := Generate(&page, m, o); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "long.html")
	if err := os.WriteFile(file, []byte(page.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Open("file://" + file)
	var got struct {
		Scroll, Window, Table, Body float64
		Names                       []string
	}
	b.Eval(`({Scroll: document.documentElement.scrollWidth, Window: window.innerWidth,
		Table: document.getElementById('table').getBoundingClientRect().right,
		Body: document.body.getBoundingClientRect().right,
		Names: Array.prototype.map.call(document.querySelectorAll('#table tbody tr'), function (r) { return r.cells[0].textContent; })})`, &got)
	if got.Scroll > got.Window || got.Table > got.Body+0.5 {
		t.Errorf("the page is %v px wide in a window of %v, its table's right edge at %v past the page's %v: a long name overflows", got.Scroll, got.Window, got.Table, got.Body)
	}
	if len(got.Names) != 2 || (got.Names[0] != long && got.Names[1] != long) {
		t.Errorf("the names in the table: %q, want the long one whole", got.Names)
	}
}

// TestHTMLBranchMarks reads in headless Chromium the branch marks of
// the page of branch coverage (branchCoverage), scripts on: lines.c's
// line 14 shows "[ + - ][ - + ]", each mark's title its way, and is
// highlighted (its branch cell's background is not the page's); line
// 15, never run, shows "[ # # ]"; line 13, no branch, an empty cell. A
// click on lines.c in the Files summary goes to its annotated source.
func TestHTMLBranchMarks(t *testing.T) {
	b, ok := testutil.OpenBrowser(t, "chromium-headless-shell", 1200, 900)
	if !ok {
		t.Skip("chromium-headless-shell is not installed")
	}
	page := writeHTMLReport(t, "branchcov", branchCoverage(), nil)
	file := filepath.Join(t.TempDir(), "branches.html")
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Open("file://" + file)
	type line struct {
		Text, Class, Background string
		Titles                  []string
	}
	var got struct{ L13, L14, L15 line }
	b.Eval(`(function () {
		function line(id) {
			var tr = document.getElementById(id), td = tr.querySelector("td.br");
			return {Text: td.textContent, Class: tr.className, Background: getComputedStyle(td).backgroundColor,
				Titles: Array.prototype.map.call(td.querySelectorAll("span"), function (s) { return s.title; })};
		}
		return {L13: line("L0-0-13"), L14: line("L0-0-14"), L15: line("L0-0-15")};
	})()`, &got)
	if got.L14.Text != "[ + - ][ - + ]" || got.L14.Class != "run partial" || strings.Join(got.L14.Titles, "|") !=
		"Branch 0, to its target: taken in 2 runs|Branch 0, on to the next instruction: never taken|Branch 1, to its target: never taken|Branch 1, on to the next instruction: taken in 2 runs" {
		t.Errorf("line 14: %+v", got.L14)
	}
	if got.L14.Background != "rgb(255, 241, 194)" || got.L13.Background == got.L14.Background {
		t.Errorf("line 14's branch cell is not highlighted: %s (line 13's %s)", got.L14.Background, got.L13.Background)
	}
	if got.L15.Text != "[ # # ]" || got.L15.Class != "never" || len(got.L15.Titles) != 2 || !strings.HasSuffix(got.L15.Titles[0], "the line never ran") {
		t.Errorf("line 15: %+v", got.L15)
	}
	if got.L13.Text != "" || len(got.L13.Titles) != 0 {
		t.Errorf("line 13: %+v", got.L13)
	}
	b.Click(`#files a[href="#F0-0"]`)
	b.Wait(`location.hash === "#F0-0"`)
}

// TestCombinedHTMLBrowser opens in headless Chromium the page of
// branchTests combined (TestCombinedHTML), reads lib.c's row of the
// Files summary (4 lines, 3 covered, 75.0 %; 8 ways, 4 taken, 50.0 %),
// clicks it, which goes to lib.c's annotated source (#F0-2, its
// heading lib.c's path), and reads there line 3's branch marks from the
// DOM: "[ + + ][ - + ]", block 0 to its target in 1 + 2 runs, the line
// partial; and line 9's, which no profile ran, "[ # # ]".
func TestCombinedHTMLBrowser(t *testing.T) {
	b, ok := testutil.OpenBrowser(t, "chromium-headless-shell", 1200, 900)
	if !ok {
		t.Skip("chromium-headless-shell is not installed")
	}
	o, dir := suiteSources(t)
	ta, tb := branchTests(t)
	file := filepath.Join(t.TempDir(), "suite.html")
	if err := os.WriteFile(file, []byte(combinedPage(t, o, ta, tb)), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Open("file://" + file)
	var row []string
	b.Eval(`(function () {
		var rows = document.querySelectorAll("#files tbody tr.f");
		for (var i = 0; i < rows.length; i++) {
			if (rows[i].cells[0].textContent === "lib.c") {
				return Array.prototype.map.call(rows[i].cells, function (td) { return td.textContent; });
			}
		}
		return null;
	})()`, &row)
	if got, want := strings.Join(row, " "), "lib.c 4 3 75.0 8 4 50.0"; got != want {
		t.Errorf("lib.c's row of Files: %q, want %q", got, want)
	}
	b.Click(`#files tr.f a[href="#F0-2"]`)
	b.Wait(`location.hash === "#F0-2"`)
	type line struct {
		Marks, Class string
		Titles       []string
	}
	var got struct {
		Heading  string
		L3, L9   line
		InSource bool
	}
	b.Eval(`(function () {
		var file = document.getElementById(location.hash.slice(1));
		function line(n) {
			var tr = file.querySelector("#L0-2-" + n), td = tr.querySelector("td.br");
			return {Marks: td.textContent, Class: tr.className,
				Titles: Array.prototype.map.call(td.querySelectorAll("span"), function (s) { return s.title; })};
		}
		return {Heading: file.querySelector("h3").textContent, L3: line(3), L9: line(9),
			InSource: file.closest("#source") !== null};
	})()`, &got)
	if got.Heading != filepath.Join(dir, "lib.c") || !got.InSource {
		t.Errorf("the click went to %q (in the annotated source: %v), want lib.c's source", got.Heading, got.InSource)
	}
	if got.L3.Marks != "[ + + ][ - + ]" || got.L3.Class != "run partial" || len(got.L3.Titles) != 4 ||
		got.L3.Titles[0] != "Branch 0, to its target: taken in 3 runs" || got.L3.Titles[2] != "Branch 1, to its target: never taken" {
		t.Errorf("lib.c's line 3: %+v", got.L3)
	}
	if got.L9.Marks != "[ # # ]" || got.L9.Class != "never" {
		t.Errorf("lib.c's line 9: %+v", got.L9)
	}
}
