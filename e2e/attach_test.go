package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// attachFixture is a server that does known work on command
// (testdata/progs/c/attach.c): main calls work() N times while its worker
// thread calls square() of libsq.so N times.
var attachFixture = testutil.Linked{
	Prog: []string{"progs/c/attach.c"},
	Lib:  []string{"progs/c/libsq.c"},
	Name: "libsq.so",
	Link: true,
}

// attachDir builds the attach fixture and installs it, with its library,
// in a fresh directory; it returns the directory and the program's name.
func attachDir(t *testing.T) (dir, name string) {
	t.Helper()
	prog, lib := testutil.BuildLinked(t, "attach", attachFixture)
	dir = t.TempDir()
	name = install(t, prog, dir)
	install(t, lib, dir)
	return dir, name
}

// TestAttach profiles a running server with profile --pid, every function
// and line type, in-process and with breakpoints, and checks both sides of
// the window:
//
//   - the counts are exactly the work done inside it (N calls of work in
//     main, N of square in the worker thread and its library, the three
//     SIGUSR1s handled), none of the work done before;
//   - afterwards the server runs as if nothing had happened: no tracer,
//     no thread stopped, every byte of its code (program, library, libc,
//     the dynamic linker) as it was, every signal handled, and its next
//     command answered.
func TestAttach(t *testing.T) {
	testutil.MustHavePtrace(t)
	n := testutil.Scale(1000)
	for _, c := range []struct {
		name string
		prep []string
		opts []string
	}{
		{"FC", []string{"/FC"}, nil},
		{"FC-breakpoints", []string{"/FC"}, []string{"--breakpoints"}},
		{"FT", []string{"/FT"}, nil},
		{"LC", []string{"/LC"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, name := attachDir(t)
			must(t, dir, "prep", append(append([]string{"/nologo"}, c.prep...), name, "libsq.so")...)
			s := startServer(t, dir, name)
			s.Ask(t, "w 100", "did 100") // before the window: not counted
			before := testutil.CodeBytes(t, s.PID())

			p := startProfile(t, dir, append(append([]string{"/nologo"}, c.opts...), "--pid="+strconv.Itoa(s.PID())))
			s.Ask(t, fmt.Sprintf("w %d", n), fmt.Sprintf("did %d", n))
			for k := 1; k <= 3; k++ {
				syscall.Kill(s.PID(), syscall.SIGUSR1)
				s.Await(t, "s", fmt.Sprintf("signals %d", k))
			}
			p.end(t, syscall.SIGINT)

			checkLetGo(t, s.PID(), before)
			s.Ask(t, "w 100", "did 100")
			s.Ask(t, "s", "signals 3")

			must(t, dir, "prep", "/nologo", "/M", name)
			out := must(t, dir, "plist", "/nologo", "/T", name).stdout
			tb := parseTab(t, out)
			if len(tb.runs) != 1 {
				t.Fatalf("runs %v", tb.runs)
			}
			listing := must(t, dir, "plist", "/nologo", name).stdout
			if !strings.Contains(listing, fmt.Sprintf("attached to process %d until PROFILE received SIGINT after", s.PID())) {
				t.Errorf("the run record does not say it covers a window:\n%s", listing)
			}
			if c.prep[0] == "/LC" {
				lines := lineHits(out)
				for _, want := range []struct {
					file string
					line int
					hits uint64
				}{{"attach.c", 43, uint64(n)}, {"libsq.c", 3, uint64(n)}, {"attach.c", 34, 3}} {
					if got := lines[fmt.Sprintf("%s:%d", want.file, want.line)]; got != want.hits {
						t.Errorf("%s line %d: %d hits, want %d\n%s", want.file, want.line, got, want.hits, out)
					}
				}
				return
			}
			for fn, want := range map[string]uint64{"work": uint64(n), "square": uint64(n), "on_usr1": 3, "worker": 0, "main": 0} {
				if got := tb.hits[fn]; got != want {
					t.Errorf("%s: %d hits, want %d\n%s", fn, got, want, out)
				}
			}
		})
	}
}

