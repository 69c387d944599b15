package cli

import (
	"slices"
	"strings"
	"testing"
)

// fuzzFiles are the response files the fuzz targets may name.
var fuzzFiles = map[string]string{
	"r":    "/nologo /fc /sc",
	"loop": "@loop",
	"a":    "/inc x @b",
	"b":    "/c 5 prog -- @a",
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

// addSeeds adds every command line of the tests of tool as a seed.
func addSeeds(f *testing.F, tool Tool) {
	f.Add("", "")
	f.Add("@r\nprog", "")
	f.Add("@loop", "")
	f.Add("@a", "/x")
	for _, tt := range diagTests {
		if tt.tool == tool {
			f.Add(strings.Join(tt.args, "\n"), tt.env)
		}
	}
	for _, s := range []string{
		"/fc\n/inc\na(1-2)\n--exclude=b\nprog", "/sf\na\n/sf\nb\n--start=-c\nprog",
		"/m\nx\n/io\ny", "/?\n--help", "--\n-x", "/usr/bin/ls\n/x\n-y",
		"/e\nerr\n/a\nprog\n@x", "/sn\n/sc\n/flat\n/indent\n/tab\n010\nin",
		"--sort=time\n--sort\nline\nx", "/c", "--stack", "/tr\n/ta\n/t",
	} {
		f.Add(s, "")
	}
}

// checkErr fails when err is not a usage error: every error of a Parse
// function must be one, so an error from kong means the normaliser let
// through a command line kong rejects.
func checkErr(t *testing.T, args []string, err error) {
	t.Helper()
	if err != nil && !IsUsageError(err) {
		t.Fatalf("args %q: error is not a usage error: %v", args, err)
	}
}

func FuzzParsePrep(f *testing.F) {
	addSeeds(f, Prep)
	f.Fuzz(func(t *testing.T, line, env string) {
		args := fuzzArgs(line)
		o, err := parsePrep(args, envOf("PREP", env), func(error) {}, fakeFS(fuzzFiles))
		checkErr(t, args, err)
		if o == nil {
			t.Fatalf("args %q: nil options", args)
		}
		if err != nil || o.Help != NoHelp {
			return
		}
		if !o.Method.Valid() || len(o.Programs) > 8 || len(o.InputPBOs) > 8 ||
			(!o.PhaseII() && len(o.Programs) == 0) || o.Stack < 0 || o.Calibrate < -1 {
			t.Fatalf("args %q: invalid options %+v", args, o)
		}
	})
}

func FuzzParseProfile(f *testing.F) {
	addSeeds(f, Profile)
	f.Fuzz(func(t *testing.T, line, env string) {
		args := fuzzArgs(line)
		o, err := parseProfile(args, envOf("PROFILE", env), func(error) {}, fakeFS(fuzzFiles))
		checkErr(t, args, err)
		if o == nil {
			t.Fatalf("args %q: nil options", args)
		}
		if err != nil {
			return
		}
		// Without the environment variable and response files, the
		// program's arguments are the last arguments, as typed.
		plain := strings.TrimSpace(env) == "" && !slices.ContainsFunc(args, func(a string) bool {
			return strings.HasPrefix(a, "@")
		})
		if n := len(o.Args); plain && n > 0 && (n > len(args) || !slices.Equal(o.Args, args[len(args)-n:])) {
			t.Fatalf("args %q: program arguments %q are not a suffix", args, o.Args)
		}
	})
}

func FuzzParsePlist(f *testing.F) {
	addSeeds(f, Plist)
	f.Fuzz(func(t *testing.T, line, env string) {
		args := fuzzArgs(line)
		o, err := parsePlist(args, envOf("PLIST", env), func(error) {}, fakeFS(fuzzFiles))
		checkErr(t, args, err)
		if o == nil {
			t.Fatalf("args %q: nil options", args)
		}
		if err != nil {
			return
		}
		if o.Flat && o.Indent || o.Count < 0 || o.PageLength < -1 || o.PageWidth < -1 || o.TabWidth < 0 {
			t.Fatalf("args %q: invalid options %+v", args, o)
		}
	})
}
