package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// profileWant returns the options of "profile prog" changed by edit.
func profileWant(edit func(o *ProfileOptions)) *ProfileOptions {
	o := &ProfileOptions{SampleInterval: -1, Program: "prog"}
	if edit != nil {
		edit(o)
	}
	return o
}

func TestParseProfileOptions(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   string
		files map[string]string
		want  *ProfileOptions
	}{
		{"default", words("prog"), "", nil, profileWant(nil)},
		{"A with E", words("/a /e errs.txt prog"), "", nil, profileWant(func(o *ProfileOptions) { o.Append, o.ErrorFile = true, "errs.txt" })},
		{"A E dash upper", words("-A -E errs.txt prog"), "", nil, profileWant(func(o *ProfileOptions) { o.Append, o.ErrorFile = true, "errs.txt" })},
		{"A E long", words("--error-file=errs.txt --append prog"), "", nil, profileWant(func(o *ProfileOptions) { o.Append, o.ErrorFile = true, "errs.txt" })},
		{"E long next token", words("--error-file errs.txt prog"), "", nil, profileWant(func(o *ProfileOptions) { o.ErrorFile = "errs.txt" })},
		{"I", words("/i nosuch prog"), "", nil, profileWant(func(o *ProfileOptions) { o.Input = "nosuch" })},
		{"I long", words("--input=dlllib prog"), "", nil, profileWant(func(o *ProfileOptions) { o.Input = "dlllib" })},
		{"I O", words("/I dlllib /O dlllib dllhost"), "", nil, profileWant(func(o *ProfileOptions) {
			o.Input, o.Output, o.Program = "dlllib", "dlllib", "dllhost"
		})},
		{"O", words("/o named prog"), "", nil, profileWant(func(o *ProfileOptions) { o.Output = "named" })},
		{"O long", words("--output named prog"), "", nil, profileWant(func(o *ProfileOptions) { o.Output = "named" })},
		{"NC", words("/nc prog"), "", nil, profileWant(func(o *ProfileOptions) { o.NewConsole = true })},
		{"NC long", words("--new-console prog"), "", nil, profileWant(func(o *ProfileOptions) { o.NewConsole = true })},
		{"S", words("/s 10000 prog"), "", nil, profileWant(func(o *ProfileOptions) { o.SampleInterval = 10000 })},
		{"S long", words("--sample-interval=0 prog"), "", nil, profileWant(func(o *ProfileOptions) { o.SampleInterval = 0 })},
		{"X", words("/x exitcode"), "", nil, profileWant(func(o *ProfileOptions) { o.ExitCode, o.Program = true, "exitcode" })},
		{"X NC", words("/nologo /x /nc args"), "", nil, profileWant(func(o *ProfileOptions) {
			o.NoLogo, o.ExitCode, o.NewConsole, o.Program = true, true, true, "args"
		})},
		{"X long", words("--exit-code prog"), "", nil, profileWant(func(o *ProfileOptions) { o.ExitCode = true })},
		{"NOLOGO", words("/NOL prog"), "", nil, profileWant(func(o *ProfileOptions) { o.NoLogo = true })},
		{"NOLOGO long", words("--nologo prog"), "", nil, profileWant(func(o *ProfileOptions) { o.NoLogo = true })},
		{"NOLOGO env", words("fcount"), "/nologo", nil, profileWant(func(o *ProfileOptions) { o.NoLogo, o.Program = true, "fcount" })},

		// args-profile: everything after the program is the program's.
		{"program arguments", []string{"/nologo", "args", "alpha", "beta gamma", "/x", "-y"}, "", nil,
			profileWant(func(o *ProfileOptions) {
				o.NoLogo, o.Program, o.Args = true, "args", []string{"alpha", "beta gamma", "/x", "-y"}
			})},
		{"program arguments untouched", []string{"prog", "@resp", "--", "", "--help", "/?", "-o", "x"}, "", nil,
			profileWant(func(o *ProfileOptions) { o.Args = []string{"@resp", "--", "", "--help", "/?", "-o", "x"} })},
		{"path program", words("/usr/bin/ls -l /tmp"), "", nil, profileWant(func(o *ProfileOptions) {
			o.Program, o.Args = "/usr/bin/ls", []string{"-l", "/tmp"}
		})},
		{"end of options", words("/x -- -prog -x"), "", nil, profileWant(func(o *ProfileOptions) {
			o.ExitCode, o.Program, o.Args = true, "-prog", []string{"-x"}
		})},
		{"program in response file", words("@r b"), "", map[string]string{"r": "/nologo prog /x @q"},
			profileWant(func(o *ProfileOptions) { o.NoLogo, o.Args = true, []string{"/x", "@q", "b"} })},
		{"program in env", words("/x a"), "/nologo prog", nil, profileWant(func(o *ProfileOptions) {
			o.NoLogo, o.Args = true, []string{"/x", "a"}
		})},
		{"empty program name", []string{"/nc", "", "a"}, "", nil, profileWant(func(o *ProfileOptions) {
			o.NewConsole, o.Program, o.Args = true, "", []string{"a"}
		})},
		{"trailing O is the program", words("/nologo /o"), "", nil, profileWant(func(o *ProfileOptions) {
			o.NoLogo, o.Program = true, "/o"
		})},

		{"help q", words("/?"), "", nil, &ProfileOptions{SampleInterval: -1, Help: UsageHelp}},
		{"help h", words("/h"), "", nil, &ProfileOptions{SampleInterval: -1, Help: UsageHelp}},
		{"help HELP dash", words("-HELP"), "", nil, &ProfileOptions{SampleInterval: -1, Help: UsageHelp}},
		{"help before program", words("/? prog a"), "", nil, profileWant(func(o *ProfileOptions) {
			o.Help, o.Args = UsageHelp, []string{"a"}
		})},
		{"long help", words("--help"), "", nil, &ProfileOptions{SampleInterval: -1, Help: LongHelp}},
		{"no arguments", nil, "", nil, &ProfileOptions{SampleInterval: -1, Help: UsageHelp}},
		{"nologo only", words("/nologo"), "", nil, &ProfileOptions{SampleInterval: -1, NoLogo: true, Help: UsageHelp}},
		// profile-no-program: options but no program print the usage.
		{"no program", words("/nologo /o named"), "", nil, &ProfileOptions{SampleInterval: -1, NoLogo: true, Output: "named", Help: UsageHelp}},
		{"end of options only", words("--"), "", nil, &ProfileOptions{SampleInterval: -1, Help: UsageHelp}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, warnings, err := parseAny(t, Profile, tt.args, tt.env, tt.files)
			if err != nil {
				t.Fatalf("profile %q: %v", tt.args, err)
			}
			if len(warnings) > 0 {
				t.Errorf("profile %q: unexpected warnings %q", tt.args, warnings)
			}
			if diff := cmp.Diff(tt.want, opts, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("profile %q: options (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestProfileAppendWithoutErrorFile is profile-a-without-e: /A alone warns
// PRF4111 and the program still runs.
func TestProfileAppendWithoutErrorFile(t *testing.T) {
	tests := []struct {
		args     string
		warnings []string
	}{
		{"/nologo /a fcount", []string{"profile: warning PRF4111: no error file (/E) specified for /A option"}},
		{"--append fcount", []string{"profile: warning PRF4111: no error file (/E) specified for /A option"}},
		{"/a /e errs.txt fcount", nil},
		{"/e errs.txt /a fcount", nil},
		{"fcount /a", nil}, // the program's /a
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			opts, warnings, err := parseAny(t, Profile, words(tt.args), "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := opts.(*ProfileOptions).Program; got != "fcount" {
				t.Errorf("Program = %q, want fcount", got)
			}
			if diff := cmp.Diff(tt.warnings, warnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}