// TestAttachBusy attaches, again and again, to the server when it is
// anything but idle: a thread calling nop() and work() without end (so
// that PROFILE finds it anywhere in them, inside the span a patch would
// cover, or inside a call whose return a patch would cover), SIGALRM
// every millisecond (a signal on its way at every step of the set-up and
// of the detach), a fork in the window. Each type, in-process and with
// breakpoints (an emulated call at the start of nop()'s line writes a
// return address on the stack: not the program's code, not written back).
// After each window the server is as it was and answers; the ticks go on.
func TestAttachBusy(t *testing.T) {
	testutil.MustHavePtrace(t)
	dir, name := attachDir(t)
	s := startServer(t, dir, name)
	s.Ask(t, "b", "busy")
	s.Ask(t, "t", "ticking")
	cases := []struct{ prep, opts []string }{
		{[]string{"/LC"}, nil},
		{[]string{"/LC"}, []string{"--breakpoints"}},
		{[]string{"/FC"}, nil},
		{[]string{"/FT"}, nil},
		{[]string{"/FC"}, []string{"--breakpoints"}},
	}
	// Then more rounds of the in-process types, where a thread is found
	// inside what a jump would cover (not under emulation, where each
	// attach takes seconds).
	var rounds []struct{ prep, opts []string }
	for range 20 {
		if !testutil.Slow() {
			rounds = append(rounds, cases[0], cases[2])
		}
	}
	for _, c := range append(cases, rounds...) {
		must(t, dir, "prep", append(append([]string{"/nologo"}, c.prep...), name, "libsq.so")...)
		before := testutil.CodeBytes(t, s.PID())
		p := startProfile(t, dir, append(append([]string{"/nologo"}, c.opts...), "--pid="+strconv.Itoa(s.PID())))
		s.Ask(t, "f", "forked")
		s.Ask(t, "w 10", "did 10")
		p.end(t, syscall.SIGINT)
		time.Sleep(10 * time.Millisecond) // (a death is seen)
		s.Alive(t, fmt.Sprintf("%v\n%s", c, p.stderr))
		if strings.Contains(p.stderr.String(), "PRF4670") {
			t.Errorf("%v: a child made before the attach taken for one made out of sight:\n%s", c, p.stderr)
		}
		checkLetGo(t, s.PID(), before)
		s.Ask(t, "w 10", "did 10")
		must(t, dir, "prep", "/nologo", "/M", name)
		if t.Failed() {
			t.Fatalf("after %v", c)
		}
	}
	ticks := func() int {
		var n int
		fmt.Sscanf(s.Say(t, "T"), "ticks %d", &n)
		return n
	}
	first := ticks()
	time.Sleep(50 * time.Millisecond)
	if then := ticks(); then <= first {
		t.Errorf("the server's timer stopped: %d ticks, then %d", first, then)
	}
}

// TestAttachStopped refuses a process stopped by SIGSTOP, and leaves it
// stopped, as PROFILE exits: every thread in the group-stop. (A thread
// PROFILE detached is woken to go back into it, and showed 'R' for a
// moment, once in some thirty refusals: so fifty.)
func TestAttachStopped(t *testing.T) {
	testutil.MustHavePtrace(t)
	dir, name := attachDir(t)
	must(t, dir, "prep", "/nologo", "/FC", name)
	s := startServer(t, dir, name)
	for range 50 {
		syscall.Kill(s.PID(), syscall.SIGSTOP)
		r := tool(t, dir, "profile", "/nologo", "--pid="+strconv.Itoa(s.PID()))
		if want := fmt.Sprintf("PRF1651: cannot attach to process %d: it is stopped (SIGSTOP or SIGTSTP)", s.PID()); r.status == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("profile --pid of a stopped process: status %d\n%s\nwant %q", r.status, r.stderr, want)
		}
		if states := testutil.ThreadStates(s.PID()); states == "" || strings.Trim(states, "T") != "" {
			t.Errorf("the process is not left stopped: its threads %q", states)
		}
		syscall.Kill(s.PID(), syscall.SIGCONT)
		s.Ask(t, "w 10", "did 10")
		if t.Failed() {
			return
		}
	}
}

