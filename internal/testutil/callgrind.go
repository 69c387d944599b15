package testutil

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Callgrind runs prog under valgrind's callgrind and returns how many times
// each function was called, the independent count the profiler is checked
// against. Recursion levels ("fib'2") are summed into their function. It
// skips the test when valgrind is not installed.
func Callgrind(t testing.TB, prog string, args ...string) map[string]uint64 {
	t.Helper()
	MustHaveTool(t, "valgrind")
	out := filepath.Join(t.TempDir(), "callgrind.out")
	cmd := exec.Command("valgrind", append([]string{"--tool=callgrind", "--callgrind-out-file=" + out, prog}, args...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("valgrind: %v\n%s", err, b)
		}
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return parseCallgrind(bufio.NewScanner(f))
}

var (
	cgName  = regexp.MustCompile(`^c?fn=\((\d+)\)(?: (.*))?$`)
	cgLevel = regexp.MustCompile(`'\d+$`)
)

// parseCallgrind sums the calls= lines of a callgrind output file by callee.
// Names are compressed: "cfn=(12) name" defines id 12, "cfn=(12)" reuses it.
func parseCallgrind(sc *bufio.Scanner) map[string]uint64 {
	names := map[string]string{}
	calls := map[string]uint64{}
	var callee string
	for sc.Scan() {
		line := sc.Text()
		if m := cgName.FindStringSubmatch(line); m != nil {
			if m[2] != "" {
				names[m[1]] = stripReturnType(cgLevel.ReplaceAllString(m[2], ""))
			}
			if strings.HasPrefix(line, "cfn=") {
				callee = names[m[1]]
			}
			continue
		}
		if rest, ok := strings.CutPrefix(line, "calls="); ok && callee != "" {
			n, _ := strconv.ParseUint(strings.Fields(rest)[0], 10, 64)
			calls[callee] += n
			callee = ""
		}
	}
	return calls
}

// stripReturnType drops the return type that callgrind's demangler prints
// before template instances ("int maxof<int>(int, int)"), which the
// profiler's reports, like the original's, leave out.
func stripReturnType(name string) string {
	depth := 0
	for i, c := range name {
		switch c {
		case '<', '(':
			if c == '(' && depth == 0 {
				return name
			}
			depth++
		case '>', ')':
			depth--
		case ' ':
			if depth == 0 {
				return name[i+1:]
			}
		}
	}
	return name
}
