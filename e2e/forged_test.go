package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// forgedFile is the name that forged.c's #line gives g's source file: a
// tab, a semicolon, and after each newline a record of lcov, callgrind,
// plist /T and folded stacks (testdata/progs/c/forged.c).
const forgedFile = "forged\tname;x.c\nDA:1,999999\nend_of_record\nfn=forged\n1 999999\n7\tforged\tforged.c\t1\t999999\nforged;stack 999999"

// forgedArg is the argument the tests give forged: newlines and tabs
// followed by records of plist /T and callgrind.
const forgedArg = "one\n4\t2026 Jan 01 00:00\tforged run\ncmd: forged\nfn=forged"

// forgedCommand is the command line of that run as the reports give it:
// the argument quoted as $'...', which a shell reads back.
const forgedCommand = `forged $'one\n4\t2026 Jan 01 00:00\tforged run\ncmd: forged\nfn=forged'`

// escaped is a name as the line-based formats write it
// (docs/exports.md, "Names"): its tabs and newlines as \t and \n.
var escaped = strings.NewReplacer("\t", `\t`, "\n", `\n`).Replace

// forgedRecord matches a line that begins as one of the records the name
// and the argument hold.
var forgedRecord = regexp.MustCompile(`^(DA:1,|fn=forged|1 999999|7\tforged\tforged\.c|forged;stack|4\t2026 Jan 01|cmd: forged$)`)