// TestAttachDuration ends the window with --duration, on a server that
// waits, and refuses what cannot be attached to.
func TestAttachDuration(t *testing.T) {
	testutil.MustHavePtrace(t)
	dir, name := attachDir(t)
	must(t, dir, "prep", "/nologo", "/FC", name)
	s := startServer(t, dir, name)
	before := testutil.CodeBytes(t, s.PID())
	r := must(t, dir, "profile", "/nologo", "--pid="+strconv.Itoa(s.PID()), "--duration=0.2")
	if !strings.Contains(r.stderr, fmt.Sprintf("profile: profiling process %d (attach, 2 threads) for 0.2 s", s.PID())) {
		t.Errorf("profile --pid --duration=0.2 said:\n%s", r.stderr)
	}
	checkLetGo(t, s.PID(), before)
	s.Ask(t, "w 10", "did 10")
	must(t, dir, "prep", "/nologo", "/M", name)
	if out := must(t, dir, "plist", "/nologo", name).stdout; !strings.Contains(out, "for 0.2 s: the counts cover that window") {
		t.Errorf("listing:\n%s", out)
	}

	other := exec.Command("sleep", "600")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	worker := 0 // the server's worker thread
	if tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", s.PID())); err == nil {
		for _, e := range tasks {
			if tid, _ := strconv.Atoi(e.Name()); tid != s.PID() {
				worker = tid
			}
		}
	}
	if worker == 0 {
		t.Fatalf("no worker thread in /proc/%d/task", s.PID())
	}
	for _, c := range []struct{ args, want string }{
		{"--pid=999999999", "PRF1651: cannot attach to process 999999999"},
		{fmt.Sprintf("--pid=%d attach", other.Process.Pid), fmt.Sprintf("PRF1651: cannot attach to process %d: it runs ", other.Process.Pid)},
		{fmt.Sprintf("--pid=%d --duration=soon", s.PID()), "PRF1102: --duration=soon: invalid option"},
		{fmt.Sprintf("--pid=%d --duration=0", s.PID()), "PRF1102: --duration=0: invalid option"},
		{fmt.Sprintf("--pid=%d --duration=NaN", s.PID()), "PRF1102: --duration=NaN: invalid option"},
		{fmt.Sprintf("--pid=%d --duration=1e-10", s.PID()), "PRF1102: --duration=1e-10: invalid option"},
		{fmt.Sprintf("--pid=%d", worker), fmt.Sprintf("PRF1651: cannot attach to process %d: it is a thread of process %d: attach to that", worker, s.PID())},
		{"--pid=0", "PRF1102: --pid=0: invalid option"},
		{"--pid=-4", "PRF1104: --pid option requires a numeric parameter"},
		{"--duration=2 attach", "PRF1103: --pid option requires an additional argument"},
		{fmt.Sprintf("--pid=%d attach now", s.PID()), "PRF1102: now: a running process takes no arguments: invalid option"},
	} {
		r := tool(t, dir, "profile", append([]string{"/nologo"}, strings.Fields(c.args)...)...)
		if r.status == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("profile %s: status %d, stderr\n%s\nwant %q", c.args, r.status, r.stderr, c.want)
		}
	}
	s.Ask(t, "s", "signals 0")
}

// server is a running attach fixture, talked to through its standard
// streams.
type server = testutil.Server

// startServer starts the fixture name in dir, with args, and waits for
// its "ready"; it is told to quit, and reaped, when the test ends.
func startServer(t *testing.T, dir, name string, args ...string) *server {
	t.Helper()
	cmd := exec.Command("./"+name, args...)
	cmd.Dir = dir
	return testutil.Serve(t, cmd, toolLimit)
}

// profiler is profile --pid running in the background.
type profiler struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan error
}

// startProfile starts profile with args in dir and waits until it says
// the window has begun.
func startProfile(t *testing.T, dir string, args []string) *profiler {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "profile"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PROFILE=")
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &profiler{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	began := make(chan bool, 1)
	copied := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			p.stderr.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "profile: profiling process ") {
				began <- true
			}
		}
		close(copied)
		began <- false
	}()
	go func() {
		<-copied
		p.done <- cmd.Wait()
	}()
	select {
	case ok := <-began:
		if !ok {
			err := <-p.done
			t.Fatalf("profile %s: %v\n%s", strings.Join(args, " "), err, p.stderr)
		}
	case <-time.After(toolLimit):
		cmd.Process.Kill()
		t.Fatalf("profile %s did not begin:\n%s", strings.Join(args, " "), p.stderr)
	}
	return p
}

