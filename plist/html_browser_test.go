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
