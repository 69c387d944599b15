package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// leftOutLine is the header line of what the default selection left out.
var leftOutLine = regexp.MustCompile(`(?m)^Left out: ([0-9,]+) functions of the Go runtime and standard library, by profiler\.ini \(prep /INC runtime, /INC 'fmt\.\*'\.\.\. profiles them\)$`)

// TestGoLinesLikeFunctions: the default selection leaves the same code
// of a Go program in a line profile as in a function profile, and both
// reports say so in their header, with the option that changes it. The
// line profile of gocounts holds its own lines alone (before, every
// line of the runtime and the standard library as well: tens of
// thousands of sites, each a stop), among them work's, run 20,000 times
// by construction; both headers name the same number of functions left
// out.
func TestGoLinesLikeFunctions(t *testing.T) {
	testutil.MustHavePtrace(t)
	if testutil.Slow() {
		t.Skip("Go's lines keep breakpoints: 22,000 stops, minutes under emulation")
	}
	prog := testutil.BuildGo(t, "gocounts")
	work := sourceLine(t, filepath.Join(testutil.Root(t), "testdata", "progs", "go", "gocounts", "main.go"), "func work(x int) int { return x*3 + 1 }")
	left := map[string]string{}
	for _, typ := range []string{"/FC", "/LC"} {
		dir, r := workflow(t, prog, []string{typ})
		if r.status != 0 {
			t.Fatalf("profile after prep %s: status %d\n%s", typ, r.status, r.stderr)
		}
		listing := must(t, dir, "plist", "/nologo", "gocounts").stdout
		m := leftOutLine.FindStringSubmatch(listing)
		if m == nil {
			t.Fatalf("prep %s: the listing's header does not say what profiler.ini left out:\n%s", typ, head(listing, 8))
		}
		left[typ] = m[1]
		if typ != "/LC" {
			continue
		}
		// (A line of the standard library inlined into a function of
		// gocounts, fmt.Printf's into main.main, is that function's code.)
		tab := must(t, dir, "plist", "/nologo", "/F", "/T", "gocounts").stdout
		if strings.Contains(tab, "/src/runtime/") {
			t.Errorf("the line profile holds lines of the runtime:\n%s", tab)
		}
		lines := moduleRecords(t, must(t, dir, "plist", "/nologo", "/T", "gocounts").stdout)["gocounts"]
		if n := lines["main.go:"+strconv.Itoa(work)]; n != 20000 || len(lines) > 100 {
			t.Errorf("%d lines; work's line %d ran %d times, want 20,000", len(lines), work, n)
		}
	}
	if n, _ := strconv.Atoi(strings.ReplaceAll(left["/FC"], ",", "")); n < 100 || left["/FC"] != left["/LC"] {
		t.Errorf("left out: %s functions by the function profile, %s by the line profile; want the same, the runtime's hundreds", left["/FC"], left["/LC"])
	}
}

// sourceLine returns the number of the line of file that is text,
// trimmed.
func sourceLine(t *testing.T, file, text string) int {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == text {
			return n
		}
	}
	t.Fatalf("%s has no line %q", file, text)
	return 0
}

// head returns the first n lines of s.
func head(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