// end sends profile sig and waits for it to exit 0.
func (p *profiler) end(t *testing.T, sig syscall.Signal) {
	t.Helper()
	p.cmd.Process.Signal(sig)
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("profile: %v\n%s", err, p.stderr)
		}
	case <-time.After(toolLimit):
		p.cmd.Process.Kill()
		t.Fatalf("profile did not end after %v:\n%s", sig, p.stderr)
	}
}

// checkLetGo checks that process pid runs untraced, no thread stopped,
// its code as it was before.
func checkLetGo(t *testing.T, pid int, before map[string][]byte) {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), "\nTracerPid:\t0\n") {
		t.Errorf("still traced:\n%s", status)
	}
	if states := testutil.ThreadStates(pid); strings.ContainsAny(states, "tT") {
		t.Errorf("a thread is left stopped: its threads %q", states)
	}
	after := testutil.CodeBytes(t, pid)
	if len(after) != len(before) {
		t.Errorf("code mappings: %d after, %d before", len(after), len(before))
	}
	for name, b := range before {
		a, ok := after[name]
		if !ok {
			t.Errorf("%s: gone", name)
			continue
		}
		if i := firstDiff(a, b); i >= 0 {
			t.Errorf("%s: byte %#x is %#x, was %#x", name, i, a[i], b[i])
		}
	}
}

// firstDiff is the first offset where a and b differ, or -1.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// lineHits reads a line profile's records 7 from plist /T: hits by
// "file:line".
func lineHits(tab string) map[string]uint64 {
	hits := map[string]uint64{}
	for _, line := range strings.Split(tab, "\n") {
		f := strings.Split(line, "\t")
		if len(f) == 5 && f[0] == "7" {
			n, _ := strconv.ParseUint(f[4], 10, 64)
			hits[filepath.Base(f[2])+":"+f[3]] += n
		}
	}
	return hits
}

// TestProgress runs a program for three seconds under profile on a
// terminal (script(1) gives it one): a status line, written in place,
// tells the hits so far from the second second on, and is taken away at
// the end. Off a terminal there is none.
func TestProgress(t *testing.T) {
	testutil.MustHavePtrace(t)
	if !testutil.HaveTool("script") || testutil.Slow() {
		t.Skip("needs script(1), to run profile on a terminal")
	}
	dir, name := attachDir(t)
	must(t, dir, "prep", "/nologo", "/FC", name)
	// (The program's output goes to a file: on the terminal, the status
	// line would write over it, and is not shown.)
	run := fmt.Sprintf("(echo 'w 1000'; sleep 3; echo q) | %s /nologo ./%s >out.txt", filepath.Join(bin, "profile"), name)
	cmd := exec.Command("script", "-qec", run, "/dev/null")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PROFILE=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("script: %v\n%q", err, out)
	}
	status := regexp.MustCompile(`\r\x1b\[Kprofile: (\d+\.\d) s, ([\d,]+) hits, (\d+)% of ([\d,]+) sites in-process`)
	lines := status.FindAllStringSubmatch(string(out), -1)
	if len(lines) < 2 {
		t.Fatalf("no status line, or one, in %q", out)
	}
	// The hits: main and worker once, next_line for the two commands,
	// work and square's PLT stub (the library's import, in the program's
	// module) 1000 times each.
	if first := lines[0]; !atLeast(first[1], 2) || first[2] != "2,004" || first[3] != "100" {
		t.Errorf("first status %q: want 2 s or more, 2,004 hits, every site in-process", first[0])
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(b) != "ready\ndid 1000\n" {
		t.Errorf("the program's output: %q", b)
	}
	if !strings.HasSuffix(string(out), "\r\x1b[K") || strings.Count(string(out), "\r\x1b[K") != len(lines)+1 {
		t.Errorf("the status line is not taken away at the end: %q", out)
	}

	plain := exec.Command("sh", "-c", strings.Replace(run, "/nologo", "/nologo /O plain", 1))
	plain.Dir = dir
	plain.Env = cmd.Env
	var stderr bytes.Buffer
	plain.Stderr = &stderr
	if err := plain.Run(); err != nil || stderr.Len() != 0 {
		t.Errorf("off a terminal: %v, stderr %q", err, stderr.String())
	}
}

// atLeast reports whether the decimal number text is at least v.
func atLeast(text string, v float64) bool {
	f, err := strconv.ParseFloat(text, 64)
	return err == nil && f >= v
}
