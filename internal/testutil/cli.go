package testutil

import (
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
