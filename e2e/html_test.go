package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// htmlPNG is -html-png: TestHTMLFlameGraph saves its screenshot as
// docs/images/html-report.png, the picture of docs/exports.md.
var htmlPNG = flag.Bool("html-png", false, "save TestHTMLFlameGraph's screenshot as docs/images/html-report.png")

// chromiumName is the browser the HTML report is read with: Debian's
// chromium-headless-shell package.
const chromiumName = "chromium-headless-shell"

// The window the pages are laid out in, in CSS pixels.
const windowWidth, windowHeight = 1200, 1100

// chromium runs headless Chromium on the page file with the fragment
// fragment and one action (--dump-dom, --screenshot=FILE), and returns
// its standard output. It reports false when Chromium is not installed
// (as the other consumers, in exports_test.go: the arm64 VM has none).
func chromium(t *testing.T, file, fragment, action string) (string, bool) {
	t.Helper()
	if !testutil.HaveTool(chromiumName) {
		if *htmlPNG {
			t.Fatalf("-html-png: %s is not installed", chromiumName)
		}
		t.Logf("%s not installed: the page is not read in a browser", chromiumName)
		return "", false
	}
	args := []string{"--disable-gpu", "--hide-scrollbars", "--no-first-run",
		fmt.Sprintf("--window-size=%d,%d", windowWidth, windowHeight),
		"--user-data-dir=" + t.TempDir(), action, "file://" + file + fragment}
	if os.Geteuid() == 0 {
		args = append([]string{"--no-sandbox"}, args...) // (Chromium's sandbox refuses root)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, chromiumName, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", chromiumName, strings.Join(args, " "), err, errb.String())
	}
	return out.String(), true
}

// domTable returns the rows of the table of a page's DOM, each the text
// of its cells, in the order the DOM has them, and the column sorted
// (its data-key and aria-sort).
func domTable(t *testing.T, dom string) (rows [][]string, sorted string) {
	t.Helper()
	start := strings.Index(dom, `<table id="table">`)
	if start < 0 {
		t.Fatalf("no table in the DOM:\n%.2000s", dom)
	}
	table := dom[start:]
	table = table[:strings.Index(table, "</table>")]
	if m := regexp.MustCompile(`<th data-key="([a-z-]+)"[^>]* aria-sort="([a-z]+)"`).FindStringSubmatch(table); m != nil {
		sorted = m[1] + " " + m[2]
	}
	tag := regexp.MustCompile(`<[^>]*>`)
	for _, tr := range regexp.MustCompile(`(?s)<tr[^>]*>(.*?)</tr>`).FindAllStringSubmatch(table[strings.Index(table, "<tbody>"):], -1) {
		var cells []string
		for _, td := range regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(tr[1], -1) {
			cells = append(cells, tag.ReplaceAllString(td[1], ""))
		}
		rows = append(rows, cells)
	}
	return rows, sorted
}

// column returns the index of the column named by its data-key.
func column(t *testing.T, dom, key string) int {
	t.Helper()
	keys := regexp.MustCompile(`<th data-key="([a-z-]+)"`).FindAllStringSubmatch(dom, -1)
	for i, k := range keys {
		if k[1] == key {
			return i
		}
	}
	t.Fatalf("no column %s", key)
	return -1
}

// checkScreenshot checks that Chromium drew the page: a PNG of the
// window's size, of more than a few colours.
func checkScreenshot(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if s := img.Bounds().Size(); s != (image.Point{windowWidth, windowHeight}) {
		t.Errorf("screenshot of %v, want %dx%d", s, windowWidth, windowHeight)
	}
	colours := map[[4]uint32]bool{}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y += 3 {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}] = true
		}
	}
	if len(colours) < 20 || len(b) < 20_000 {
		t.Errorf("screenshot of %d bytes, %d colours: the page was not drawn", len(b), len(colours))
	}
	return b
}

