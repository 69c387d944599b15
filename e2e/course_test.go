package e2e

import (
	"bufio"
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// courseSVG is -course-svg: TestCourse draws chapter 4's timeline into
// docs/images/workers.svg.
var courseSVG = flag.Bool("course-svg", false, "draw the course's workers timeline into docs/images/workers.svg")

// chapter is one chapter of docs/course: its commands, in order, and the
// lines of output it quotes.
type chapter struct {
	commands []string
	quoted   []string
}

// readChapter reads the console blocks of a chapter: lines that begin
// with "$ " are commands, the others output quoted from them.
func readChapter(t *testing.T, path string) chapter {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c chapter
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "```console":
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case !in:
		case strings.HasPrefix(line, "$ "):
			c.commands = append(c.commands, strings.TrimPrefix(line, "$ "))
		default:
			c.quoted = append(c.quoted, line)
		}
	}
	return c
}

// TestCourse runs the commands of every chapter of docs/course in the
// layout the course sets up (the examples built, sources in ../c), the
// chapters one after the other in one directory, as a student does (a
// chapter's runs left the next chapter's prep /M failing once), checks
// that each succeeds, and that every line of output a chapter quotes that
// carries no number (addresses, times and process IDs change from run to
// run) is a line of the output, as it is. The outputs quoted are of
// x86-64: on arm64 only the commands are checked.
func TestCourse(t *testing.T) {
	testutil.MustHavePtrace(t)
	if testutil.Slow() {
		// (Under emulation, where lines and counts may keep breakpoints,
		// a millisecond a stop, chapter 5's 58,909 line hits and chapter
		// 7's two million calls would take many minutes; TestExplain
		// shows the narration there.)
		t.Skip("the course's commands are sized for a real machine")
	}
	root := testutil.Root(t)
	chapters, err := filepath.Glob(filepath.Join(root, "docs", "course", "[0-9]-*.md"))
	if err != nil || len(chapters) < 7 {
		t.Fatalf("chapters %v: %v", chapters, err)
	}
	primes := testutil.BuildExample(t, "primes")
	workers := testutil.BuildExample(t, "workers", "-pthread")
	shapes, libarea := testutil.BuildLinked(t, "shapes", testutil.Linked{
		Prog: []string{"../examples/c/shapes.c"}, Lib: []string{"../examples/c/libarea.c"},
		Name: "libarea.so", Link: true,
	})
	// examples/build and examples/c, as the course's setup has them: one
	// directory for every chapter, in order, as a student runs them (the
	// runs a chapter leaves are there for the next).
	top := t.TempDir()
	work := filepath.Join(top, "build")
	src := filepath.Join(top, "c")
	for _, d := range []string{work, src} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{primes, workers, shapes, libarea} {
		install(t, p, work)
	}
	for _, f := range []string{"primes.c", "workers.c", "shapes.c", "libarea.c"} {
		b, err := os.ReadFile(filepath.Join(root, "examples", "c", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range chapters {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".md"), func(t *testing.T) {
			c := readChapter(t, path)
			if len(c.commands) == 0 {
				t.Fatal("no command")
			}
			var out strings.Builder
			for _, cmd := range c.commands {
				out.WriteString(runCourse(t, work, cmd))
			}
			if runtime.GOARCH != "amd64" {
				return
			}
			got := map[string]bool{}
			for _, l := range strings.Split(out.String(), "\n") {
				got[strings.TrimSpace(l)] = true
			}
			for _, q := range c.quoted {
				q = strings.TrimSpace(q)
				if q == "" || strings.Contains(q, "...") || strings.ContainsAny(q, "0123456789") {
					continue
				}
				if !got[q] {
					t.Errorf("%s quotes a line the commands did not print:\n%s", filepath.Base(path), q)
				}
			}
			if *courseSVG && strings.HasPrefix(filepath.Base(path), "4-") {
				drawWorkers(t, work)
			}
		})
	}
}

// runCourse runs one command of the course in dir, with the tools first
// on PATH, and returns its output; a command that fails fails the test.
func runCourse(t *testing.T, dir, command string) string {
	t.Helper()
	cmd := exec.Command("bash", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PREP=", "PROFILE=", "PLIST=", "INIT=")
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v\n%s", command, err, b.String())
		}
	case <-time.After(toolLimit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s: still running after %v\n%s", command, toolLimit, b.String())
	}
	return b.String()
}

// drawWorkers draws 20 µs of chapter 4's trace.json, from the start of
// the last of the workers, as docs/images/workers.svg.
func drawWorkers(t *testing.T, dir string) {
	data, err := os.ReadFile(filepath.Join(dir, "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := testutil.ReadChrome(data)
	if err != nil {
		t.Fatal(err)
	}
	from, n := int64(0), 0
	for _, th := range c.Threads {
		for _, s := range th.Slices {
			if s.Name == "worker" {
				from = max(from, s.Start)
				n++
			}
		}
	}
	if n != 3 {
		t.Fatalf("%d workers in the trace, want 3", n)
	}
	f, err := os.Create(filepath.Join(testutil.Root(t), "docs", "images", "workers.svg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := c.WriteSVG(f, testutil.SVGOptions{Title: "workers 200: plist --format=chrome, 20 µs of the three workers",
		Width: 900, From: from, To: from + 20000}); err != nil {
		t.Fatal(err)
	}
}
