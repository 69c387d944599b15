package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// Programs that make tracing them hard on purpose (issue 18's hostile
// probe), profiled as a user would.

// nodumpFixture makes itself non-dumpable, then loads libsq.so with
// dlopen (testdata/progs/c/nodump.c).
var nodumpFixture = testutil.Linked{
	Prog: []string{"progs/c/nodump.c"},
	Lib:  []string{"progs/c/libsq.c"},
	Name: "libsq.so",
}

// nobody is the user an unprivileged run takes when the tests run as root.
const nobody = 65534

// unprivileged runs tool name in dir as a user without privileges: the
// tests' own user when it is not root, else nobody, with a copy of the
// tool in dir (the tools' directory is private to root) and dir opened to
// everyone.
func unprivileged(t *testing.T, dir, name string, args ...string) result {
	t.Helper()
	return unprivilegedIn(t, dir, dir, name, args...)
}

// unprivilegedIn is unprivileged with the copy of the tool in dir and the
// working directory cwd, whose mode is left as it is.
func unprivilegedIn(t *testing.T, dir, cwd, name string, args ...string) result {
	t.Helper()
	path := filepath.Join(bin, name)
	cmd := exec.Command(path, args...)
	if os.Geteuid() == 0 {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(dir, "."+name)
		if err := os.WriteFile(path, b, 0o755); err != nil {
			t.Fatal(err)
		}
		openToAll(t, dir)
		cmd = exec.Command(path, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), "PREP=", "PROFILE=", "PLIST=", "INIT=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return result{out.String(), errb.String(), exitStatus(t, name, err)}
}

// openToAll lets every user use dir: the directories above it may be
// searched and read, and dir and its files may be written too.
func openToAll(t *testing.T, dir string) {
	t.Helper()
	for p := dir; p != "/" && p != "."; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o005 != 0o005 {
			if err := os.Chmod(p, st.Mode().Perm()|0o005); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.Chmod(filepath.Join(dir, e.Name()), 0o777)
	}
}

// TestNonDumpable profiles, as a user without privileges, a program that
// makes itself non-dumpable (prctl(PR_SET_DUMPABLE, 0), as ssh-agent
// does) and then loads a library of the plan with dlopen: the kernel then
// refuses that user the program's /proc files, so PROFILE reads its
// memory map and memory through the files it opened at the exec stop,
// and the memory of the program's forked child through ptrace. Every
// count is exact, the child runs unprofiled and unharmed, and the program
// is still non-dumpable at its end.
func TestNonDumpable(t *testing.T) {
	testutil.MustHavePtrace(t)
	for _, m := range []string{"fc", "ft", "lv"} {
		t.Run(m, func(t *testing.T) {
			prog, lib := testutil.BuildLinked(t, "nodump", nodumpFixture)
			dir, err := os.MkdirTemp("", "sprof-nodump-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			prog, lib = install(t, prog, dir), install(t, lib, dir)
			must(t, dir, "prep", "/nologo", "/"+strings.ToUpper(m), prog, lib)
			r := unprivileged(t, dir, "profile", "/nologo", prog, "./"+lib)
			if r.status != 0 {
				t.Fatalf("profile: status %d, output %q\n%s", r.status, r.stdout, r.stderr)
			}
			if want := "sum 328350 child 7 dumpable 0\n"; r.stdout != want {
				t.Errorf("output %q, want %q", r.stdout, want)
			}
			must(t, dir, "prep", "/nologo", "/M", prog)
			got := moduleRecords(t, must(t, dir, "plist", "/nologo", "/T", prog).stdout)
			switch m {
			case "fc", "ft":
				if got["nodump"]["f"] != 10 || got["libsq.so"]["square"] != 100 {
					t.Errorf("f %d times, square %d times; want 10 and 100 (the forked child's calls not counted)",
						got["nodump"]["f"], got["libsq.so"]["square"])
				}
			case "lv":
				if got["libsq.so"]["libsq.c:3"] != 1 {
					t.Errorf("libsq.c:3 covered %d, want 1: %v", got["libsq.so"]["libsq.c:3"], got["libsq.so"])
				}
			}
		})
	}
}