// checkFlame checks the flame graph of a page's DOM against the stacks of
// its profile, the .pbt at path: it draws a frame, named in its tooltip,
// of each function whose stacks take enough of it that one of its frames
// is half a pixel wide or more (narrower ones are not drawn), and none of
// a function no stack has. It returns the names drawn.
func checkFlame(t *testing.T, dom, path string) map[string]bool {
	t.Helper()
	start := strings.Index(dom, `<svg class="flame"`)
	if start < 0 {
		t.Fatal("no flame graph")
	}
	svg := dom[start:]
	svg = svg[:strings.Index(svg, "</svg>")]
	m, err := datafile.OpenMerged(path)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	through := map[string]int64{}
	frames := map[string]map[string]bool{} // each function's frames, by their stack
	for _, s := range m.Stats.Stacks {
		if s.Time <= 0 {
			continue
		}
		total += s.Time
		seen := map[int]bool{}
		stack := ""
		for _, f := range append(slices.Clone(s.Callers), s.Func) {
			if f < 0 {
				continue
			}
			name := m.Plan.Funcs[f].Name
			stack += ";" + name
			if frames[name] == nil {
				frames[name] = map[string]bool{}
			}
			frames[name][stack] = true
			if !seen[f] {
				through[name] += s.Time
				seen[f] = true
			}
		}
	}
	drawn := map[string]bool{}
	for _, f := range regexp.MustCompile(`<title>([^\n<]+)\n`).FindAllStringSubmatch(svg, -1) {
		drawn[f[1]] = true
	}
	for name, ns := range through {
		// (Chains deeper than the two callers a stack names, as the
		// page may draw them, can split a function into more frames:
		// eight are allowed for.)
		if float64(ns)/float64(total)*(windowWidth-10) >= 0.5*float64(max(len(frames[name]), 8))+0.01 && !drawn[name] {
			t.Errorf("the flame graph has no frame of %s (%d ns of %d)", name, ns, total)
		}
	}
	for name := range drawn {
		if _, ok := through[name]; !ok && name != "all" {
			t.Errorf("the flame graph has a frame of %s, which no stack has", name)
		}
	}
	if !drawn["all"] || len(m.Stats.Stacks) == 0 {
		t.Errorf("the flame graph of %d stacks draws %v", len(m.Stats.Stacks), drawn)
	}
	return drawn
}

// TestHTMLReport profiles timing.c's at mode with /FT /AT (main calls
// caller_a once and caller_b twice; caller_a calls leaf 3 times, each
// caller_b twice; rec(4) recurses 4 levels: leaf 7 calls, rec 5,
// caller_b 2, caller_a and main 1), writes plist --format=html and reads
// the page in headless Chromium: its DOM after the script ran, sorted by
// the address's fragment (by calls, by name), holds those calls, and the
// flame graph the frames of its stacks (checkFlame).
func TestHTMLReport(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "timing", "-O0")
	dir, r := workflowWith(t, prog, []string{"/FT", "/AT"}, nil, "at")
	if r.status != 0 {
		t.Fatalf("profile: status %d\n%s", r.status, r.stderr)
	}
	out := must(t, dir, "plist", "/nologo", "--format=html", "-o", "report.html", "timing")
	if out.stdout != "" || out.stderr != "" {
		t.Errorf("plist --format=html -o report.html printed %q, %q", out.stdout, out.stderr)
	}
	file := filepath.Join(dir, "report.html")
	page, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(page, []byte("http://")) || bytes.Contains(page, []byte("https://")) {
		t.Error("the page names a web address")
	}
	calls := map[string]string{"leaf": "7", "rec": "5", "caller_b": "2", "caller_a": "1", "main": "1"}
	for name, n := range calls {
		if !regexp.MustCompile(`<tr><td>(<a href="#fn-\d+">)?` + name + `(</a>)?</td>.*<td class="n" data-v="` + n + `">` + n + `</td></tr>`).Match(page) {
			t.Errorf("the page has no row of %s with %s calls", name, n)
		}
	}

	dom, ok := chromium(t, file, "#sort=hits-desc", "--dump-dom")
	if !ok {
		return
	}
	rows, sorted := domTable(t, dom)
	hits, name := column(t, dom, "hits"), column(t, dom, "name")
	if sorted != "hits descending" {
		t.Errorf("#sort=hits-desc: the column sorted is %q", sorted)
	}
	if len(rows) < 5 {
		t.Fatalf("%d rows: %q", len(rows), rows)
	}
	// Sorted by calls, highest first: leaf, rec, caller_b, then the two
	// functions of one call in the order they had (by time).
	var order []string
	prev := int64(-1)
	for i, row := range rows {
		n, err := strconv.ParseInt(row[hits], 10, 64)
		if err != nil || (prev >= 0 && n > prev) {
			t.Errorf("row %d: %q after %d calls: not in order", i, row, prev)
		}
		prev = n
		if want, ok := calls[row[name]]; ok {
			if row[hits] != want {
				t.Errorf("%s: %s calls, want %s", row[name], row[hits], want)
			}
			order = append(order, row[name])
		}
	}
	if len(order) != 5 || strings.Join(order[:3], " ") != "leaf rec caller_b" {
		t.Errorf("functions in the order %q, want leaf rec caller_b, then caller_a and main", order)
	}
	checkFlame(t, dom, filepath.Join(dir, "timing.pbt"))
	checkCallView(t, file)

	dom, _ = chromium(t, file, "#sort=name-asc", "--dump-dom")
	rows, sorted = domTable(t, dom)
	var names []string
	for _, row := range rows {
		names = append(names, row[name])
	}
	if sorted != "name ascending" || !slices.IsSorted(names) || len(names) != len(rows) {
		t.Errorf("#sort=name-asc: %q sorted, names %q", sorted, names)
	}

}

