package plist

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// htmlCases are the profiles the HTML report is checked on: every profile
// type, with and without /AT, and line coverage with branches. Those of
// htmlGoldens have goldens.
func htmlCases(t *testing.T) map[string]*datafile.Merged {
	t.Helper()
	return map[string]*datafile.Merged{
		"cpprust":         readInput(t, "cpprust"),
		"lines":           readInput(t, "lines"),
		"ftime-at":        withTimedStacks(ftimeAT, ftimeRun)(""),
		"timing":          readInput(t, "timing"),
		"coverage":        readInput(t, "coverage"),
		"linecov":         readInput(t, "linecov"),
		"branchcov":       readInput(t, "branchcov"),
		"attribution":     readInput(t, "attribution"),
		"sampling":        readInput(t, "sampling"),
		"sampling-at":     readInput(t, "sampling-at"),
		"sampling-stacks": readInput(t, "sampling-stacks"),
		"never":           readInput(t, "never"),
	}
}

// htmlGoldens are the cases pinned by testdata/export/NAME.html.golden: a
// function counting profile, a line counting profile (one source file
// found in its compilation directory, one not found, one in a library),
// a timing profile made with /AT (its flame graph), and line coverage
// with branches (their marks and columns).
var htmlGoldens = []string{"cpprust", "lines", "ftime-at", "branchcov"}

// writeHTMLReport writes m's HTML report with the options of the goldens.
func writeHTMLReport(t *testing.T, name string, m *datafile.Merged, set func(*Options)) string {
	t.Helper()
	o := DefaultOptions()
	o.Format, o.Version, o.Path = FormatHTML, "test", name+".pbt"
	o.Warn = func(*prf.Diagnostic) {} // (the listing's, PRF4481 for "never")
	if set != nil {
		set(&o)
	}
	var buf bytes.Buffer
	if err := Generate(&buf, m, o); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return buf.String()
}

// TestHTMLGoldens pins the page of four profiles
// (testdata/export/NAME.html.golden, rewritten with -update).
func TestHTMLGoldens(t *testing.T) {
	cases := htmlCases(t)
	for _, name := range htmlGoldens {
		t.Run(name, func(t *testing.T) {
			page := writeHTMLReport(t, name, cases[name], nil)
			testutil.Golden(t, filepath.Join("testdata", "export", name+".html.golden"), []byte(page))
		})
	}
}

// external matches what would make a page fetch something: a src or an
// href that is not a fragment, a CSS url() or @import, a script's fetch,
// XMLHttpRequest, import() or WebSocket, an element that loads, or any
// http(s) address at all.
var external = regexp.MustCompile(`(?i)\ssrc\s*=|\shref\s*=\s*"[^#]|url\(|@import|fetch\(|XMLHttpRequest|import\(|WebSocket|EventSource|sendBeacon|<(link|img|iframe|object|embed|audio|video|source|base|form)[\s>]|https?://|//[a-z0-9.-]+\.[a-z]{2,}/`)

// TestHTMLSelfContained: every page of every profile type refers to
// nothing outside itself, and says so to the browser (its
// Content-Security-Policy allows no fetch).
func TestHTMLSelfContained(t *testing.T) {
	for name, m := range htmlCases(t) {
		t.Run(name, func(t *testing.T) {
			page := writeHTMLReport(t, name, m, nil)
			if loc := external.FindStringIndex(page); loc != nil {
				t.Errorf("the page refers outside itself: %q", page[max(loc[0]-60, 0):min(loc[1]+60, len(page))])
			}
			if !strings.Contains(page, `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">`) {
				t.Error("no Content-Security-Policy")
			}
			if !strings.HasPrefix(page, "<!DOCTYPE html>\n") || !strings.HasSuffix(page, "</html>\n") || strings.Count(page, "<script>") != 1 {
				t.Error("not one page with one script")
			}
		})
	}
	// The checker finds what it looks for.
	for _, bad := range []string{`<img src="x.png">`, `<a href="https://example.com">`, `<a href="page.html">`,
		`body{background:url(x.png)}`, `fetch("/data")`, `<link rel=stylesheet href="a.css">`, `see http://example.com`} {
		if !external.MatchString(bad) {
			t.Errorf("the checker misses %q", bad)
		}
	}
}

