package main

import (
	"os"
	"strings"
	"testing"
)

// TestCombineHTML: plist --combine --format=html writes the page of the
// databases of TestCombineBranches combined, to -o's file or to
// standard output: its header names both, its Files summary has
// lib.c's 2 lines, both run, and 3 of its 4 branch ways taken (the
// sums of the tracefile's BRDA records).
func TestCombineHTML(t *testing.T) {
	t.Chdir(t.TempDir())
	writeBranchProfile(t, "test_a", [][2][]uint64{{{1, 0}, {1, 1, 0, 0}}, {{1, 0}, {1, 0, 0, 0}}})
	writeBranchProfile(t, "test_b", [][2][]uint64{{{1, 1}, {0, 1, 1, 0}}})
	stdout, stderr, status := runPlist(t, words("/nologo --combine --format=html -o suite.html test_a test_b"), "")
	if status != 0 || stderr != "" || stdout != "" {
		t.Fatalf("plist --combine --format=html -o suite.html: status %d, stderr %q, stdout %q", status, stderr, stdout)
	}
	b, err := os.ReadFile("suite.html")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		"<h1>Combined coverage of 2 profiles</h1>",
		`<li><span class="path">test_a.pbt</span>: line coverage, 2 runs</li><li><span class="path">test_b.pbt</span>: line coverage, 1 run</li>`,
		`<td title="/src/lib.c">lib.c</td><td class="n">2</td><td class="n">2</td><td class="n">100.0</td><td class="n">4</td><td class="n">3</td><td class="n">75.0</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	stdout, _, status = runPlist(t, words("/nologo --combine --format=html test_a test_b"), "")
	if status != 0 || stdout != page {
		t.Errorf("plist --combine --format=html to standard output: status %d, not the page written with -o", status)
	}
}
