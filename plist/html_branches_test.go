package plist

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHTMLBranches: the page of branch coverage (branchCoverage). In
// the annotated source, lines.c's line 14 has its two branches' marks,
// "+ -" and "- +", with titles that say each way and its runs, and is
// "partial"; line 15, never run, has "# #" and stays "never"; line 12,
// both ways taken, is not partial. The Files summary has each file's
// ways, those taken and their share: lines.c 8, 4, 50.0; util.c 2, 0,
// 0.0; crlf.c 2, 2, 100.0; a file without branches "-". A page without
// branches has none of it.
func TestHTMLBranches(t *testing.T) {
	m := branchCoverage()
	page := writeHTMLReport(t, "branchcov", m, nil)
	for _, want := range []string{
		`<tr id="L0-0-14" class="run partial"><td class="ln">14</td><td class="c">` + "\u2713" + `</td><td class="p"></td><td class="br">` +
			`[ <span class="taken" title="Branch 0, to its target: taken in 2 runs">&#43;</span> <span class="not" title="Branch 0, on to the next instruction: never taken">-</span> ]` +
			`[ <span class="not" title="Branch 1, to its target: never taken">-</span> <span class="taken" title="Branch 1, on to the next instruction: taken in 2 runs">&#43;</span> ]</td><td class="code">	if (sum &lt; 0)</td></tr>`,
		`<tr id="L0-0-15" class="never"><td class="ln">15</td><td class="c">` + "\u2717" + `</td><td class="p"></td><td class="br">` +
			`[ <span class="unrun" title="Branch 0, to its target: the line never ran">#</span> <span class="unrun" title="Branch 0, on to the next instruction: the line never ran">#</span> ]</td>`,
		`<tr id="L0-0-12" class="run"><td class="ln">12</td>`,
		`<tr id="L1-0-3" class="run"><td class="ln">3</td><td class="c">` + "\u2713" + `</td><td class="p"></td><td class="br">` +
			`[ <span class="taken" title="Branch 0, to its target: taken in 2 runs">&#43;</span> <span class="taken" title="Branch 0, on to the next instruction: taken in 1 run">&#43;</span> ]</td>`,
		`<tr id="L0-0-13" class="run"><td class="ln">13</td><td class="c">` + "\u2713" + `</td><td class="p"></td><td class="br"></td><td class="code">`,
		`<th class="br">Branches</th><th>Source</th>`,
		`<span class="partial">branches not all taken</span>`,
		`<td title="src/lines.c"><a href="#F0-0">lines.c</a></td><td class="n">13</td><td class="n">12</td><td class="n">92.3</td><td class="n">8</td><td class="n">4</td><td class="n">50.0</td></tr>`,
		`<td title="build/util.c">util.c</td><td class="n">3</td><td class="n">3</td><td class="n">100.0</td><td class="n">2</td><td class="n">0</td><td class="n">0.0</td></tr>`,
		`<td title="testdata/src/crlf.c"><a href="#F1-0">crlf.c</a></td><td class="n">3</td><td class="n">3</td><td class="n">100.0</td><td class="n">2</td><td class="n">2</td><td class="n">100.0</td></tr>`,
		`<th class="n" title="branch ways: two a branch">Branches</th><th class="n">Taken</th><th class="n">%</th></tr></thead>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if n := strings.Count(page, `class="run partial"`); n != 1 {
		t.Errorf("%d partial lines, want 1 (util.c is not found)", n)
	}
	// Found with /D, util.c's line 3 ran and its branch went neither way.
	page = writeHTMLReport(t, "branchcov", m, func(o *Options) { o.SourceDirs = []string{filepath.Join("testdata", "src")} })
	if !regexp.MustCompile(`<tr id="L0-1-3" class="run partial">.*<td class="br">\[ <span class="not" [^>]*>-</span> <span class="not" [^>]*>-</span> \]</td>`).MatchString(page) {
		t.Error("/D testdata/src: util.c's line 3 is not partial with \"- -\"")
	}
	// A file without branches: no share.
	m.Plan.Branches, m.Stats.Branches = m.Plan.Branches[:5], m.Stats.Branches[:10]
	page = writeHTMLReport(t, "branchcov", m, nil)
	if want := `<a href="#F1-0">crlf.c</a></td><td class="n">3</td><td class="n">3</td><td class="n">100.0</td><td class="n">0</td><td class="n">0</td><td class="n">-</td></tr>`; !strings.Contains(page, want) {
		t.Errorf("the page lacks %s", want)
	}
	page = writeHTMLReport(t, "linecov", readInput(t, "linecov"), nil)
	for _, bad := range []string{`class="br"`, "Branches", "partial"} {
		if strings.Contains(page, bad) {
			t.Errorf("a page without branches has %q", bad)
		}
	}
}