// TestForgedNames profiles forged.c, whose source file's name (#line) and
// command line hold newlines, tabs and the text of records, and reads
// every format PLIST writes: each holds exactly the records it should.
// JSON and pprof keep the names exactly (their strings carry any
// character); the listing, plist /T, lcov, callgrind and folded stacks
// write the tabs and newlines as \t and \n; the command line is recorded
// with the argument as $'...'. lcov --summary, genhtml,
// callgrind_annotate and go tool pprof read their files with the
// profile's totals. Before, the name's newlines began lines of their own
// in all five: lcov had a third SF, callgrind a function "forged" with
// 999999 calls, plist /T a record 7 of 999999 hits.
func TestForgedNames(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "forged", "-O0")
	dir := t.TempDir()
	name := install(t, prog, dir)

	// Lines: every line format.
	must(t, dir, "prep", "/nologo", "/LC", name)
	if r := must(t, dir, "profile", "/nologo", name, forgedArg); !strings.Contains(r.stdout, fmt.Sprintf("forged %d\n", len(forgedArg))) {
		t.Fatalf("the program printed %q", r.stdout)
	}
	must(t, dir, "prep", "/nologo", "/M", name)
	export := func(format, file string) string {
		t.Helper()
		must(t, dir, "plist", "/nologo", "--format="+format, "-o", file, name)
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	// The truth, from JSON: the file's name whole, its lines, the total.
	var j struct {
		Runs  []struct{ Command string }
		Lines []struct {
			File string
			Line int
			Hits uint64
		}
	}
	if err := json.Unmarshal([]byte(export("json", "forged.json")), &j); err != nil {
		t.Fatal(err)
	}
	var path string // the forged file's name, as recorded (made absolute)
	var total uint64
	gLines, fLine := map[int]uint64{}, uint64(0)
	for _, l := range j.Lines {
		total += l.Hits
		switch {
		case strings.HasSuffix(l.File, "/"+forgedFile):
			path = l.File
			gLines[l.Line] = l.Hits
		case strings.HasSuffix(l.File, "/forged.c") && l.Line == 22:
			fLine = l.Hits
		}
	}
	want := map[int]uint64{100: 1, 101: 1, 102: 1}
	if len(j.Runs) != 1 || j.Runs[0].Command != forgedCommand || path == "" || !maps.Equal(gLines, want) || fLine != 1000 {
		t.Fatalf("JSON: runs %+v, the forged file %q with lines %v, f's line %d; want the command %q, lines %v, 1000",
			j.Runs, path, gLines, fLine, forgedCommand, want)
	}
	lines := len(j.Lines)

	t.Run("tab", func(t *testing.T) {
		out := must(t, dir, "plist", "/nologo", "/T", name).stdout
		fields := map[string]int{"0": 3, "1": 3, "3": 4, "4": 3, "7": 5}
		n, g, hits := map[string]int{}, map[int]uint64{}, uint64(0)
		for _, rec := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			f := strings.Split(rec, "\t")
			if fields[f[0]] != len(f) {
				t.Errorf("a record that should not be: %q", rec)
				continue
			}
			n[f[0]]++
			switch f[0] {
			case "4":
				if f[2] != forgedCommand {
					t.Errorf("record 4: command line %q, want %q", f[2], forgedCommand)
				}
			case "7":
				h, _ := strconv.ParseUint(f[4], 10, 64)
				hits += h
				if f[2] == escaped(forgedFile) {
					line, _ := strconv.Atoi(f[3])
					g[line] = h
				}
			}
		}
		if n["4"] != 1 || n["7"] != lines || hits != total || !maps.Equal(g, want) {
			t.Errorf("%d records 4, %d records 7 of %d hits, the forged file's %v; want 1, %d of %d, %v\n%s", n["4"], n["7"], hits, g, lines, total, want, out)
		}
	})

	t.Run("listing", func(t *testing.T) {
		r := must(t, dir, "plist", "/nologo", name)
		checkNoForgedLines(t, "the listing", r.stdout)
		for _, want := range []string{"    Command line at ", ": " + forgedCommand + "\n", `name;x.c\nDA:1,999999\nend_of_record\nfn=forged\n1 999999\n7`} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("the listing lacks %q:\n%s", want, r.stdout)
			}
		}
		// The warning that the file is not found is one line, and its hint
		// another.
		if lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n"); len(lines) != 2 || !strings.Contains(lines[0], "PRF4487") || !strings.HasPrefix(lines[1], "plist: hint:") {
			t.Errorf("stderr: %q, want PRF4487 and its hint, two lines", r.stderr)
		}
	})

	t.Run("lcov", func(t *testing.T) {
		out := export("lcov", "forged.info")
		checkNoForgedLines(t, "lcov", out)
		files, da, hits, g := 0, 0, uint64(0), map[int]uint64{}
		current := ""
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			key, value, _ := strings.Cut(l, ":")
			switch key {
			case "SF":
				files++
				current = value
			case "DA":
				ln, h, _ := strings.Cut(value, ",")
				n, _ := strconv.ParseUint(h, 10, 64)
				da++
				hits += n
				if current == escaped(path) {
					line, _ := strconv.Atoi(ln)
					g[line] = n
				}
			case "TN", "FN", "FNDA", "FNF", "FNH", "LF", "LH", "end_of_record":
			default:
				t.Errorf("lcov: a line that should not be: %q", l)
			}
		}
		if files != 2 || da != lines || hits != total || !maps.Equal(g, want) {
			t.Errorf("lcov: %d files, %d lines of %d hits, the forged file's %v; want 2, %d of %d, %v\n%s", files, da, hits, g, lines, total, want, out)
		}
		if out, ok := consumer(t, dir, "lcov", "--summary", "forged.info"); ok &&
			(!strings.Contains(out, fmt.Sprintf("lines......: 100.0%% (%d of %d lines)", lines, lines)) || !strings.Contains(out, "functions..: 100.0% (3 of 3 functions)")) {
			t.Errorf("lcov --summary: want %d of %d lines, 3 of 3 functions:\n%s", lines, lines, out)
		}
		// (A name with a newline cannot be in a tracefile: genhtml finds
		// no file of the escaped name, as for a source found nowhere.)
		if _, ok := consumer(t, dir, "genhtml", "-q", "--ignore-errors", "source", "-o", "html", "forged.info"); ok {
			if _, err := os.Stat(filepath.Join(dir, "html", "index.html")); err != nil {
				t.Errorf("genhtml wrote no index.html: %v", err)
			}
		}
	})

	t.Run("callgrind", func(t *testing.T) {
		out := export("callgrind", "forged.callgrind")
		checkNoForgedLines(t, "callgrind", out)
		checkCallgrind(t, out, path, total, lines, []string{"f", "g", "main"})
		if out, ok := consumer(t, dir, "callgrind_annotate", "forged.callgrind"); ok && !regexp.MustCompile(`(?m)^`+thousands(total)+` \(100.0%\)\s+PROGRAM TOTALS`).MatchString(out) {
			t.Errorf("callgrind_annotate: want %d in all:\n%s", total, out)
		}
	})

	t.Run("folded", func(t *testing.T) {
		out := export("folded", "forged.folded")
		checkNoForgedLines(t, "folded", out)
		line := regexp.MustCompile(`^forged;(.+):(\d+) (\d+)$`)
		n, hits, g := 0, uint64(0), map[int]uint64{}
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			m := line.FindStringSubmatch(l)
			if m == nil {
				t.Errorf("folded: a line that should not be: %q", l)
				continue
			}
			h, _ := strconv.ParseUint(m[3], 10, 64)
			n++
			hits += h
			if m[1] == strings.ReplaceAll(escaped(path), ";", ":") {
				ln, _ := strconv.Atoi(m[2])
				g[ln] = h
			}
		}
		if n != lines || hits != total || !maps.Equal(g, want) {
			t.Errorf("folded: %d lines of %d hits, the forged file's %v; want %d of %d, %v\n%s", n, hits, g, lines, total, want, out)
		}
	})

	t.Run("pprof", func(t *testing.T) {
		p, err := profile.Parse(bytes.NewReader([]byte(export("pprof", "forged.pprof"))))
		if err != nil {
			t.Fatal(err)
		}
		var hits int64
		files := map[string]bool{}
		for _, s := range p.Sample {
			hits += s.Value[0]
			for _, l := range s.Location[0].Line {
				files[l.Function.Filename] = true
			}
		}
		if len(p.Sample) != lines || hits != int64(total) || !files[path] || len(p.Comments) != 1 || p.Comments[0] != forgedCommand {
			t.Errorf("pprof: %d samples of %d hits, files %q, comments %q; want %d of %d, %q among the files",
				len(p.Sample), hits, slices.Sorted(maps.Keys(files)), p.Comments, lines, total, path)
		}
		if out, ok := consumer(t, dir, "go", "tool", "pprof", "-top", "-nodefraction=0", "forged.pprof"); ok && !strings.Contains(out, fmt.Sprintf("Showing nodes accounting for %d, 100%% of %d total", total, total)) {
			t.Errorf("go tool pprof -top: want %d in all:\n%s", total, out)
		}
	})

	t.Run("html", func(t *testing.T) {
		page := export("html", "forged.html")
		// html/template escapes what HTML gives a meaning; a newline or a
		// tab is text in a page.
		if !strings.Contains(page, path) || !strings.Contains(page, html.EscapeString(forgedCommand)) {
			t.Errorf("the page lacks the file's name or the command line:\n%s", page)
		}
	})
}

