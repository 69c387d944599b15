package sprof_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCitations checks that what the code cites resolves inside the
// repository: every "§N.N" of the original's reference names a section of
// docs/design/original.md (citations of outside specifications, the Intel
// SDM, the ABIs, the Arm DWARF, are left alone), every `"Heading"` cited of
// a design document is one of its headings, and every docs/ path named
// exists.
func TestCitations(t *testing.T) {
	sections := headings(t, "docs/design/original.md", regexp.MustCompile(`^#+ (\d+(?:\.\d+)*)\.? `))
	// Titled citations name a design document ("linux.md", "docs/design/
	// linux.md") or one of the project's own ("docs/linux.md").
	titles := map[string]map[string]bool{}
	heading := regexp.MustCompile(`^#+ (.+)$`)
	for _, doc := range []string{"linux", "libraries", "inprocess", "style"} {
		titles["docs/design/"+doc+".md"] = headings(t, "docs/design/"+doc+".md", heading)
	}
	own, _ := filepath.Glob("docs/*.md")
	for _, doc := range own {
		titles[doc] = headings(t, doc, heading)
	}
	section := regexp.MustCompile(`§([0-9]+(?:\.[0-9]+)*)`)
	external := regexp.MustCompile(`SDM|ABI|APM|Arm 64-bit Architecture`)
	titled := regexp.MustCompile(`(docs/(?:design/)?)?([a-z]+)\.md,? "([^"]+)"`)
	path := regexp.MustCompile(`docs/[a-z/]+\.md`)
	checked := 0
	err := filepath.WalkDir(".", func(file string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && file != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(file, ".go") {
			return nil
		}
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		prev := ""
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			for _, m := range section.FindAllStringSubmatchIndex(line, -1) {
				if external.MatchString(prev + line[:m[0]]) {
					continue
				}
				checked++
				if s := line[m[2]:m[3]]; !sections[s] {
					t.Errorf("%s:%d: §%s is no section of docs/design/original.md", file, n, s)
				}
			}
			for _, m := range titled.FindAllStringSubmatch(line, -1) {
				doc := m[1] + m[2] + ".md"
				if m[1] == "" {
					doc = "docs/design/" + doc
				}
				checked++
				if !titles[doc][m[3]] {
					t.Errorf("%s:%d: %q is no heading of %s", file, n, m[3], doc)
				}
			}
			for _, p := range path.FindAllString(line, -1) {
				checked++
				if _, err := os.Stat(p); err != nil {
					t.Errorf("%s:%d: %s does not exist", file, n, p)
				}
			}
			prev = line
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Errorf("only %d citations found: the patterns no longer match the code", checked)
	}
}

// headings returns the first group of re over the heading lines of doc.
func headings(t *testing.T, doc string, re *regexp.Regexp) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			out[m[1]] = true
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no headings", doc)
	}
	return out
}

// TestReadmeGoVersion: the README names the Go that go.mod's go line asks
// for.
func TestReadmeGoVersion(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(readme)), " ") // lines joined
	if want := "Go " + string(m[1]) + " or later"; !strings.Contains(text, want) {
		t.Errorf("README.md does not say %q (go.mod's go line)", want)
	}
}