// rowsOf returns the rows of the page's table: each row's cells' texts.
func rowsOf(t *testing.T, page string) [][]string {
	t.Helper()
	_, body, ok := strings.Cut(page, `<table id="table">`)
	body, _, ok2 := strings.Cut(body, "</table>")
	if !ok || !ok2 {
		t.Fatal("no table")
	}
	_, body, _ = strings.Cut(body, "<tbody>")
	tr := regexp.MustCompile(`<tr[^>]*>(.*)</tr>`)
	td := regexp.MustCompile(`<td[^>]*>(?:<a [^>]*>)?([^<]*)`)
	var rows [][]string
	for _, m := range tr.FindAllStringSubmatch(body, -1) {
		var cells []string
		for _, c := range td.FindAllStringSubmatch(m[1], -1) {
			cells = append(cells, c[1])
		}
		rows = append(rows, cells)
	}
	return rows
}

// headsOf returns the data-key of each column of the page's table.
func headsOf(page string) []string {
	var keys []string
	for _, m := range regexp.MustCompile(`<th data-key="([a-z-]+)"`).FindAllStringSubmatch(page, -1) {
		keys = append(keys, m[1])
	}
	return keys
}

// TestHTMLTables: each profile type's columns, its rows in the listing's
// order with the listing's figures, /C as the listing applies it.
func TestHTMLTables(t *testing.T) {
	cases := htmlCases(t)
	for _, c := range []struct {
		name  string
		heads string
		rows  int
		first []string
	}{
		// demoHits, twice: 10 of the 13 functions were called; add 80 times.
		{"cpprust", "name source module hits hits-pct", 10, []string{"mycalc::add", "mycalc", "libcalc.so.1", "80", "55.6"}},
		{"timing", "name source module time time-pct child child-pct hits", 10, []string{"mycalc::add", "mycalc", "libcalc.so.1", "1.800", "72.0", "1.800", "72.0", "40"}},
		// Coverage lists every function, /C notwithstanding.
		{"coverage", "name source module covered", 13, []string{"Counter::Counter()", "counter.o", "prog", "yes"}},
		{"ftime-at", "name source time time-pct child child-pct hits", 8, []string{"_spin", "ftime.obj", "6.971", "99.7", "6.971", "99.7", "11"}},
		{"sampling", "name source module time time-pct child child-pct hits samples", -1, nil},
		// The kernel sampled: spin_a has no kernel time, its callers'
		// table first (sampling-stacks' time with children).
		{"sampling-stacks", "name source module time time-pct child child-pct hits samples kernel kernel-child", -1,
			[]string{"spin_a", "sampling.o", "sampling", "1500.000", "60.0", "1500.000", "60.0", "3", "1500", "0.000", "0.000"}},
		// Source order: lines.c 5, 6, 7..., util.c, then the library's.
		{"lines", "file line module hits hits-pct", len(lineSites), []string{"lines.c", "5", "lprog", "10", "14.3"}},
		{"linecov", "file line module covered", len(lineSites), []string{"lines.c", "5", "lprog", "yes"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			page := writeHTMLReport(t, c.name, cases[c.name], nil)
			if got := strings.Join(headsOf(page), " "); got != c.heads {
				t.Errorf("columns %q, want %q", got, c.heads)
			}
			rows := rowsOf(t, page)
			if c.rows >= 0 && len(rows) != c.rows {
				t.Errorf("%d rows, want %d", len(rows), c.rows)
			}
			if c.first != nil && (len(rows) == 0 || strings.Join(rows[0], "|") != strings.Join(c.first, "|")) {
				t.Errorf("first row %q, want %q", rows[0], c.first)
			}
		})
	}

	// /C 0 lists the 3 functions never called; the default says they are
	// left out.
	m := cases["cpprust"]
	page := writeHTMLReport(t, "cpprust", m, nil)
	if !strings.Contains(page, "3 functions with fewer than 1 hit not listed") {
		t.Error("the page does not say what /C left out")
	}
	page = writeHTMLReport(t, "cpprust", m, func(o *Options) { o.MinCount = 0 })
	if rows := rowsOf(t, page); len(rows) != 13 || strings.Contains(page, "not listed") {
		t.Errorf("/C 0: %d rows, want 13", len(rows))
	}
	// The sort switch orders the rows, and marks its column.
	page = writeHTMLReport(t, "cpprust", m, func(o *Options) { o.Sort = SortName })
	if rows := rowsOf(t, page); rows[0][0] != "Counter::Counter()" || !strings.Contains(page, `<th data-key="name" aria-sort="ascending"`) {
		t.Errorf("/SN: first row %q", rows[0])
	}
	// The kernel's columns: spin_b's 50 samples in the kernel of its own,
	// 80 with children (stackedSampling), a millisecond each.
	kernelCols := ""
	for _, row := range rowsOf(t, writeHTMLReport(t, "sampling-stacks", cases["sampling-stacks"], nil)) {
		if row[0] == "spin_b" {
			kernelCols = strings.Join(row[len(row)-2:], " ")
		}
	}
	if kernelCols != "50.000 80.000" {
		t.Errorf("sampling-stacks: spin_b's kernel time %q, want 50.000 and 80.000 ms", kernelCols)
	}
	// The numbers sort by their exact value: a percentage by its part.
	if !strings.Contains(writeHTMLReport(t, "timing", cases["timing"], nil), `<td class="n" data-v="1800000">1.800</td><td class="n" data-v="1800000">72.0</td>`) {
		t.Error("timing: no exact sort value for 1.800 ms")
	}
}