// TestForgedNamesTrace profiles forged.c with function timing and a trace
// (/FT /TRACE): the function formats, the trace appended to the listing
// (plist /TRACE) and the timeline (--format=chrome) hold the records they
// should, the name of g's file escaped where TestForgedNames says, and
// the command line whole in the timeline's JSON.
func TestForgedNamesTrace(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "forged", "-O0")
	dir := t.TempDir()
	name := install(t, prog, dir)
	must(t, dir, "prep", "/nologo", "/FT", name)
	must(t, dir, "profile", "/nologo", "/TRACE", name, forgedArg)
	must(t, dir, "prep", "/nologo", "/M", name)
	calls := map[string]uint64{"f": 1000, "g": 1, "main": 1}

	out := must(t, dir, "plist", "/nologo", "/T", name).stdout
	fields := map[string]int{"0": 3, "1": 3, "2": 4, "3": 4, "4": 3, "6": 7}
	hits := map[string]uint64{}
	for _, rec := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		f := strings.Split(rec, "\t")
		switch {
		case fields[f[0]] != len(f):
			t.Errorf("a record that should not be: %q", rec)
		case f[0] == "4" && f[2] != forgedCommand:
			t.Errorf("record 4: command line %q, want %q", f[2], forgedCommand)
		case f[0] == "6":
			hits[f[6]], _ = strconv.ParseUint(f[3], 10, 64)
		}
	}
	if !maps.Equal(hits, calls) {
		t.Errorf("record 6: hits %v, want %v", hits, calls)
	}

	trace := must(t, dir, "plist", "/nologo", "/TRACE", name).stdout
	checkNoForgedLines(t, "plist /TRACE", trace)
	_, trace, _ = strings.Cut(trace, "*** Execution Trace ***\n")
	step := regexp.MustCompile(`^ *(\S+)\t\(caller\+=[\d.]+\) \{$|^ *<--\t\(callee\+=[\d.]+; callee_child\+=[\d.]+\) \}$`)
	traced := map[string]uint64{}
	for _, l := range strings.Split(strings.TrimSuffix(trace, "\n"), "\n") {
		m := step.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("plist /TRACE: a line that should not be: %q", l)
		} else if m[1] != "" {
			traced[m[1]]++
		}
	}
	if !maps.Equal(traced, calls) {
		t.Errorf("plist /TRACE: calls %v, want %v", traced, calls)
	}

	must(t, dir, "plist", "/nologo", "--format=chrome", "-o", "forged.json", name)
	data, err := os.ReadFile(filepath.Join(dir, "forged.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := testutil.ReadChrome(data)
	if err != nil {
		t.Fatalf("ReadChrome: %v", err)
	}
	if cmd := c.OtherData["command"]; cmd != forgedCommand || c.Count("f") != 1000 || c.Count("g") != 1 {
		t.Errorf("the timeline: command %q, f %d, g %d; want %q, 1000, 1", cmd, c.Count("f"), c.Count("g"), forgedCommand)
	}

	var j struct {
		Functions []struct{ Name, File string }
	}
	must(t, dir, "plist", "/nologo", "--format=json", "-o", "forged.fn.json", name)
	data, _ = os.ReadFile(filepath.Join(dir, "forged.fn.json"))
	if err := json.Unmarshal(data, &j); err != nil {
		t.Fatal(err)
	}
	path := ""
	for _, f := range j.Functions {
		if f.Name == "g" {
			path = f.File
		}
	}
	if !strings.HasSuffix(path, "/"+forgedFile) {
		t.Fatalf("JSON: g's file %q", path)
	}
	must(t, dir, "plist", "/nologo", "--format=lcov", "-o", "forged.info", name)
	info, _ := os.ReadFile(filepath.Join(dir, "forged.info"))
	checkNoForgedLines(t, "lcov", string(info))
	if want := "SF:" + escaped(path) + "\nFN:100,g\nFNDA:1,g\n"; strings.Count(string(info), "SF:") != 2 || !strings.Contains(string(info), want) {
		t.Errorf("lcov: want two files, one with %q:\n%s", want, info)
	}
	must(t, dir, "plist", "/nologo", "--format=callgrind", "-o", "forged.callgrind", name)
	cg, _ := os.ReadFile(filepath.Join(dir, "forged.callgrind"))
	checkNoForgedLines(t, "callgrind", string(cg))
	checkCallgrind(t, string(cg), path, 1002, 3, []string{"f", "g", "main"})
	if out, ok := consumer(t, dir, "callgrind_annotate", "forged.callgrind"); ok && !regexp.MustCompile(`(?m)^1,002 \(100.0%\)\s+[\d,]+ \(100.0%\)\s+PROGRAM TOTALS`).MatchString(out) {
		t.Errorf("callgrind_annotate: want 1002 calls in all:\n%s", out)
	}
}

// checkNoForgedLines fails the test for a line of out that begins as one
// of the records forged.c's file name and argument hold.
func checkNoForgedLines(t *testing.T, what, out string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if forgedRecord.MatchString(l) {
			t.Errorf("%s: a forged line %q", what, l)
		}
	}
}

