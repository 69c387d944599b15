package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// fuzzFiles are the response files the fuzz target may name.
var fuzzFiles = map[string]string{
	"r":    "/nologo /fc /sc",
	"loop": "@loop",
	"a":    "/inc x @b",
	"b":    "/stack 5 prog -- @a",
	"at":   "@",
}

// fuzzArgs splits a fuzz input into arguments on newlines, so that
// arguments may hold spaces or be empty.
func fuzzArgs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// FuzzParse parses any command line with the test tools: it never panics,
// every error is a usage diagnostic, and what is parsed keeps the tool's
// limits and, for a program, its arguments as typed.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "@r\nprog", "@loop", "@a", "/fc\n/inc\na(1-2)\n--exclude=b\nprog", "/sf\na\n/sf\nb\n--start=-c\nprog",
		"/?\n--help", "--\n-x", "/usr/bin/ls\n/x\n-y", "/sn\n/sc\n/tab\n010\nin", "--sort=name\n--sort\nx",
		"/stack", "--stack", "/tr\n/ta\n/t", "/\n-", "a\nb\nc\nd", "/inc\n1\n/inc\n2\n/inc\n3\n/inc\n4",
		"--tr\nprog", "--trace-l=5\n--nolo\n--so=name\nprog", "--s=count\n--=\n--sort=c", "--star\n-x\n--inc",
	} {
		f.Add(s, "", false)
		f.Add(s, "/nologo /exc e", true)
	}
	f.Fuzz(func(t *testing.T, line, env string, program bool) {
		tool := toyTool()
		if program {
			tool = programTool()
		}
		args := fuzzArgs(line)
		c, err := tool.parse(args, env, fakeFS(fuzzFiles), func(*prf.Diagnostic) {})
		if c == nil {
			t.Fatalf("args %q: nil command", args)
		}
		if err != nil {
			if !prf.IsUsage(err) {
				t.Fatalf("args %q: error is not a usage diagnostic: %v", args, err)
			}
			return
		}
		if !program && len(c.Names) > tool.MaxNames {
			t.Fatalf("args %q: %d names, at most %d", args, len(c.Names), tool.MaxNames)
		}
		if c.Options.Depth < -1 {
			t.Fatalf("args %q: negative number %d", args, c.Options.Depth)
		}
		// Without the environment variable and response files, the
		// program's arguments are the last arguments, as typed.
		plain := strings.TrimSpace(env) == "" && !slices.ContainsFunc(args, func(a string) bool {
			return strings.HasPrefix(a, "@")
		})
		if n := len(c.Args); program && plain && n > 0 && (n > len(args) || !slices.Equal(c.Args, args[len(args)-n:])) {
			t.Fatalf("args %q: program arguments %q are not a suffix", args, c.Args)
		}
	})
}

// FuzzParseHuge parses command lines of up to 200,000 tokens, a fuzzed
// group of tokens repeated: a parse that is not linear in the tokens, or
// that keeps more than a few words of memory per token, shows as a fuzzing
// timeout or an out-of-memory failure (kong's tracing made 20,000 options
// take 28 s and 5.9 GB).
func FuzzParseHuge(f *testing.F) {
	f.Add("/exc\nf", uint16(50000), false)
	f.Add("/inc\na(1-2)\n--exclude=b", uint16(30000), false)
	f.Add("-x", uint16(65535), true)
	f.Add("/sc\n/sn", uint16(40000), false)
	f.Fuzz(func(t *testing.T, group string, n uint16, program bool) {
		tokens := fuzzArgs(group)
		if len(tokens) == 0 || strings.Contains(group, "@") {
			return
		}
		var args []string
		if program {
			args = append(args, "prog")
		}
		for len(args) < 200000 && n > 0 {
			args = append(args, tokens...)
			n--
		}
		tool := toyTool()
		if program {
			tool = programTool()
		}
		tool.MaxNames = 0
		c, err := tool.parse(args, "", fakeFS(nil), nil)
		if err != nil {
			if !prf.IsUsage(err) {
				t.Fatalf("not a usage diagnostic: %v", err)
			}
			return
		}
		if len(c.Options.List) > len(args) || (program && len(c.Args) != len(args)-1) {
			t.Fatalf("%d tokens gave %d selections and %d program arguments", len(args), len(c.Options.List), len(c.Args))
		}
	})
}