// TestHTMLStatistics: the statistics are the listing's, line for line.
func TestHTMLStatistics(t *testing.T) {
	for name, m := range htmlCases(t) {
		t.Run(name, func(t *testing.T) {
			page := writeHTMLReport(t, name, m, nil)
			o := DefaultOptions()
			o.Warn = func(*prf.Diagnostic) {}
			var listing bytes.Buffer
			if err := Generate(&listing, m, o); err != nil {
				t.Fatal(err)
			}
			n := 0
			in := false // in a statistics block
			for _, l := range strings.Split(listing.String(), "\n") {
				switch {
				case strings.HasPrefix(l, "Program Statistics") || strings.HasPrefix(l, "Module Statistics for "):
					in = true
					if !strings.Contains(page, "<h3>"+htmlEscape(l)+"</h3>") {
						t.Errorf("no block %q", l)
					}
					continue
				case !strings.HasPrefix(l, "    "):
					in = l != "" && in && strings.HasPrefix(l, "-")
					continue
				case !in:
					continue
				}
				k, v, ok := strings.Cut(strings.TrimSpace(l), ": ")
				if !ok {
					i := strings.LastIndexByte(l, ' ')
					k, v = strings.TrimSpace(l[:i]), l[i+1:]
				}
				if want := "<dt>" + htmlEscape(k) + "</dt><dd>" + htmlEscape(v) + "</dd>"; !strings.Contains(page, want) {
					t.Errorf("the listing's %q is not in the page (%s)", strings.TrimSpace(l), want)
				}
				n++
			}
			if n < 4 {
				t.Errorf("%d statistics found in the listing", n)
			}
		})
	}
}

