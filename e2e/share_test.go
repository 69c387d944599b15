package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// The memory PROFILE shares with a program, and the system calls it makes
// in one to share it (issue 31): a process of another user attached to by
// root, a process that shares its memory with another one, a process
// whose seccomp filter kills it for those calls.

// serveAsNobody starts the server name of dir, with args, as the user
// nobody (the tests run as root), dir opened to it.
func serveAsNobody(t *testing.T, dir, name string, args ...string) *server {
	t.Helper()
	openToAll(t, dir)
	cmd := exec.Command("./"+name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	return testutil.Serve(t, cmd, toolLimit)
}

// counted is the run of name in dir merged, its hits by function.
func counted(t *testing.T, dir, name string) map[string]uint64 {
	t.Helper()
	must(t, dir, "prep", "/nologo", "/M", name)
	return parseTab(t, must(t, dir, "plist", "/nologo", "/T", name).stdout).hits
}

// checkHits fails the test for each function of want whose hits differ.
func checkHits(t *testing.T, hits, want map[string]uint64, said fmt.Stringer) {
	t.Helper()
	for fn, n := range want {
		if hits[fn] != n {
			t.Errorf("%s: %d hits, want %d\nprofile said:\n%s", fn, hits[fn], n, said)
		}
	}
}

// TestAttachOtherUser attaches as root to the attach server run by the
// user nobody. The counters are memory the server creates (memfd_create)
// and PROFILE maps through its /proc/PID/fd/N: the other way round, the
// server may not open PROFILE's /proc/PID/fd/N, and every entry was
// counted with a breakpoint (PRF4648). The counts are exact, in-process
// (the memory stays mapped in the server, named), and the server is let
// go as it was.
func TestAttachOtherUser(t *testing.T) {
	testutil.MustHavePtrace(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root, to attach to another user's process")
	}
	n := testutil.Scale(1000)
	for _, prep := range []string{"/FC", "/FT"} {
		t.Run(prep[1:], func(t *testing.T) {
			dir, name := attachDir(t)
			must(t, dir, "prep", "/nologo", prep, name, "libsq.so")
			s := serveAsNobody(t, dir, name)
			s.Ask(t, "w 100", "did 100") // (the worker thread is in worker())
			before := testutil.CodeBytes(t, s.PID())
			p := startProfile(t, dir, []string{"/nologo", "--pid=" + strconv.Itoa(s.PID())})
			s.Ask(t, fmt.Sprintf("w %d", n), fmt.Sprintf("did %d", n))
			p.end(t, syscall.SIGINT)
			// (An ARMv8.0 CPU counts with breakpoints, whoever runs the
			// process; it times in-process.)
			if prep == "/FT" || testutil.InProcess() {
				if strings.Contains(p.stderr.String(), "PRF4648") || strings.Contains(p.stderr.String(), "PRF4650") {
					t.Errorf("the process of another user was profiled with breakpoints:\n%s", p.stderr)
				}
				if maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", s.PID())); !strings.Contains(string(maps), "/memfd:sprof-counters") {
					t.Errorf("no counters shared with the process:\n%s", maps)
				}
			}
			checkLetGo(t, s.PID(), before)
			s.Ask(t, "w 10", "did 10")
			checkHits(t, counted(t, dir, name), map[string]uint64{"work": uint64(n), "square": uint64(n), "main": 0, "worker": 0}, p.stderr)
		})
	}
}

// TestAttachSharedMemory attaches to a server whose child, made with
// clone(CLONE_VM), shares its memory without being a thread of it
// (testdata/progs/c/sharer.c): the child runs the code PROFILE patches,
// and died of SIGSEGV at its first count (x86-64) or SIGTRAP at its first
// breakpoint. PROFILE finds it, traces it with the server's threads and
// counts its calls: work and other exactly N times each, in-process and
// with breakpoints; both processes are let go as they were, and answer.
func TestAttachSharedMemory(t *testing.T) {
	testutil.MustHavePtrace(t)
	n := testutil.Scale(1000)
	for _, c := range []struct {
		name string
		prep string
		opts []string
	}{
		{"FC", "/FC", []string{"--explain"}},
		{"FC-breakpoints", "/FC", []string{"--breakpoints"}},
		{"FT", "/FT", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			name := install(t, testutil.BuildC(t, "sharer"), dir)
			must(t, dir, "prep", "/nologo", c.prep, name)
			s := startServer(t, dir, name)
			child := 0
			if _, err := fmt.Sscanf(s.Say(t, "c"), "child %d", &child); err != nil || child == 0 {
				t.Fatalf("no child: %v", err)
			}
			before := testutil.CodeBytes(t, s.PID())
			p := startProfile(t, dir, append(append([]string{"/nologo"}, c.opts...), "--pid="+strconv.Itoa(s.PID())))
			if want := fmt.Sprintf("profiling process %d (sharer, 2 threads)", s.PID()); !strings.Contains(p.stderr.String(), want) {
				t.Errorf("PROFILE did not take the child in: %q\n%s", want, p.stderr)
			}
			if want := fmt.Sprintf("Process %d shares its memory with process %d, made by clone with CLONE_VM", s.PID(), child); len(c.opts) > 0 && c.opts[0] == "--explain" && !strings.Contains(p.stderr.String(), want) {
				t.Errorf("--explain does not say %q:\n%s", want, p.stderr)
			}
			s.Ask(t, fmt.Sprintf("w %d", n), fmt.Sprintf("did %d", n))
			p.end(t, syscall.SIGINT)
			checkLetGo(t, s.PID(), before)
			checkLetGo(t, child, before)
			s.Ask(t, "w 10", "did 10")
			checkHits(t, counted(t, dir, name), map[string]uint64{"work": uint64(n), "other": uint64(n), "child_main": 0, "main": 0}, p.stderr)
		})
	}
}

