package testutil

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/cli"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// ParseFuzzed parses a fuzzed command line of tool: line holds one argument
// a line (so that arguments may hold spaces or be empty), env the tool's
// environment variable. Lines naming response files are skipped (the
// engine's own fuzz target covers them without a file system). It fails
// the test when an error is not a usage diagnostic, and returns nil after
// any error.
func ParseFuzzed[T any](t *testing.T, tool *cli.Tool[T], line, env string) *cli.Command[T] {
	t.Helper()
	if strings.Contains(line+env, "@") {
		t.Skip("response files are fuzzed in internal/cli, without a file system")
	}
	var args []string
	if line != "" {
		args = strings.Split(line, "\n")
	}
	c, err := tool.Parse(args, func(string) string { return env }, func(*prf.Diagnostic) {})
	if err != nil {
		if !prf.IsUsage(err) {
			t.Fatalf("args %q: not a usage diagnostic: %v", args, err)
		}
		return nil
	}
	return c
}

// Command is one of the three tools, run in-process through its run
// function, for the tests of its command line.
type Command struct {
	// Name and Env are the tool's name and environment variable.
	Name, Env string
	// Banner is what it prints first unless /NOLOGO.
	Banner string
	// Run is the tool's main: arguments in, exit status out.
	Run func(args []string, stdout, stderr io.Writer) int
}

// Exec runs the tool with env as its environment variable and returns its
// standard output, standard error and exit status.
func (c Command) Exec(t *testing.T, args []string, env string) (stdout, stderr string, status int) {
	t.Helper()
	t.Setenv(c.Env, env)
	var out, errb bytes.Buffer
	status = c.Run(args, &out, &errb)
	return out.String(), errb.String(), status
}

// Usage is a way to ask for the original's usage text, and the recorded
// output of the original that holds it.
type Usage struct {
	Golden string // under testdata/original
	Args   string // split on spaces
	// NoInput is set for a command line that names no input: the
	// usage goes to stderr, with status 2 (the original exited 0).
	NoInput bool
}

// TestUsage checks that each command line prints the original's usage
// text, byte for byte but for the line ends: asked for, on stdout with
// status 0; for a command line without input (Usage.NoInput), after
// anything else on stderr, nothing on stdout, with status 2.
func (c Command) TestUsage(t *testing.T, cases []Usage) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Golden, func(t *testing.T) {
			stdout, stderr, status := c.Exec(t, strings.Fields(tt.Args), "")
			want := OriginalText(t, tt.Golden)
			switch {
			case tt.NoInput && (stdout != "" || !strings.HasSuffix(stderr, want) || status != 2):
				t.Errorf("%s %s: status %d, stdout %q, stderr\n%q\nwant status 2 and stderr ending\n%q", c.Name, tt.Args, status, stdout, stderr, want)
			case !tt.NoInput && (stdout != want || status != 0):
				t.Errorf("%s %s: status %d, stdout\n%q\nwant status 0 and\n%q", c.Name, tt.Args, status, stdout, want)
			}
		})
	}
}

// Diagnostic is a command line that fails before the tool does anything,
// with the line the tool prints.
type Diagnostic struct {
	Name   string
	Args   []string
	Env    string
	Want   string
	Golden string // the original's output of the same command, if recorded
	Banner bool   // the banner comes first: /NOLOGO was not seen before the error
}

// TestDiagnostics runs each failing command line in an empty directory: it
// must print the diagnostic and the hint to try --help, exit with status 2
// and print nothing on stdout; where the original's output was recorded,
// the line is the original's (Linux adds the system's reason to PRF1011).
func (c Command) TestDiagnostics(t *testing.T, cases []Diagnostic) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			stdout, stderr, status := c.Exec(t, tt.Args, tt.Env)
			want := tt.Want + "\n" + c.Name + ": hint: try '" + c.Name + " --help' for the options\n"
			if tt.Banner {
				want = c.Banner + want
			}
			if stderr != want || stdout != "" || status != 2 {
				t.Errorf("%s %q: status %d, stdout %q, stderr\n%s\nwant status 2, stderr\n%s", c.Name, tt.Args, status, stdout, stderr, want)
			}
			if tt.Golden == "" {
				return
			}
			golden := OriginalLine(t, tt.Golden)
			if tt.Want != golden && !(strings.Contains(golden, "PRF1011") && strings.HasPrefix(tt.Want, golden+": ")) {
				t.Errorf("%s: the original printed\n%s", tt.Golden, golden)
			}
		})
	}
}

// TestLongHelp pins the tool's --help text to testdata/help.golden
// (rewritten with -update) and checks that it fits 80 columns; and its
// --man page and --version.
func (c Command) TestLongHelp(t *testing.T) {
	t.Helper()
	stdout, _, status := c.Exec(t, []string{"--nologo", "--help"}, "")
	if status != 0 {
		t.Errorf("%s --help: status %d", c.Name, status)
	}
	Golden(t, "testdata/help.golden", []byte(stdout))
	for _, line := range strings.Split(stdout, "\n") {
		if len(line) > 80 {
			t.Errorf("%s --help: a line longer than 80 columns: %q", c.Name, line)
		}
	}
	// The man page is the same text in man(7) macros (testdata/man.golden),
	// with every option of --help; --version names the tool and the
	// licence. Neither prints the banner.
	man, stderr, status := c.Exec(t, []string{"--man"}, "")
	if status != 0 || stderr != "" || !strings.HasPrefix(man, ".TH "+strings.ToUpper(c.Name)+" 1 ") {
		t.Errorf("%s --man: status %d, stderr %q, page %.100q", c.Name, status, stderr, man)
	}
	Golden(t, "testdata/man.golden", []byte(man))
	for _, line := range strings.Split(stdout, "\n") {
		if name, _, ok := strings.Cut(strings.TrimSpace(line), " "); ok && strings.HasPrefix(name, "--") {
			if !strings.Contains(man, strings.ReplaceAll(strings.TrimSuffix(name, ","), "-", `\-`)) {
				t.Errorf("%s --man lacks %s", c.Name, name)
			}
		}
	}
	version, stderr, status := c.Exec(t, []string{"--version"}, "")
	if status != 0 || stderr != "" || !strings.HasPrefix(version, c.Name+" (Source Profiler for Linux) ") || !strings.Contains(version, "License: MIT") {
		t.Errorf("%s --version: status %d, stderr %q, %q", c.Name, status, stderr, version)
	}
}