// htmlEscape is html/template's escaping of text.
func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// TestHTMLFlameGraph: with /AT, the flame graph of the recorded stacks,
// each frame as wide as the time of the stacks through it; without, a
// sentence saying that /AT draws one; none for counting.
func TestHTMLFlameGraph(t *testing.T) {
	cases := htmlCases(t)
	m := cases["ftime-at"]
	page := writeHTMLReport(t, "ftime-at", m, nil)
	var total int64
	through := map[string]int64{} // the time of the stacks through each function
	for _, s := range m.Stats.Stacks {
		total += s.Time
		seen := map[int]bool{}
		for _, f := range append(append([]int{}, s.Callers...), s.Func) {
			if f >= 0 && !seen[f] {
				// (A function twice in one stack is two frames; ftime has none.)
				through[m.Plan.Funcs[f].Name] += s.Time
				seen[f] = true
			}
		}
	}
	frame := regexp.MustCompile(`<g><title>([^\n<]*)\n([0-9.]+) ms, ([0-9.]+)% of the stacks&#39; time</title><rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)"`)
	widths := map[string]float64{}
	for _, f := range frame.FindAllStringSubmatch(page, -1) {
		w, _ := strconv.ParseFloat(f[5], 64)
		widths[f[1]] += w + 0.5
	}
	if !strings.Contains(page, "<title>all\n"+fixed(millis(total), 3)+" ms in the recorded stacks</title>") {
		t.Errorf("no root of %s ms", fixed(millis(total), 3))
	}
	for name, ns := range through {
		want := float64(ns) / float64(total) * (flameWidth - 2*flameMargin)
		if got := widths[name]; got < want-0.1*float64(len(m.Stats.Stacks)) || got > want+0.1*float64(len(m.Stats.Stacks)) {
			t.Errorf("%s: frames %.2f wide in all, want %.2f (%d ns of %d)", name, got, want, ns, total)
		}
	}
	if len(through) != 8 || len(widths) != 8 {
		t.Errorf("frames of %d functions, want 8: %v", len(widths), widths)
	}
	for name, want := range map[string]string{
		"timing":          "prepared with /AT records (prep /FT /AT program)",
		"sampling":        "the samples took no call stacks (profile --no-stacks",
		"sampling-at":     `<svg class="flame"`,
		"sampling-stacks": `<svg class="flame"`,
	} {
		if page := writeHTMLReport(t, name, cases[name], nil); !strings.Contains(page, want) {
			t.Errorf("%s: the page lacks %q", name, want)
		}
	}
	for _, name := range []string{"cpprust", "attribution", "coverage", "lines"} {
		if page := writeHTMLReport(t, name, cases[name], nil); strings.Contains(page, `id="flame"`) {
			t.Errorf("%s: a flame graph section", name)
		}
	}
}

// TestHTMLSource: the annotated source of a line profile marks the hot
// lines (the ten with the most hits, here 10, 10, 10, 10, 4, 4, 4, 3, 3,
// 3: the 3s are util.c's), the lines never run and the others run; a file
// that cannot be found is named, and /D finds it. The table marks the hot
// lines and those never run.
func TestHTMLSource(t *testing.T) {
	m := htmlCases(t)["lines"]
	page := writeHTMLReport(t, "lines", m, nil)
	src := page[strings.Index(page, `<section id="source">`):]
	count := func(class string) int { return strings.Count(src, ` class="`+class+`"><td class="ln">`) }
	if count("hot") != 7 || count("never") != 1 || count("run") != 8 {
		t.Errorf("%d hot, %d never, %d run lines, want 7, 1, 8 (util.c not found)", count("hot"), count("never"), count("run"))
	}
	table := page[:strings.Index(page, `<section id="source">`)]
	if hot, never := strings.Count(table, `<tr class="hot">`), strings.Count(table, `<tr class="never">`); hot != 10 || never != 1 {
		t.Errorf("the table has %d hot lines and %d never run, want 10 and 1", hot, never)
	}
	for _, want := range []string{
		`<tr id="L0-0-15" class="never"><td class="ln">15</td><td class="c">0</td><td class="p">0.0</td>`,
		`<tr id="L0-0-13" class="hot"><td class="ln">13</td><td class="c">10</td><td class="p">17.2</td>`,
		`<p class="missing">Source file not found: build/util.c.`,
		`<tr id="L0-0-20" class="run"><td class="ln">20</td><td class="c">2</td><td class="p">3.4</td><td class="code">(beyond the end of the file`,
		// The table links each line to its source; util.c's go nowhere.
		`<td class="n" data-v="13"><a href="#L0-0-13">13</a></td>`,
		`<td title="build/util.c">util.c</td><td class="n" data-v="2">2</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	page = writeHTMLReport(t, "lines", m, func(o *Options) { o.SourceDirs = []string{filepath.Join("testdata", "src")} })
	if strings.Contains(page, "not found") || !strings.Contains(page, "Source file: testdata/src/util.c") {
		t.Error("/D testdata/src: util.c not found")
	}
	// Function sampling: the sampled lines, with their samples and share
	// of the samples in functions, as the listing's (line 9: 1080, 47.6).
	page = writeHTMLReport(t, "sampling", htmlCases(t)["sampling"], nil)
	if !strings.Contains(page, `<span class="run">sampled</span>`) || strings.Contains(page, `class="never"><td class="ln">`) ||
		!regexp.MustCompile(`<tr id="L0-0-9" class="hot"><td class="ln">9</td><td class="c">1080</td><td class="p">47.6</td><td class="code">\s+sink &#43;= i;</td>`).MatchString(page) {
		t.Error("function sampling: no sampled line 9 of 1080 samples, or a line marked never run")
	}
	// Line coverage: marks, no counts, no hot lines.
	page = writeHTMLReport(t, "linecov", htmlCases(t)["linecov"], nil)
	if strings.Contains(page, `class="hot"`) || !strings.Contains(page, `<tr id="L0-0-15" class="never"><td class="ln">15</td><td class="c">`+"\u2717") {
		t.Error("line coverage: hot lines, or line 15 not marked never run")
	}
}