// TestHTMLFlameGraph profiles the examples' primes with /FT /AT: main
// calls coprime 1000 times, which calls gcd; then count_naive, which calls
// is_prime for each number from 2 below the limit, and sieve. No chain of
// calls is deeper than three functions, which the profile records whole,
// so every stack starts at main: the flame graph has one frame over all,
// main, 100% of the time, and the frames its stacks call for
// (checkFlame). The page's
// screenshot is a drawn page (docs/images/html-report.png with
// -html-png).
func TestHTMLFlameGraph(t *testing.T) {
	testutil.MustHavePtrace(t)
	limit := testutil.Scale(100000)
	dir, r := workflow(t, testutil.BuildExample(t, "primes"), []string{"/FT", "/AT"}, strconv.Itoa(limit))
	if r.status != 0 {
		t.Fatalf("profile: status %d\n%s", r.status, r.stderr)
	}
	must(t, dir, "plist", "/nologo", "--format=html", "-o", "primes.html", "primes")
	file := filepath.Join(dir, "primes.html")
	dom, ok := chromium(t, file, "", "--dump-dom")
	if !ok {
		return
	}
	rows, _ := domTable(t, dom)
	name, hits := column(t, dom, "name"), column(t, dom, "hits")
	calls := map[string]string{}
	for _, row := range rows {
		calls[row[name]] = row[hits]
	}
	want := map[string]string{"main": "1", "coprime": "1000", "gcd": "1000", "count_naive": "1",
		"is_prime": strconv.Itoa(limit - 2), "sieve": "1"}
	for fn, n := range want {
		if calls[fn] != n {
			t.Errorf("%s: %s calls, want %s", fn, calls[fn], n)
		}
	}
	if len(calls) != len(want) {
		t.Errorf("rows of %v, want those of %v", calls, want)
	}
	checkFlame(t, dom, filepath.Join(dir, "primes.pbt"))
	checkFlameExplore(t, file)
	if !regexp.MustCompile(`<g><title>main\n[0-9.]+ ms, 100.0% of the stacks' time</title><rect x="4" y="[0-9.]+" width="1191.5"`).MatchString(dom) {
		t.Error("no frame of main over the whole flame graph")
	}

	shot := filepath.Join(dir, "primes.png")
	chromium(t, file, "", "--screenshot="+shot)
	b := checkScreenshot(t, shot)
	if *htmlPNG {
		if len(b) > 200_000 {
			t.Errorf("the screenshot has %d bytes, more than docs/ should hold", len(b))
		}
		if err := os.WriteFile(filepath.Join(testutil.Root(t), "docs", "images", "html-report.png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHTMLLineReport profiles counts.c with /LC and reads the page's
// annotated source in headless Chromium: the line of the loop that calls
// f ran 1000 times, the line of fib's test 1973 times (fib(15)'s calls),
// the most of any line, and h's line, never called, is marked so; sorted
// by hits, fib's lines come first.
func TestHTMLLineReport(t *testing.T) {
	testutil.MustHavePtrace(t)
	if !testutil.HaveTool(chromiumName) {
		// (Nor are the sources, whose lines the page annotates, where
		// no browser is: the arm64 VM.)
		t.Skipf("%s not installed: the page is not read in a browser", chromiumName)
	}
	prog := testutil.BuildC(t, "counts")
	dir, r := workflow(t, prog, []string{"/LC"})
	if r.status != 0 {
		t.Fatalf("profile: status %d\n%s", r.status, r.stderr)
	}
	src := filepath.Join(testutil.Root(t), "testdata", "progs", "c")
	must(t, dir, "plist", "/nologo", "--format=html", "/D", src, "-o", "lines.html", "counts")
	text, err := os.ReadFile(filepath.Join(src, "counts.c"))
	if err != nil {
		t.Fatal(err)
	}
	lineOf := func(s string) int {
		for i, l := range strings.Split(string(text), "\n") {
			if strings.Contains(l, s) {
				return i + 1
			}
		}
		t.Fatalf("counts.c has no line %q", s)
		return 0
	}
	file := filepath.Join(dir, "lines.html")
	dom, ok := chromium(t, file, "#sort=hits-desc", "--dump-dom")
	if !ok {
		page, _ := os.ReadFile(file)
		dom = string(page)
	}
	for _, c := range []struct {
		code, class, hits string
	}{
		{"r += f(i);", "run", "1000"},
		{"if (n < 2)", "hot", "1973"},
		{"s_total *= x;", "never", "0"},
	} {
		re := regexp.MustCompile(`<tr id="L0-\d+-` + strconv.Itoa(lineOf(c.code)) + `" class="([a-z]+)"><td class="ln">\d+</td><td class="c">(\d+)</td>`)
		m := re.FindStringSubmatch(dom)
		if m == nil || m[2] != c.hits || (m[1] != c.class && !(c.class == "run" && m[1] == "hot")) {
			t.Errorf("%q: %v, want %s hits, a line %s", c.code, m, c.hits, c.class)
		}
	}
	if !ok {
		return
	}
	rows, sorted := domTable(t, dom)
	hits := column(t, dom, "hits")
	if sorted != "hits descending" || len(rows) == 0 || rows[0][hits] != "1973" {
		t.Errorf("#sort=hits-desc: %q sorted, first row %q, want 1973 hits", sorted, rows[0])
	}
	shot := filepath.Join(dir, "lines.png")
	chromium(t, file, "", "--screenshot="+shot)
	checkScreenshot(t, shot)
}

// TestHTMLLineExplore opens counts.c's line profile (/LC) in headless
// Chromium, driven as a user would: the page opens on the hottest lines
// (fib's test first, 1973 hits, the table sorted by hits), and its
// summary by directory and file gives counts.c's lines, those that ran
// and their hits as the lcov tracefile of the same profile counts them;
// a click on the file's name goes to its annotated source.
func TestHTMLLineExplore(t *testing.T) {
	testutil.MustHavePtrace(t)
	b, ok := testutil.OpenBrowser(t, chromiumName, windowWidth, windowHeight)
	if !ok {
		t.Skipf("%s not installed: the page is not read in a browser", chromiumName)
	}
	prog := testutil.BuildC(t, "counts")
	dir, r := workflow(t, prog, []string{"/LC"})
	if r.status != 0 {
		t.Fatalf("profile: status %d\n%s", r.status, r.stderr)
	}
	src := filepath.Join(testutil.Root(t), "testdata", "progs", "c")
	must(t, dir, "plist", "/nologo", "--format=html", "/D", src, "-o", "lines.html", "counts")
	must(t, dir, "plist", "/nologo", "--format=lcov", "-o", "lines.info", "counts")
	info, err := os.ReadFile(filepath.Join(dir, "lines.info"))
	if err != nil {
		t.Fatal(err)
	}
	var lines, run int
	var hits uint64
	for _, m := range regexp.MustCompile(`(?m)^DA:\d+,(\d+)$`).FindAllStringSubmatch(string(info), -1) {
		n, _ := strconv.ParseUint(m[1], 10, 64)
		lines++
		hits += n
		if n > 0 {
			run++
		}
	}
	b.Open("file://" + filepath.Join(dir, "lines.html"))
	var first struct {
		Sorted string
		Hits   string
	}
	b.Eval(`(function () {
		var th = document.querySelector('#table th[aria-sort]'), hits = document.querySelector('#table th[data-key=hits]').cellIndex;
		return {Sorted: th ? th.getAttribute('data-key') + ' ' + th.getAttribute('aria-sort') : '', Hits: document.querySelector('#table tbody tr').cells[hits].textContent};
	})()`, &first)
	if first.Sorted != "hits descending" || first.Hits != "1973" {
		t.Errorf("the page opens sorted by %q, its first line with %s hits; want hits descending and fib's test, 1973", first.Sorted, first.Hits)
	}
	var row []string
	b.Eval(`Array.prototype.map.call(document.querySelector('#files tr.f').cells, function (c) { return c.textContent; })`, &row)
	want := []string{"counts.c", strconv.Itoa(lines), strconv.Itoa(run), fmt.Sprintf("%.1f", 100*float64(run)/float64(lines)), strconv.FormatUint(hits, 10), "100.0"}
	if !slices.Equal(row, want) {
		t.Errorf("the summary's row of counts.c: %q, want %q (the lcov tracefile's lines)", row, want)
	}
	b.Click("#files tr.f a")
	var at struct {
		Hash string
		Top  float64
	}
	b.Eval(`({Hash: location.hash, Top: document.querySelector(location.hash || 'body').getBoundingClientRect().top})`, &at)
	if at.Hash != "#F0-0" || at.Top < -1 || at.Top > 50 {
		t.Errorf("after a click on counts.c: at %q, its top %v px from the window's; want #F0-0 at the top", at.Hash, at.Top)
	}
}

// openPage opens the page file in headless Chromium, the window the
// pages are laid out in; false where it is not installed (the arm64 VM).
func openPage(t *testing.T, file string) (*testutil.Browser, bool) {
	t.Helper()
	b, ok := testutil.OpenBrowser(t, chromiumName, windowWidth, windowHeight)
	if ok {
		b.Open("file://" + file)
	}
	return b, ok
}

// callView is the page's view of a function's callers and callees as
// the browser shows it: its heading, and each table's rows (name, calls).
type callView struct {
	Name             string
	Callers, Callees [][2]string
}

// readCallView reads the view the page shows, once it shows the view
// of the function the address names.
func readCallView(b *testutil.Browser) callView {
	b.Wait(`(function () { var v = document.getElementById("callview"), d = JSON.parse(document.getElementById("calls-data").textContent), m = /^#fn-(\d+)$/.exec(location.hash);
		return m && !v.hidden && v.querySelector("h3") && v.querySelector("h3").textContent === d.names[m[1]]; })()`)
	var v callView
	b.Eval(`(function () {
		var view = document.getElementById("callview"), rows = function (sel) {
			return Array.prototype.map.call(view.querySelectorAll(sel + " tbody tr"), function (tr) {
				return [tr.cells[0].textContent, tr.cells.length > 1 ? tr.cells[1].textContent : ""];
			});
		};
		return view.hidden ? {} : {Name: view.querySelector("h3").textContent, Callers: rows(".callers"), Callees: rows(".callees")};
	})()`, &v)
	return v
}

// checkCallView drives timing.c's page in headless Chromium as a user
// does: a click on leaf's name in the table shows who called it, and
// how often (caller_b 4 times, caller_a 3), and that it calls no
// profiled function; a click on caller_a there shows its caller, main
// (once), and its callee, leaf (3 times); the browser's Back shows
// leaf's again, and main's box in the flame graph, clicked, then the
// graph's link to its callers and callees, shows main's: caller_a once,
// caller_b twice. The filter ^caller_ focuses the table on caller_a and
// caller_b and the flame graph on their stacks (leaf above them, main
// below; rec's gone); hiding them leaves out their rows, their boxes
// and their callees' (leaf), and their rows in main's view.
func checkCallView(t *testing.T, file string) {
	t.Helper()
	b, ok := openPage(t, file)
	if !ok {
		return
	}
	row := func(rows [][2]string, name string) string {
		for _, r := range rows {
			if r[0] == name {
				return r[1]
			}
		}
		return ""
	}
	var leafHref string
	b.Eval(`(function () { var links = document.querySelectorAll('#table td a'); for (var i = 0; i < links.length; i++) { if (links[i].textContent === 'leaf') { return links[i].getAttribute('href'); } } return ''; })()`, &leafHref)
	if leafHref == "" {
		t.Fatal("leaf's name in the table links to no view")
	}
	b.Click(`#table a[href="` + leafHref + `"]`)
	v := readCallView(b)
	if v.Name != "leaf" || row(v.Callers, "caller_b") != "4" || row(v.Callers, "caller_a") != "3" || len(v.Callers) != 2 || len(v.Callees) != 1 || v.Callees[0][0] != "(none)" {
		t.Errorf("leaf's view: %+v; want called by caller_b 4 times and caller_a 3, calling none", v)
	}
	b.Click(`#callview .callers a[href]:not([href="` + leafHref + `"])`)
	v = readCallView(b)
	if v.Name == "caller_b" { // (the costlier caller first: go to caller_a)
		b.Eval(`history.back()`, nil)
		b.Click(`#callview .callers tr:nth-child(2) a`)
		v = readCallView(b)
	}
	if v.Name != "caller_a" || row(v.Callers, "main") != "1" || row(v.Callees, "leaf") != "3" {
		t.Errorf("caller_a's view: %+v; want called once by main, calling leaf 3 times", v)
	}
	b.Eval(`history.back()`, nil)
	if v = readCallView(b); v.Name != "leaf" {
		t.Errorf("after Back the view is %q's, want leaf's", v.Name)
	}
	var mainFrame string
	b.Eval(`(function () { var g = document.querySelectorAll('.flame a'); for (var i = 0; i < g.length; i++) { if (g[i].querySelector('title').textContent.split('\n')[0] === 'main') { return g[i].getAttribute('href'); } } return ''; })()`, &mainFrame)
	if mainFrame == "" {
		t.Fatal("main's box in the flame graph links to no view")
	}
	b.Click(`.flame a[href="` + mainFrame + `"] rect`) // (zooms on main)
	b.Click(`#flame-view`)
	if v = readCallView(b); v.Name != "main" || row(v.Callees, "caller_a") != "1" || row(v.Callees, "caller_b") != "2" {
		t.Errorf("main's view from the flame graph: %+v; want calling caller_a once and caller_b twice", v)
	}
	b.Click("#flame-reset")

	// The filter: focus on caller_a and caller_b, then hide them.
	type filtered struct {
		Rows  []string
		Count string
		Boxes map[string][2]int // (each function's boxes: shown, hidden)
	}
	read := func() filtered {
		var f filtered
		b.Eval(`(function () {
			var rows = [], boxes = {};
			Array.prototype.forEach.call(document.querySelectorAll("#table tbody tr"), function (tr) {
				if (!tr.hidden) { rows.push(tr.cells[0].textContent); }
			});
			Array.prototype.forEach.call(document.querySelectorAll("svg.flame > a > g, svg.flame > g"), function (g) {
				var name = g.querySelector("title").textContent.split("\n")[0], n = boxes[name] || [0, 0];
				n[g.style.display === "none" ? 1 : 0]++;
				boxes[name] = n;
			});
			return {Rows: rows.sort(), Count: document.getElementById("filter-count").textContent, Boxes: boxes};
		})()`, &f)
		return f
	}
	b.Type("#filter", "^caller_")
	b.Wait(`document.getElementById("filter-count").textContent !== ""`)
	f := read()
	if strings.Join(f.Rows, " ") != "caller_a caller_b" || !strings.HasPrefix(f.Count, "2 of ") {
		t.Errorf("focus on ^caller_: rows %q (%q), want caller_a and caller_b", f.Rows, f.Count)
	}
	if f.Boxes["rec"][0] != 0 || f.Boxes["leaf"][0] == 0 || f.Boxes["main"][0] != 1 || f.Boxes["caller_a"][1] != 0 {
		t.Errorf("focus on ^caller_: the flame graph's boxes (shown, hidden) %v; want rec's hidden, leaf's and main's shown", f.Boxes)
	}
	b.Click(`input[name=filter-mode][value=hide]`)
	b.Wait(`!document.getElementById("filter-count").textContent.startsWith("2 of ")`)
	f = read()
	if slices.Contains(f.Rows, "caller_a") || slices.Contains(f.Rows, "caller_b") || !slices.Contains(f.Rows, "rec") {
		t.Errorf("hiding ^caller_: rows %q", f.Rows)
	}
	if f.Boxes["caller_a"][0] != 0 || f.Boxes["leaf"][0] != 0 || f.Boxes["rec"][0] == 0 || f.Boxes["main"][0] != 1 {
		t.Errorf("hiding ^caller_: the flame graph's boxes (shown, hidden) %v; want caller_a's and leaf's (their callee) hidden, rec's and main's shown", f.Boxes)
	}
	if v = readCallView(b); v.Name != "main" || row(v.Callees, "caller_a") != "" || row(v.Callees, "rec") == "" {
		t.Errorf("main's view hiding ^caller_: %+v; want rec alone", v)
	}
}

// flameBox is a box of the flame graph (or of the icicle) as the
// browser lays it out: its function, its place and whether it shows.
type flameBox struct {
	Name         string
	X, Y, W      float64
	Shown, Match bool
	Caller       bool
	Href         string
	Share        float64 // (its title's share of the stacks' time)
}

// flameBoxes reads the boxes of the flame graph, or of the icicle.
func flameBoxes(b *testutil.Browser, icicle bool) []flameBox {
	var boxes []flameBox
	sel := "svg.flame > a > g, svg.flame > g:not(#icicle)"
	if icicle {
		sel = "#icicle g"
	}
	b.Eval(`Array.prototype.map.call(document.querySelectorAll("`+sel+`"), function (g) {
		var r = g.querySelector("rect"), title = g.querySelector("title").textContent, m = / ([0-9.]+)% of/.exec(title);
		return {Name: title.split("\n")[0], X: Number(r.getAttribute("x")), Y: Number(r.getAttribute("y")), W: Number(r.getAttribute("width")),
			Shown: g.style.display !== "none", Match: g.classList.contains("match"), Caller: g.classList.contains("caller"),
			Href: g.parentNode.getAttribute("href") || "", Share: m ? Number(m[1]) : 0};
	})`, &boxes)
	return boxes
}

// checkFlameExplore drives primes' flame graph in headless Chromium:
//   - searching "prime" marks coprime's and is_prime's boxes, and their
//     share is the sum of their boxes' shares (neither holds the other);
//   - a click on count_naive zooms on it: it spans the graph, is_prime
//     above it in proportion, main below it full width and faded,
//     coprime hidden;
//   - zoomed on is_prime, Callers flips to the icicle of its callers:
//     is_prime on top, then count_naive, then main, each full width;
//   - Reset shows the whole graph again, and the bar's link of a
//     zoomed gcd goes to its callers and callees: coprime, 1000 calls.
func checkFlameExplore(t *testing.T, file string) {
	t.Helper()
	b, ok := openPage(t, file)
	if !ok {
		return
	}
	boxes := flameBoxes(b, false)
	full := 0.0
	var want float64
	var n int
	for _, f := range boxes {
		full = max(full, f.W)
		if f.Name == "coprime" || f.Name == "is_prime" {
			want += f.Share
			n++
		}
	}
	b.Type("#flame-search", "prime")
	b.Wait(`document.getElementById("flame-matched").textContent !== ""`)
	var said string
	b.Eval(`document.getElementById("flame-matched").textContent`, &said)
	m := regexp.MustCompile(`^(\d+) boxes match: ([0-9.]+)% of the time$`).FindStringSubmatch(said)
	if m == nil || m[1] != strconv.Itoa(n) || n < 2 {
		t.Fatalf("the search of prime says %q, want %d boxes", said, n)
	}
	if got, _ := strconv.ParseFloat(m[2], 64); got < want-0.15 || got > want+0.15 {
		t.Errorf("the search of prime: %.1f%% of the time, want coprime's and is_prime's %.1f%%", got, want)
	}
	for _, f := range flameBoxes(b, false) {
		if f.Match != (f.Name == "coprime" || f.Name == "is_prime") {
			t.Errorf("%s's box: marked %v", f.Name, f.Match)
		}
	}
	b.Eval(`(function () { var s = document.getElementById("flame-search"); s.value = ""; s.dispatchEvent(new Event("input")); })()`, nil)

	find := func(boxes []flameBox, name string) flameBox {
		for _, f := range boxes {
			if f.Name == name {
				return f
			}
		}
		t.Fatalf("no box of %s in %+v", name, boxes)
		return flameBox{}
	}
	naive, prime := find(boxes, "count_naive"), find(boxes, "is_prime")
	b.Click(`.flame a[href="` + naive.Href + `"] rect`)
	b.Wait(`document.getElementById("flame-zoomed").textContent === "count_naive"`)
	zoomed := flameBoxes(b, false)
	near := func(a, b float64) bool { return a > b-1 && a < b+1 }
	if z := find(zoomed, "count_naive"); !near(z.X, 4) || !near(z.W, full) {
		t.Errorf("zoomed on count_naive: its box at %v, %v wide; want 4, %v", z.X, z.W, full)
	}
	if p := find(zoomed, "is_prime"); !p.Shown || !near(p.W+0.5, (prime.W+0.5)*(full+0.5)/(naive.W+0.5)) {
		t.Errorf("zoomed on count_naive: is_prime %v wide, want %v", p.W, (prime.W+0.5)*(full+0.5)/(naive.W+0.5)-0.5)
	}
	if c, mn := find(zoomed, "coprime"), find(zoomed, "main"); c.Shown || !mn.Caller || !near(mn.W, full) {
		t.Errorf("zoomed on count_naive: coprime shown %v, main faded %v and %v wide", c.Shown, mn.Caller, mn.W)
	}

	b.Click(`.flame a[href="` + prime.Href + `"] rect`)
	b.Wait(`document.getElementById("flame-zoomed").textContent === "is_prime"`)
	b.Click("#flame-callers")
	b.Wait(`document.getElementById("icicle") !== null`)
	ice := flameBoxes(b, true)
	if len(ice) != 3 || ice[0].Name != "is_prime" || ice[1].Name != "count_naive" || ice[2].Name != "main" {
		t.Fatalf("the icicle of is_prime's callers: %+v, want is_prime, count_naive, main", ice)
	}
	for i, f := range ice {
		if !near(f.W, full) || !near(f.Y, 4.5+18*float64(i)) {
			t.Errorf("the icicle's %s at y %v, %v wide; want row %d, %v wide", f.Name, f.Y, f.W, i, full)
		}
	}
	b.Click("#flame-callers")
	b.Wait(`document.getElementById("icicle") === null`)
	b.Click("#flame-reset")
	for _, f := range flameBoxes(b, false) {
		if o := find(boxes, f.Name); !f.Shown || f.Caller || !near(f.W, o.W) {
			t.Errorf("after Reset: %s shown %v, %v wide, want %v", f.Name, f.Shown, f.W, o.W)
		}
	}
	b.Click(`.flame a[href="` + find(boxes, "gcd").Href + `"] rect`)
	b.Click("#flame-view")
	if v := readCallView(b); v.Name != "gcd" || len(v.Callers) != 1 || v.Callers[0] != [2]string{"coprime", "1000"} {
		t.Errorf("gcd's view from the flame graph: %+v, want called by coprime 1000 times", v)
	}
}

// TestHTMLSampledSource samples primes (/FS, with its sampled stacks)
// and reads its page in headless Chromium: the sampled lines of
// is_prime's loop, the hottest, link to is_prime's callers and callees,
// and a click on one shows them: called by count_naive.
func TestHTMLSampledSource(t *testing.T) {
	testutil.MustHavePtrace(t)
	b, ok := testutil.OpenBrowser(t, chromiumName, windowWidth, windowHeight)
	if !ok {
		t.Skipf("%s not installed: the page is not read in a browser", chromiumName)
	}
	dir, r := workflow(t, testutil.BuildExample(t, "primes"), []string{"/FS"}, strconv.Itoa(testutil.Scale(200000)))
	if r.status != 0 {
		t.Fatalf("profile: status %d\n%s", r.status, r.stderr)
	}
	needsPerf(t, r.stderr)
	src := filepath.Join(testutil.Root(t), "examples", "c")
	must(t, dir, "plist", "/nologo", "--format=html", "/D", src, "-o", "primes.html", "primes")
	b.Open("file://" + filepath.Join(dir, "primes.html"))
	var href string
	b.Eval(`(function () {
		var rows = document.querySelectorAll(".src tbody tr");
		for (var i = 0; i < rows.length; i++) {
			var code = rows[i].cells[3].textContent, a = rows[i].cells[1].querySelector("a");
			if (code.indexOf("n % d == 0") >= 0 && a) { return a.getAttribute("href"); }
		}
		return "";
	})()`, &href)
	if href == "" {
		t.Fatal("is_prime's sampled line links to no view")
	}
	b.Click(`.src td.c a[href="` + href + `"]`)
	if v := readCallView(b); v.Name != "is_prime" || len(v.Callers) != 1 || v.Callers[0][0] != "count_naive" {
		t.Errorf("the view from is_prime's line: %+v, want is_prime's, called by count_naive", v)
	}
}