// sandboxFixture puts itself under a seccomp filter that kills it for the
// system calls a profiler makes in it (testdata/progs/c/sandbox.c): as a
// server ("serve"), or before it loads libsq.so with dlopen.
var sandboxFixture = testutil.Linked{
	Prog: []string{"progs/c/sandbox.c"},
	Lib:  []string{"progs/c/libsq.c"},
	Name: "libsq.so",
}

// TestAttachSeccomp attaches to a server under a seccomp filter that
// kills it for openat, mmap and memfd_create (sandbox.c, "serve"), which
// died of SIGSYS during the set-up. As root PROFILE suspends the filter
// for its own calls: the counts are exact, in-process and with
// breakpoints, and the server is let go as it was. A user without
// CAP_SYS_ADMIN cannot suspend it: the attach is refused (PRF1651) before
// anything is planted, and the server goes on.
func TestAttachSeccomp(t *testing.T) {
	testutil.MustHavePtrace(t)
	n := testutil.Scale(1000)
	prog, _ := testutil.BuildLinked(t, "sandbox", sandboxFixture)
	if os.Geteuid() == 0 {
		for _, c := range []struct {
			name string
			prep string
			opts []string
		}{
			{"FC", "/FC", []string{"--explain"}},
			{"FC-breakpoints", "/FC", []string{"--breakpoints"}},
			{"FT", "/FT", nil},
		} {
			t.Run(c.name, func(t *testing.T) {
				dir := t.TempDir()
				name := install(t, prog, dir)
				must(t, dir, "prep", "/nologo", c.prep, name)
				s := startServer(t, dir, name, "serve")
				before := testutil.CodeBytes(t, s.PID())
				p := startProfile(t, dir, append(append([]string{"/nologo"}, c.opts...), "--pid="+strconv.Itoa(s.PID())))
				if want := fmt.Sprintf("Thread %d runs under a seccomp filter of its own", s.PID()); len(c.opts) > 0 && c.opts[0] == "--explain" && !strings.Contains(p.stderr.String(), want) {
					t.Errorf("--explain does not say %q:\n%s", want, p.stderr)
				}
				s.Ask(t, fmt.Sprintf("w %d", n), fmt.Sprintf("did %d", n))
				p.end(t, syscall.SIGINT)
				checkLetGo(t, s.PID(), before)
				s.Ask(t, "w 10", "did 10")
				checkHits(t, counted(t, dir, name), map[string]uint64{"work": uint64(n), "serve": 0, "main": 0}, p.stderr)
			})
		}
	}
	t.Run("unprivileged", func(t *testing.T) {
		dir := t.TempDir()
		name := install(t, prog, dir)
		must(t, dir, "prep", "/nologo", "/FC", name)
		var s *server
		if os.Geteuid() == 0 {
			s = serveAsNobody(t, dir, name, "serve")
		} else {
			s = startServer(t, dir, name, "serve")
		}
		before := testutil.CodeBytes(t, s.PID())
		r := unprivileged(t, dir, "profile", "/nologo", "--pid="+strconv.Itoa(s.PID()))
		want := fmt.Sprintf("PRF1651: cannot attach to process %d: its main thread runs under a seccomp filter of its own", s.PID())
		if r.status != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("profile --pid as a user without CAP_SYS_ADMIN: status %d\n%s\nwant %q", r.status, r.stderr, want)
		}
		checkLetGo(t, s.PID(), before)
		s.Ask(t, "w 10", "did 10")
	})
}

// TestSeccompDlopen profiles a program that puts itself under a seccomp
// filter killing it for an anonymous executable mmap and for
// memfd_create, and then loads libsq.so with dlopen (sandbox.c,
// "dlopen"): PROFILE maps an area for the library's trampolines and
// slots then, and the program died of SIGSYS. As root PROFILE suspends
// the filter for that call: the program's output is its own and every
// count exact. A user without CAP_SYS_ADMIN cannot: PROFILE makes no call
// in it and says so (PRF4659); the program still runs to its end, and the
// program's own functions, planted at its start, are counted exactly.
func TestSeccompDlopen(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog, lib := testutil.BuildLinked(t, "sandbox", sandboxFixture)
	for _, prep := range []string{"/FC", "/FT"} {
		for _, root := range []bool{true, false} {
			if root && os.Geteuid() != 0 {
				continue
			}
			t.Run(fmt.Sprintf("%s/root=%v", prep[1:], root), func(t *testing.T) {
				dir := t.TempDir()
				name, libName := install(t, prog, dir), install(t, lib, dir)
				must(t, dir, "prep", "/nologo", prep, name, libName)
				want := map[string]uint64{"f": 10, "square": 100, "main": 1, "load": 1, "install": 1, "serve": 0, "work": 0}
				var r result
				if root {
					r = tool(t, dir, "profile", "/nologo", name, "dlopen", "./"+libName)
				} else {
					r = unprivileged(t, dir, "profile", "/nologo", name, "dlopen", "./"+libName)
					if !strings.Contains(r.stderr, "warning PRF4659: thread ") {
						t.Errorf("no PRF4659 from a user without CAP_SYS_ADMIN:\n%s", r.stderr)
					}
					// (The library's functions whose entries need a slot
					// are not profiled: it has no area.)
					delete(want, "square")
				}
				if r.status != 0 || r.stdout != "sum 328350\n" {
					t.Fatalf("profile: status %d, output %q\n%s", r.status, r.stdout, r.stderr)
				}
				checkHits(t, counted(t, dir, name), want, stringer(r.stderr))
			})
		}
	}
}

// stringer is text as a fmt.Stringer.
type stringer string

func (s stringer) String() string { return string(s) }