// TestHTMLEscapes: names and source are text, never markup.
func TestHTMLEscapes(t *testing.T) {
	m := readInput(t, "cpprust")
	m.Plan.Funcs[9].Name = `<script>alert("x")</script>`
	m.Plan.Funcs[9].Source = `a&b"<i>`
	m.Runs[0].CommandLine = `prog '</title><b>'`
	page := writeHTMLReport(t, "cpprust", m, func(o *Options) { o.Mangled = true })
	for _, bad := range []string{"<script>alert", "<i>", "<b>"} {
		if strings.Contains(page, bad) {
			t.Errorf("%q is in the page as markup", bad)
		}
	}
	text := strings.ReplaceAll(page, "<wbr>", "") // (a long name's breaks: htmlBreakable)
	if !strings.Contains(text, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") || !strings.Contains(text, "a&amp;b&#34;&lt;i&gt;") {
		t.Error("the names are not in the page as text")
	}
	// A name in the callers' and callees' data cannot end its script.
	m = readInput(t, "attribution")
	m.Plan.Funcs[0].Name = `</script><b>x</b>`
	page = writeHTMLReport(t, "attribution", m, func(o *Options) { o.Mangled = true })
	data := page[strings.Index(page, `id="calls-data">`):]
	data = data[:strings.Index(data, "</script>")]
	if !strings.Contains(data, `\u003c/script\u003e\u003cb\u003ex`) || strings.Contains(page, "<b>x") {
		t.Errorf("the name is not in the calls' data as escaped text: %s", data)
	}
}

// TestHTMLLarge: 10,000 functions with stacks make a page of one row
// each, whose flame graph leaves out what it cannot draw.
func TestHTMLLarge(t *testing.T) {
	const n = 10000
	m := &datafile.Merged{Plan: datafile.Plan{Method: datafile.FuncTiming, StartIndex: -1, Calibration: -1, Attribution: true,
		Modules: []datafile.Module{{Name: "big"}}}}
	m.Runs = []datafile.Run{{Time: 1795600000, CommandLine: "big"}}
	for i := range n {
		m.Plan.Funcs = append(m.Plan.Funcs, datafile.Func{Name: fmt.Sprintf("f%d", i), Source: "big.o"})
		m.Stats.Hits = append(m.Stats.Hits, uint64(i+1))
		m.Stats.FuncTime = append(m.Stats.FuncTime, int64(i+1)*10)
		m.Stats.ChildTime = append(m.Stats.ChildTime, int64(i+1)*20)
		m.Stats.Stacks = append(m.Stats.Stacks, datafile.Stack{Func: i, Callers: []int{-1, (i + 1) % n}, Hits: uint64(i + 1), Time: int64(i+1) * 10})
		m.Stats.TotalTime += int64(i+1) * 10
	}
	page := writeHTMLReport(t, "big", m, nil)
	frames := strings.Count(page, "<g><title>")
	hidden := regexp.MustCompile(`(\d+) frames too narrow to draw are left out`).FindStringSubmatch(page)
	if rows := len(rowsOf(t, page)); rows != n || hidden == nil {
		t.Fatalf("%d rows, hidden %v", rows, hidden)
	}
	if h, _ := strconv.Atoi(hidden[1]); frames+h != 1+2*n {
		t.Errorf("%d frames drawn and %d left out, want %d in all", frames, h, 1+2*n)
	}
	t.Logf("a page of %d bytes", len(page))
	if len(page) > 4<<20 {
		t.Errorf("a page of %d bytes", len(page))
	}
}
