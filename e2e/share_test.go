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
// root.

// serveAsNobody starts the server name of dir, with args, as the user
// nobody (the tests run as root), dir opened to it.
func serveAsNobody(t *testing.T, dir, name string, args ...string) *server {
	t.Helper()
	openToAll(t, dir)
	cmd := exec.Command("./"+name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	return serve(t, cmd)
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
			s.ask(t, "w 100", "did 100") // (the worker thread is in worker())
			before := codeBytes(t, s.pid())
			p := startProfile(t, dir, []string{"/nologo", "--pid=" + strconv.Itoa(s.pid())})
			s.ask(t, fmt.Sprintf("w %d", n), fmt.Sprintf("did %d", n))
			p.end(t, syscall.SIGINT)
			if strings.Contains(p.stderr.String(), "PRF4648") || strings.Contains(p.stderr.String(), "PRF4650") {
				t.Errorf("the process of another user was profiled with breakpoints:\n%s", p.stderr)
			}
			if maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", s.pid())); !strings.Contains(string(maps), "/memfd:sprof-counters") {
				t.Errorf("no counters shared with the process:\n%s", maps)
			}
			checkLetGo(t, s.pid(), before)
			s.ask(t, "w 10", "did 10")
			checkHits(t, counted(t, dir, name), map[string]uint64{"work": uint64(n), "square": uint64(n), "main": 0, "worker": 0}, p.stderr)
		})
	}
}