// checkCallgrind checks a callgrind profile of forged: its lines are the
// format's own, its functions those named, its cost lines count and add
// up to lines and total, one of its files the escaped path, and its
// command line the run's.
func checkCallgrind(t *testing.T, out, path string, total uint64, lines int, funcs []string) {
	t.Helper()
	cost := regexp.MustCompile(`^\d+ (\d+)( \d+)?$`)
	n, hits := 0, uint64(0)
	var fns []string
	files := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		key, value, _ := strings.Cut(l, "=")
		switch {
		case key == "fn":
			fns = append(fns, value)
		case key == "fl":
			files[value] = true
		case key == "ob", l == "", strings.HasPrefix(l, "#"), regexp.MustCompile(`^(version|creator|positions|events|totals): `).MatchString(l):
		case strings.HasPrefix(l, "cmd: "):
			if l != "cmd: "+forgedCommand {
				t.Errorf("callgrind: %q, want the command line %q", l, forgedCommand)
			}
		case cost.MatchString(l):
			h, _ := strconv.ParseUint(cost.FindStringSubmatch(l)[1], 10, 64)
			n++
			hits += h
		default:
			t.Errorf("callgrind: a line that should not be: %q", l)
		}
	}
	slices.Sort(fns)
	if n != lines || hits != total || !slices.Equal(fns, funcs) || len(files) != 2 || !files[escaped(path)] {
		t.Errorf("callgrind: %d cost lines of %d, functions %q, files %q; want %d of %d, %q, two files with %q\n%s",
			n, hits, fns, slices.Sorted(maps.Keys(files)), lines, total, funcs, escaped(path), out)
	}
}

// thousands writes n as callgrind_annotate does: 1,234,567.
func thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
