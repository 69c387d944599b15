package sprof_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTools are the commands scripts/install-deps runs, standing in for
// dpkg-query, id and apt-get: every package is installed but those named
// in $FAKE_MISSING, the user is $FAKE_UID, and apt-get writes its
// arguments to $FAKE_LOG, a line a call.
var fakeTools = map[string]string{
	"dpkg-query": `#!/bin/sh
for p; do pkg=$p; done
case " $FAKE_MISSING " in
*" $pkg "*) echo "dpkg-query: no packages found matching $pkg" >&2; exit 1 ;;
esac
printf 'install ok installed'
`,
	"id": `#!/bin/sh
[ "$1" = -u ] || exit 9
echo "$FAKE_UID"
`,
	"apt-get": `#!/bin/sh
echo "$*" >>"$FAKE_LOG"
`,
}

// TestInstallDeps runs scripts/install-deps, as make test does, with fake
// dpkg-query, id and apt-get: with every package there it installs
// nothing; with packages missing and not root it installs nothing and
// fails at once, printing the one command that installs them; as root it
// updates apt's lists and installs exactly the missing packages.
func TestInstallDeps(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	fake := t.TempDir()
	for name, script := range fakeTools {
		if err := os.WriteFile(filepath.Join(fake, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, missing, uid string
		status             int
		stdout, stderr     string
		apt                string // apt-get's calls
	}{
		{name: "all there", uid: "1000"},
		{name: "all there, root", uid: "0"},
		{name: "missing, not root", missing: "valgrind lcov", uid: "1000", status: 1,
			stderr: "install-deps: missing Debian packages: valgrind lcov\n" +
				"install-deps: this installs them (as root); then run make test again:\n" +
				"  sudo ./scripts/install-deps\n"},
		{name: "missing, root", missing: "valgrind lcov", uid: "0",
			stdout: "install-deps: installing valgrind lcov\n",
			apt:    "update -qq\ninstall -y -qq --no-install-recommends valgrind lcov\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "apt-get.log")
			cmd := exec.Command("./scripts/install-deps")
			cmd.Env = append(os.Environ(), "PATH="+fake+string(filepath.ListSeparator)+os.Getenv("PATH"),
				"FAKE_MISSING="+tt.missing, "FAKE_UID="+tt.uid, "FAKE_LOG="+log)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			status := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				status = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			apt, err := os.ReadFile(log)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			if status != tt.status || stdout.String() != tt.stdout || stderr.String() != tt.stderr || string(apt) != tt.apt {
				t.Errorf("status %d, stdout %q, stderr %q, apt-get %q\nwant status %d, stdout %q, stderr %q, apt-get %q",
					status, stdout.String(), stderr.String(), apt, tt.status, tt.stdout, tt.stderr, tt.apt)
			}
		})
	}
}

// TestMakeTestInstallsDepsFirst: make test runs scripts/install-deps
// before anything else, once, and then the tests (make -n prints the
// commands without running them; the sub-make of the tests prints its
// own).
func TestMakeTestInstallsDepsFirst(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	// Not the flags of a make this test may run under (make test's own).
	var env []string
	for _, e := range os.Environ() {
		if name, _, _ := strings.Cut(e, "="); name != "MAKEFLAGS" && name != "MFLAGS" && name != "MAKELEVEL" {
			env = append(env, e)
		}
	}
	makeN := func(target string) ([]byte, error) {
		cmd := exec.Command("make", "-n", target)
		cmd.Env = env
		return cmd.CombinedOutput()
	}
	out, err := makeN("test")
	if err != nil {
		t.Fatalf("make -n test: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if lines[0] != "./scripts/install-deps" || strings.Count(string(out), "install-deps") != 1 {
		t.Errorf("make -n test does not run ./scripts/install-deps first, once:\n%s", out)
	}
	for _, step := range []string{"go vet ./...", "go test $(go list ./... | grep -v '/e2e$')", "go test -count=1 ./e2e", "./scripts/arm64-test --all"} {
		if !strings.Contains(string(out), "\n"+step+"\n") {
			t.Errorf("make -n test does not run %q after install-deps:\n%s", step, out)
		}
	}
	if out, err := makeN("deps"); err != nil || string(out) != "./scripts/install-deps\n" {
		t.Errorf("make -n deps: %v\n%s", err, out)
	}
}

// TestArm64AllSummary runs scripts/arm64-test --all with a fake run of
// one VM (ARM64_TEST_ONE) in place of the real ones: the plain run
// passes, the 16K run fails two tests, the BTI run times out in a third.
// Each run's output passes through as it comes, the plain and 16K runs
// share one staging directory and the BTI run has its own, and the end of
// the output, all a CI log may show, says which runs failed, in which
// tests and why (each failed test's messages); the status is 1.
func TestArm64AllSummary(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	fake := filepath.Join(dir, "one-vm")
	script := `#!/bin/sh
echo "$* stage=${ARM64_TEST_STAGE:+shared}" >>"$FAKE_CALLS"
case "$*" in
*--pages16k*)
	echo "=== RUN   TestA"
	echo "=== RUN   TestA/pie"
	echo "        a_test.go:20: in the subtest"
	echo "=== RUN   TestA/nopie"
	echo "        a_test.go:25: a subtest that passed"
	echo "--- FAIL: TestA (0.10s)"
	echo "    --- FAIL: TestA/pie (0.05s)"
	echo "    --- PASS: TestA/nopie (0.05s)"
	echo "=== RUN   TestB"
	echo "--- PASS: TestB (0.01s)"
	echo "=== RUN   TestC"
	echo "    c_test.go:12: got 3, want 4"
	echo "    c_test.go:13: the second"
	echo "--- FAIL: TestC (0.01s)"
	echo "@@arm64-vm status 1@@ after 12.00 s"
	exit 1 ;;
*--bti*)
	echo "panic: test timed out after 13m0s"
	echo "	running tests:"
	echo "		TestGoKnownWork (16s)"
	echo "		TestGoKnownWork/pie (3s)"
	echo ""
	echo "goroutine 4163 [running]:"
	exit 124 ;;
esac
echo "--- PASS: TestA (0.10s)"
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("./scripts/arm64-test", "--all", "--run=Test")
	cmd.Env = append(os.Environ(), "ARM64_TEST_ONE="+fake, "FAKE_CALLS="+calls)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("arm64-test --all: %v, want status 1\n%s", err, out)
	}
	wantEnd := `arm64-test --all: plain: passed
arm64-test --all: pages16k: FAILED (status 1)
    --- FAIL: TestA (0.10s)
            a_test.go:20: in the subtest
        --- FAIL: TestA/pie (0.05s)
        c_test.go:12: got 3, want 4
        c_test.go:13: the second
    --- FAIL: TestC (0.01s)
    @@arm64-vm status 1@@ after 12.00 s
arm64-test --all: bti: FAILED (status 124)
    panic: test timed out after 13m0s
    	running tests:
    		TestGoKnownWork (16s)
    		TestGoKnownWork/pie (3s)
    
`
	if !strings.HasSuffix(string(out), wantEnd) {
		t.Errorf("the output ends:\n%s\nwant it to end:\n%s", out, wantEnd)
	}
	if !strings.HasPrefix(string(out), "--- PASS: TestA (0.10s)\n=== RUN   TestA\n") {
		t.Errorf("the runs' output does not pass through first:\n%s", out)
	}
	got, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	want := "--run=Test stage=shared\n--run=Test --pages16k stage=shared\n--run=Test --bti stage=\n"
	if string(got) != want {
		t.Errorf("the runs made:\n%s\nwant\n%s", got, want)
	}
}
