package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// TestRealProgramsUnharmed: programs no one here wrote run under PROFILE
// as they run natively, their output byte for byte and their status:
// gofmt (built from this Go's sources, a Go program not PIE) formatting
// two files of go/ast and go/token (every function and every line of it
// profiled, the runtime's too), Lua 5.4 running a script
// of tables, strings and closures, and zstd compressing its own binary,
// under function counting, timing and coverage and line counting and
// coverage, in-process (profile /X: the program's own status). Before
// every patch wrote over one instruction alone, gofmt died of SIGILL
// under /FC: an entry's patch covered an instruction something jumps to.
func TestRealProgramsUnharmed(t *testing.T) {
	testutil.MustHavePtrace(t)
	if testing.Short() {
		t.Skip("builds gofmt, Lua and zstd (scripts/real-programs) the first time")
	}
	if testutil.Slow() {
		t.Skip("the real programs are the host's (the arm64 VM runs the fixtures)")
	}
	gofmt := buildGofmt(t)
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	goroot := strings.TrimSpace(string(out))
	work, err := os.ReadFile(filepath.Join(testutil.Root(t), "bench", "lua-work.lua"))
	if err != nil {
		t.Fatal(err)
	}
	zstd := testutil.RealProgram(t, runtime.GOARCH, "zstd")
	for _, c := range []struct {
		prog  string
		args  []string
		types []string
		sel   []string // what PREP selects besides the defaults
	}{
		{gofmt, []string{filepath.Join(goroot, "src", "go", "ast", "ast.go"), filepath.Join(goroot, "src", "go", "token", "position.go")}, []string{"/FC", "/FT", "/FV", "/LC", "/LV"}, []string{"/INC", "*"}},
		{testutil.RealProgram(t, runtime.GOARCH, "lua"), []string{"work.lua", "2000"}, []string{"/FC", "/FT", "/LC", "/LV"}, nil},
		{zstd, []string{"-q", "-c", "-3", "zstd"}, []string{"/FC", "/LC", "/LV"}, nil},
	} {
		for _, typ := range c.types {
			name := filepath.Base(c.prog)
			t.Run(name+typ, func(t *testing.T) {
				dir := t.TempDir()
				name := install(t, c.prog, dir)
				if err := os.WriteFile(filepath.Join(dir, "work.lua"), work, 0o644); err != nil {
					t.Fatal(err)
				}
				native := exec.Command("./"+name, c.args...)
				native.Dir = dir
				want, err := native.Output()
				if ee, ok := err.(*exec.ExitError); err != nil && !ok || ok && ee.ExitCode() != 0 {
					t.Fatalf("natively: %v", err)
				}
				must(t, dir, "prep", append(append([]string{"/nologo", typ}, c.sel...), name)...)
				r := tool(t, dir, "profile", append([]string{"/nologo", "/X", name}, c.args...)...)
				if r.status != 0 || len(want) == 0 || !bytes.Equal([]byte(r.stdout), want) {
					t.Errorf("%s %s: status %d, %d bytes of output, natively %d (the same: %v)\n%s",
						typ, name, r.status, len(r.stdout), len(want), r.stdout == string(want), strings.TrimSpace(r.stderr))
				}
			})
		}
	}
}
