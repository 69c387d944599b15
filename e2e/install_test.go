package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// installed are the files make install puts under PREFIX.
var installed = []string{
	"bin/prep", "bin/profile", "bin/plist",
	"bin/fcount", "bin/fcover", "bin/ftime", "bin/lcount", "bin/lcover",
	"share/sprof/profiler.ini", "share/sprof/profile.mk",
	"share/man/man1/prep.1", "share/man/man1/profile.1", "share/man/man1/plist.1",
	"share/man/man1/fcount.1", "share/man/man1/fcover.1", "share/man/man1/ftime.1",
	"share/man/man1/lcount.1", "share/man/man1/lcover.1",
	"share/doc/sprof/LICENSE", "share/doc/sprof/README.md",
	"share/doc/sprof/docs/course/README.md", "share/doc/sprof/docs/images",
	"share/doc/sprof/docs/design/original.md",
}

// wrappers are the batch wrappers.
var wrappers = []string{"fcount", "fcover", "ftime", "lcount", "lcover"}

// mdLink is a Markdown link's target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestInstall installs into a temporary DESTDIR as a packager would, and
// uses what was installed as a user would: the tools and a wrapper from
// PATH, PREP reading the installed profiler.ini, a Makefile that includes
// the installed profile.mk with one line, the man pages, each command's
// --version, the README's links into the installed docs/; then uninstalls.
// The program's exit status reaches the wrapper's and make's callers,
// after its report.
func TestInstall(t *testing.T) {
	testutil.MustHavePtrace(t)
	if os.Getenv("SPROF_BIN") != "" {
		t.Skip("the tools are prebuilt here: no make install")
	}
	testutil.MustHaveTool(t, "make")
	root, dest := testutil.Root(t), t.TempDir()
	const prefix = "/opt/sprof"
	run := func(dir string, env []string, name string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), exitStatus(t, name, err)
	}
	if out, status := run(root, nil, "make", "-s", "install", "DESTDIR="+dest, "PREFIX="+prefix); status != 0 {
		t.Fatalf("make install: status %d\n%s", status, out)
	}
	top := filepath.Join(dest, prefix)
	for _, f := range installed {
		if _, err := os.Stat(filepath.Join(top, f)); err != nil {
			t.Errorf("not installed: %v", err)
		}
	}
	for _, page := range append([]string{"prep", "profile", "plist"}, wrappers...) {
		b, _ := os.ReadFile(filepath.Join(top, "share/man/man1", page+".1"))
		if !strings.HasPrefix(string(b), ".TH "+strings.ToUpper(page)+" 1") || !strings.Contains(string(b), ".SH SYNOPSIS") {
			t.Errorf("%s.1: %.200q", page, b)
		}
		// NAME reads as a sentence, as man-pages(7) writes it: the page's
		// name, then what it does, from a lower-case verb, without a
		// period, not naming the page again.
		_, name, _ := strings.Cut(string(b), ".SH NAME\n")
		name, _, _ = strings.Cut(name, "\n")
		desc, ok := strings.CutPrefix(name, page+` \- `)
		if !ok || desc == "" || !unicode.IsLower(rune(desc[0])) || strings.HasSuffix(desc, ".") || strings.Contains(desc, page+" ") {
			t.Errorf("%s.1: NAME line %q", page, name)
		}
		if testutil.HaveTool("groff") {
			if out, status := run(root, nil, "groff", "-man", "-ww", "-z", filepath.Join(top, "share/man/man1", page+".1")); status != 0 || out != "" {
				t.Errorf("groff %s.1: status %d\n%s", page, status, out)
			}
		}
	}

	// The installed PREP reads the installed profiler.ini: a line added
	// there leaves fib out of the report.
	ini := filepath.Join(top, "share/sprof/profiler.ini")
	b, err := os.ReadFile(ini)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ini, append(b, "exclude:fib\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	counts := install(t, testutil.BuildC(t, "counts"), work)
	seven := install(t, testutil.BuildOriginal(t, "exitcode"), work)
	path := []string{"PATH=" + filepath.Join(top, "bin") + ":" + os.Getenv("PATH"), "PREP=", "PROFILE=", "PLIST=", "INIT="}
	out, status := run(work, path, filepath.Join(top, "bin", "fcount"), counts)
	if status != 0 || !strings.Contains(out, "counts.o)") || strings.Contains(out, "fib (") {
		t.Errorf("fcount counts: status %d, want a report without fib\n%s", status, out)
	}
	out, status = run(work, path, filepath.Join(top, "bin", "fcount"), seven)
	if status != 7 || !strings.Contains(out, "seven (exitcode.o)") {
		t.Errorf("fcount exitcode: status %d, want the program's 7 after its report\n%s", status, out)
	}
	// Every command's --version names it, the wrappers' too.
	for _, name := range append([]string{"prep", "profile", "plist"}, wrappers...) {
		out, status := run(work, path, filepath.Join(top, "bin", name), "--version")
		if status != 0 || !strings.HasPrefix(out, name+" (Source Profiler for Linux) ") || strings.Count(out, "Source Profiler for Linux") != 1 {
			t.Errorf("%s --version: status %d, %q", name, status, out)
		}
	}

	// The README's relative links lead to installed files: docs/ is
	// installed beside it.
	doc := filepath.Join(top, "share/doc/sprof")
	readme, err := os.ReadFile(filepath.Join(doc, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	links := 0
	for _, m := range mdLink.FindAllStringSubmatch(string(readme), -1) {
		target, _, _ := strings.Cut(m[1], "#")
		if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		links++
		if _, err := os.Stat(filepath.Join(doc, target)); err != nil {
			t.Errorf("the installed README.md links to %s: %v", m[1], err)
		}
	}
	if links < 10 {
		t.Errorf("the installed README.md has %d relative links: the pattern misses them", links)
	}

	// A Makefile of the user's, one line for the profiler.
	mk := "PROFILE_PROG = ./" + seven + "\nPROFILE_DEPS =\ninclude " + filepath.Join(top, "share/sprof/profile.mk") + "\n"
	if err := os.WriteFile(filepath.Join(work, "Makefile"), []byte(mk), 0o644); err != nil {
		t.Fatal(err)
	}
	out, status = run(work, path, "make", "-s", "lcount")
	report, _ := os.ReadFile(filepath.Join(work, seven+".lcount.txt"))
	if status == 0 || !strings.Contains(out, "Error 7") || !strings.Contains(string(report), "Line counting") {
		t.Errorf("make lcount: status %d, want make to fail with the program's 7 after the report\n%s\nreport:\n%s", status, out, report)
	}

	if out, status := run(root, nil, "make", "-s", "uninstall", "DESTDIR="+dest, "PREFIX="+prefix); status != 0 {
		t.Fatalf("make uninstall: status %d\n%s", status, out)
	}
	for _, f := range append(installed, "share/doc/sprof/docs", "share/doc/sprof") {
		if _, err := os.Stat(filepath.Join(top, f)); err == nil {
			t.Errorf("%s left after make uninstall", f)
		}
	}
}
