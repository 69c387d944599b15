package e2e

import (
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// The files an attacker can steer (issue 31, items 12-14): what the tools
// write, through a link or a node planted at its name, and with which
// mode. (No test here writes to the system's /dev/null or /dev/stdout: as
// root, a tool that replaced them would replace the machine's. Nodes are
// made in the test's directory, and the tool's standard output is named
// /proc/self/fd/1, which nothing can replace.)

// writtenFiles are the files of a run of counts with the trace and /E,
// then a report written with -o.
var writtenFiles = []string{"counts.pbi", "counts.pbt", "counts.pbo", "counts.pbx", "errs.txt", "report.txt"}

// writeAll makes every file of writtenFiles in dir, running the tools
// through run.
func writeAll(t *testing.T, dir, prog string, run func(name string, args ...string) result) {
	t.Helper()
	for _, c := range [][]string{
		{"prep", "/nologo", "/FT", prog},
		{"profile", "/nologo", "/TRACE", "/E", "errs.txt", prog},
		{"prep", "/nologo", "/M", prog},
		{"plist", "/nologo", "-o", "report.txt", prog},
	} {
		if r := run(c[0], c[1:]...); r.status != 0 {
			t.Fatalf("%s: status %d\nstderr: %s", strings.Join(c, " "), r.status, r.stderr)
		}
	}
}

// TestNoWriteThroughLinks plants a symbolic link at the name of every
// file the tools write, each to a file of the user's: every one is
// replaced by the tool's own file, and the files they led to are left as
// they were. Before, PROFILE opened the trace (prog.pbx) and its /E file
// through the link, and overwrote the file it led to. /E /A through a
// link is refused (PRF1011), the file it leads to unchanged.
func TestNoWriteThroughLinks(t *testing.T) {
	testutil.MustHavePtrace(t)
	dir := t.TempDir()
	prog := install(t, testutil.BuildC(t, "counts"), dir)
	victims := t.TempDir()
	for _, f := range writtenFiles {
		v := filepath.Join(victims, f)
		if err := os.WriteFile(v, []byte("precious "+f), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(v, filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	writeAll(t, dir, prog, func(name string, args ...string) result { return tool(t, dir, name, args...) })
	checkVictims := func() {
		t.Helper()
		for _, f := range writtenFiles {
			if b, err := os.ReadFile(filepath.Join(victims, f)); err != nil || string(b) != "precious "+f {
				t.Errorf("the file %s's link led to holds %q (%v)", f, b, err)
			}
		}
	}
	checkVictims()
	for _, f := range writtenFiles {
		checkType(t, filepath.Join(dir, f), 0)
	}
	if tb := parseTab(t, must(t, dir, "plist", "/nologo", "/T", prog).stdout); tb.hits["f"] != 1000 {
		t.Errorf("f: %d hits, want 1000", tb.hits["f"])
	}
	if out := must(t, dir, "plist", "/nologo", "/TRACE", prog).stdout; strings.Count(out, "\n  f\t(caller+=") != 1000 {
		t.Errorf("the trace has %d calls of f from main, want 1000", strings.Count(out, "\n  f\t(caller+="))
	}

	errs := filepath.Join(dir, "errs.txt")
	os.Remove(errs)
	if err := os.Symlink(filepath.Join(victims, "errs.txt"), errs); err != nil {
		t.Fatal(err)
	}
	r := tool(t, dir, "profile", "/nologo", "/E", "errs.txt", "/A", prog)
	if r.status != 1 || !strings.Contains(r.stderr, "fatal error PRF1011: cannot open file errs.txt: is a symbolic link") {
		t.Errorf("/E /A through a link: status %d, stderr %q; want 1 and PRF1011", r.status, r.stderr)
	}
	checkVictims()
}

// underUmask runs a tool in dir with the umask mask (octal).
func underUmask(t *testing.T, dir, mask, name string, args ...string) result {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", `umask "$0" && exec "$@"`, mask, filepath.Join(bin, name)}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PREP=", "PROFILE=", "PLIST=", "INIT=")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return result{out.String(), errb.String(), exitStatus(t, name, err)}
}

// checkModes checks the permission bits of the named files of dir.
func checkModes(t *testing.T, dir string, want fs.FileMode, names ...string) {
	t.Helper()
	for _, f := range names {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
		} else if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", f, fi.Mode().Perm(), want)
		}
	}
}

// TestUmask runs the tools under umask 077: every file they write is
// 0600, as cp and compilers make files, so that a command line (which may
// hold secrets) or source lines in a report are the user's alone. Then,
// under umask 022, a new report is 0644, and the files replaced (a
// report, the .pbo, the .pbt) stay 0600. Before, every file was 0644
// whatever the umask.
func TestUmask(t *testing.T) {
	testutil.MustHavePtrace(t)
	dir := t.TempDir()
	prog := install(t, testutil.BuildC(t, "counts"), dir)
	writeAll(t, dir, prog, func(name string, args ...string) result { return underUmask(t, dir, "077", name, args...) })
	checkModes(t, dir, 0o600, writtenFiles...)

	for _, c := range [][]string{
		{"profile", "/nologo", prog},
		{"prep", "/nologo", "/M", prog},
		{"plist", "/nologo", "-o", "report.txt", prog},
		{"plist", "/nologo", "-o", "new.txt", prog},
	} {
		if r := underUmask(t, dir, "022", c[0], c[1:]...); r.status != 0 {
			t.Fatalf("%s: status %d\nstderr: %s", strings.Join(c, " "), r.status, r.stderr)
		}
	}
	checkModes(t, dir, 0o600, "counts.pbo", "counts.pbt", "report.txt")
	checkModes(t, dir, 0o644, "new.txt")
	if tb := parseTab(t, must(t, dir, "plist", "/nologo", "/T", prog).stdout); tb.hits["f"] != 2000 || len(tb.runs) != 2 {
		t.Errorf("f: %d hits in %d runs, want 2000 in 2", tb.hits["f"], len(tb.runs))
	}
}

// TestOutputNotRegular writes plist's report (-o) and PROFILE's
// diagnostics (/E) to what is not a regular file: a FIFO, which another
// process reads as it is written; a device node (as root: one of
// /dev/null's numbers, in the test's directory); PLIST's own standard
// output through /proc (as /dev/stdout names it), a pipe and a file open
// for appending (plist -o /dev/stdout >> log); a pipe given as descriptor
// 3 (a process substitution, -o >(gzip > x)). Each is written in place
// and stays what it was. Before, each was replaced by a regular file (the
// FIFO and the node), or could not be written (/proc, /dev/fd). The data
// files are never written there: profile /O onto a FIFO or the node fails
// before the program runs (PRF1013), the node left as it was.
func TestOutputNotRegular(t *testing.T) {
	testutil.MustHavePtrace(t)
	dir, _ := workflow(t, testutil.BuildC(t, "counts"), []string{"/FC"})
	report := must(t, dir, "plist", "/nologo", "/T", "counts").stdout

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	read := fifoReader(t, fifo)
	must(t, dir, "plist", "/nologo", "/T", "-o", "fifo", "counts")
	if s := read(); s != report {
		t.Errorf("the FIFO's reader got:\n%s\nwant:\n%s", s, report)
	}
	checkType(t, fifo, fs.ModeNamedPipe)

	null := filepath.Join(dir, "null")
	node := syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3) == nil // only root may
	if node {
		must(t, dir, "plist", "/nologo", "/T", "-o", "null", "counts")
		checkType(t, null, fs.ModeDevice|fs.ModeCharDevice)
	} else {
		t.Log("not root: no device node made")
	}

	if r := must(t, dir, "plist", "/nologo", "/T", "-o", "/proc/self/fd/1", "counts"); r.stdout != report {
		t.Errorf("-o /proc/self/fd/1 wrote:\n%s\nwant:\n%s", r.stdout, report)
	}
	if err := os.Symlink("/proc/self/fd/1", filepath.Join(dir, "stdout")); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "log")
	if err := os.WriteFile(log, []byte("earlier\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	appendTo, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "plist"), "/nologo", "/T", "-o", "stdout", "counts")
	var stderr strings.Builder
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, appendTo, &stderr
	err = cmd.Run()
	out := stderr.String()
	appendTo.Close()
	if b, _ := os.ReadFile(log); err != nil || string(b) != "earlier\n"+report {
		t.Errorf("-o stdout >> log: %v %s; the log holds:\n%s", err, out, b)
	}
	checkType(t, filepath.Join(dir, "stdout"), fs.ModeSymlink)

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(filepath.Join(bin, "plist"), "/nologo", "/T", "-o", "/dev/fd/3", "counts")
	cmd.Dir, cmd.ExtraFiles = dir, []*os.File{w}
	go func() {
		out, err := cmd.CombinedOutput()
		w.Close()
		if err != nil {
			t.Errorf("-o /dev/fd/3: %v %s", err, out)
		}
	}()
	if b, _ := readAll(r); b != report {
		t.Errorf("-o /dev/fd/3 wrote:\n%s\nwant:\n%s", b, report)
	}

	// PROFILE's diagnostics (PRF4677: /S of a counting profile) to its
	// standard error, through /proc.
	if e := tool(t, dir, "profile", "/nologo", "/E", "/proc/self/fd/2", "/S", "100", "counts"); e.status != 0 || !strings.Contains(e.stderr, "PRF4677") {
		t.Errorf("/E /proc/self/fd/2: status %d, stderr %q, want PRF4677", e.status, e.stderr)
	}

	// The data files: never where something else is.
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.pbo"), 0o600); err != nil {
		t.Fatal(err)
	}
	nodes := map[string]string{"pipe.pbo": "a FIFO"}
	if node && os.Rename(null, filepath.Join(dir, "null.pbo")) == nil {
		nodes["null.pbo"] = "a character device"
	}
	for name, what := range nodes {
		e := tool(t, dir, "profile", "/nologo", "/O", name, "counts")
		if e.status != 1 || !strings.Contains(e.stderr, "fatal error PRF1013: cannot write expected number of bytes to file "+name+": is "+what+", not a regular file") ||
			strings.Contains(e.stdout, "counts result") {
			t.Errorf("profile /O %s: status %d, stdout %q, stderr %q; want 1, PRF1013 before the program runs", name, e.status, e.stdout, e.stderr)
		}
	}
	checkType(t, filepath.Join(dir, "pipe.pbo"), fs.ModeNamedPipe)
	if nodes["null.pbo"] != "" {
		checkType(t, filepath.Join(dir, "null.pbo"), fs.ModeDevice|fs.ModeCharDevice)
	}
}

// checkType checks the type of the file at path (not following a link):
// 0 for a regular file.
func checkType(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Errorf("%s: %v", filepath.Base(path), err)
	} else if fi.Mode().Type() != want {
		t.Errorf("%s: type %v, want %v", filepath.Base(path), fi.Mode().Type(), want)
	}
}

// fifoReader opens the FIFO at path for reading, without waiting for a
// writer, and returns the function that reads what was written, once
// the writer is done: nothing, and no wait, when no writer came (the
// FIFO was replaced).
func fifoReader(t *testing.T, path string) func() string {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	return func() string {
		s, _ := readAll(f)
		return s
	}
}

// readAll reads r to its end and closes it.
func readAll(r *os.File) (string, error) {
	defer r.Close()
	b, err := io.ReadAll(r)
	return string(b), err
}
