package cli

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// want returns the command of "toy prog" changed by edit.
func want(edit func(c *Command[toy])) *Command[toy] {
	c := &Command[toy]{Options: toyTool().Defaults(), Names: []string{"prog"}}
	if edit != nil {
		edit(c)
	}
	return c
}

func TestParse(t *testing.T) {
	opts := func(edit func(o *toy)) *Command[toy] {
		return want(func(c *Command[toy]) { edit(&c.Options) })
	}
	tests := []struct {
		name  string
		args  []string
		env   string
		files map[string]string
		want  *Command[toy]
	}{
		{"default", words("prog"), "", nil, want(nil)},
		{"short", words("/fc prog"), "", nil, opts(func(o *toy) { o.Mode = "counting" })},
		{"dash and any case", words("-Fc prog"), "", nil, opts(func(o *toy) { o.Mode = "counting" })},
		{"long", words("--counting prog"), "", nil, opts(func(o *toy) { o.Mode = "counting" })},
		{"rightmost wins", words("/fc --sampling /trace prog"), "", nil, opts(func(o *toy) { o.Mode = "trace" })},
		{"text arguments in order", words("/exc a --include=b --exclude c /excall /inc d prog"), "", nil,
			opts(func(o *toy) { o.List = []string{"-a", "+b", "-c", "-*", "+d"} })},
		{"argument with an equals sign", words("--include=x=y prog"), "", nil, opts(func(o *toy) { o.List = []string{"+x=y"} })},
		{"long value with a dash", words("--start=-x prog"), "", nil, opts(func(o *toy) { o.Start = "-x" })},
		{"argument that is a directory", words("/sf /tmp prog"), "", nil, opts(func(o *toy) { o.Start = "/tmp" })},
		{"argument that is a path", words("/sf /usr/src/x prog"), "", nil, opts(func(o *toy) { o.Start = "/usr/src/x" })},
		{"number", words("/stack 16 prog"), "", nil, opts(func(o *toy) { o.Depth = 16 })},
		{"number with leading zero is decimal", words("/st 010 prog"), "", nil, opts(func(o *toy) { o.Depth = 10 })},
		{"largest number", words("--stack=2147483647 prog"), "", nil, opts(func(o *toy) { o.Depth = 2147483647 })},
		{"long form with a fixed value", words("--sort=name prog"), "", nil, opts(func(o *toy) { o.Sort = "name" })},
		{"limit reached, not passed", words("/inc a /inc b /inc c prog"), "", nil, opts(func(o *toy) { o.List = []string{"+a", "+b", "+c"} })},
		{"env before arguments", words("/inc b prog"), "/exc a", nil, opts(func(o *toy) { o.List = []string{"-a", "+b"} })},
		{"env split on white space", words("prog"), " \t/fc\n /nol  ", nil, want(func(c *Command[toy]) {
			c.NoLogo, c.Options.Mode = true, "counting"
		})},
		{"names after options and between", words("a /fc b"), "", nil, want(func(c *Command[toy]) {
			c.Names, c.Options.Mode = []string{"a", "b"}, "counting"
		})},
		{"path is a name", words("/fc /usr/bin/ls"), "", nil, want(func(c *Command[toy]) {
			c.Names, c.Options.Mode = []string{"/usr/bin/ls"}, "counting"
		})},
		{"end of options", words("/fc -- -a /sn @x"), "", nil, want(func(c *Command[toy]) {
			c.Names, c.Options.Mode = []string{"-a", "/sn", "@x"}, "counting"
		})},
		{"empty name", []string{""}, "", nil, want(func(c *Command[toy]) { c.Names = []string{""} })},
		{"trailing option that needs an argument is a name", words("prog /sf"), "", nil, want(func(c *Command[toy]) {
			c.Names = []string{"prog", "/sf"}
		})},
		{"not UTF-8", []string{"/inc", "caf\xe9\xff", "\xff"}, "", nil, want(func(c *Command[toy]) {
			c.Names, c.Options.List = []string{"\xff"}, []string{"+caf\xe9\xff"}
		})},
		{"response file", words("@r prog"), "", map[string]string{"r": "/fc\n/inc\ta(1,\r\n 2)"}, want(func(c *Command[toy]) {
			c.Names, c.Options.Mode, c.Options.List = []string{"2)", "prog"}, "counting", []string{"+a(1,"}
		})},
		{"argument in the next response file", words("/sf @r prog"), "", map[string]string{"r": "main"},
			opts(func(o *toy) { o.Start = "main" })},

		{"long cut short", words("--count prog"), "", nil, opts(func(o *toy) { o.Mode = "counting" })},
		{"long cut short, value after =", words("--inc=a --exclude-a --stac=4 prog"), "", nil,
			opts(func(o *toy) { o.List, o.Depth = []string{"+a", "-*"}, 4 })},
		{"long cut short, value next", words("--star main prog"), "", nil, opts(func(o *toy) { o.Start = "main" })},
		{"long whole wins over longer names", words("--exclude x --trace prog"), "", nil,
			opts(func(o *toy) { o.List, o.Mode = []string{"-x"}, "trace" })},
		{"long with a fixed value cut short in its name", words("--so=name prog"), "", nil, opts(func(o *toy) { o.Sort = "name" })},
		{"nologo cut short", words("--nolo prog"), "", nil, want(func(c *Command[toy]) { c.NoLogo = true })},
		{"usage", words("/?"), "", nil, &Command[toy]{Options: toyTool().Defaults(), Help: UsageHelp}},
		{"usage abbreviated", words("/h prog"), "", nil, want(func(c *Command[toy]) { c.Help = UsageHelp })},
		{"long help", words("--help"), "", nil, &Command[toy]{Options: toyTool().Defaults(), Help: LongHelp}},
		{"usage after long help", words("--help /?"), "", nil, &Command[toy]{Options: toyTool().Defaults(), Help: UsageHelp}},
		{"nologo", words("/nologo prog"), "", nil, want(func(c *Command[toy]) { c.NoLogo = true })},
		{"nologo from env", words("prog"), "/nol", nil, want(func(c *Command[toy]) { c.NoLogo = true })},
		{"no arguments", nil, "/fc", nil, &Command[toy]{Options: toy{Mode: "counting", Depth: -1}, Empty: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warnings, err := parseToy(t, toyTool(), tt.args, tt.env, tt.files)
			if err != nil {
				t.Fatalf("toy %q: %v", tt.args, err)
			}
			if len(warnings) > 0 {
				t.Errorf("toy %q: unexpected warnings %q", tt.args, warnings)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("toy %q (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestProgram checks a tool whose first name is a program: every token
// after it is the program's, as typed.
func TestProgram(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   string
		files map[string]string
		names []string
		rest  []string
		mode  string
	}{
		{"arguments untouched", []string{"/fc", "prog", "@r", "--", "", "--help", "/?", "-o", "x"}, "", nil,
			[]string{"prog"}, []string{"@r", "--", "", "--help", "/?", "-o", "x"}, "counting"},
		{"after end of options", words("/fc -- -prog -x"), "", nil, []string{"-prog"}, []string{"-x"}, "counting"},
		{"program in a response file", words("@r b"), "", map[string]string{"r": "prog /fc @q"}, []string{"prog"}, []string{"/fc", "@q", "b"}, "timing"},
		{"program in env", words("/fc a"), "prog", nil, []string{"prog"}, []string{"/fc", "a"}, "timing"},
		{"no program", words("/fc"), "", nil, nil, nil, "counting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := parseToy(t, programTool(), tt.args, tt.env, tt.files)
			if err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(c.Names, tt.names, cmpopts.EquateEmpty()) || !cmp.Equal(c.Args, tt.rest, cmpopts.EquateEmpty()) || c.Options.Mode != tt.mode {
				t.Errorf("names %q, arguments %q, mode %s; want %q, %q, %s", c.Names, c.Args, c.Options.Mode, tt.names, tt.rest, tt.mode)
			}
		})
	}
}

func TestOverrideWarnings(t *testing.T) {
	sc := "toy: warning PRF4101: option SC overrides an earlier option"
	tests := []struct {
		args, env string
		sort      string
		warnings  []string
	}{
		{"/sn /sc prog", "", "count", []string{sc}},
		{"/sc prog", "/sn", "count", []string{sc}},
		{"/sc /sc prog", "", "count", []string{sc}},
		{"--sort=name /sc prog", "", "count", []string{sc}},
		{"/sc --sort=name prog", "", "name", []string{"toy: warning PRF4101: option --sort=name overrides an earlier option"}},
		{"/sf a /sc --start=b prog", "", "count", []string{"toy: warning PRF4101: option --start overrides an earlier option"}},
		{"/sc /fc /trace /stack 1 /stack 2 prog", "", "count", nil},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			c, warnings, err := parseToy(t, toyTool(), words(tt.args), tt.env, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.Options.Sort != tt.sort {
				t.Errorf("sort %q, want %q", c.Options.Sort, tt.sort)
			}
			if diff := cmp.Diff(tt.warnings, warnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestErrors checks the command-line diagnostics, their order (the first
// error wins) and that /NOLOGO before an error is still known.
func TestErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		env    string
		files  map[string]string
		want   string
		noLogo bool
	}{
		{name: "slash only", args: words("/nologo / prog"), noLogo: true, want: "toy: fatal error PRF1101: missing option specifier"},
		{name: "dash only", args: words("- prog"), want: "toy: fatal error PRF1101: missing option specifier"},
		{name: "unknown", args: words("/bogus /nologo prog"), want: "toy: fatal error PRF1102: bogus: invalid option"},
		{name: "glued argument", args: words("/sfmain prog"), want: "toy: fatal error PRF1102: sfmain: invalid option"},
		{name: "too short", args: words("/e prog"), want: "toy: fatal error PRF1102: e: invalid option"},
		{name: "TA is neither T nor TAB", args: words("/ta 2 prog"), want: "toy: fatal error PRF1102: ta: invalid option"},
		{name: "one-slash word", args: words("/fc /tmp"), want: "toy: fatal error PRF1102: tmp: invalid option"},
		{name: "unknown long", args: words("--bogus prog"), want: "toy: fatal error PRF1102: --bogus: invalid option"},
		{name: "long is case-sensitive", args: words("--NOLOGO prog"), want: "toy: fatal error PRF1102: --NOLOGO: invalid option"},
		{name: "long with stray value", args: words("--nologo=yes prog"), want: "toy: fatal error PRF1102: --nologo=yes: invalid option"},
		{name: "unknown fixed value", args: words("--sort=bogus prog"), want: "toy: fatal error PRF1102: --sort=bogus: invalid option"},
		{name: "fixed value cut short", args: words("--sort=c prog"), want: "toy: fatal error PRF1102: --sort=c: invalid option"},
		{name: "fixed form without its value", args: words("--so prog"), want: "toy: fatal error PRF1102: --so: invalid option"},
		{name: "ambiguous", args: words("--tr prog"),
			want: "toy: fatal error PRF1102: --tr: invalid option: ambiguous option, could be --trace or --trace-limit"},
		{name: "ambiguous, three", args: words("--s=x prog"),
			want: "toy: fatal error PRF1102: --s=x: invalid option: ambiguous option, could be --sampling, --stack or --start"},
		{name: "ambiguous with a fixed value", args: words("--s=count prog"),
			want: "toy: fatal error PRF1102: --s=count: invalid option: ambiguous option, could be --sampling, --sort=count, --stack or --start"},
		{name: "prefix with stray value", args: words("--nolo=yes prog"), want: "toy: fatal error PRF1102: --nolo=yes: invalid option"},
		{name: "prefix is case-sensitive", args: words("--NOL prog"), want: "toy: fatal error PRF1102: --NOL: invalid option"},
		{name: "no name", args: words("--=x prog"), want: "toy: fatal error PRF1102: --=x: invalid option"},
		{name: "prefix at the end", args: words("prog --star"), want: "toy: fatal error PRF1103: --start option requires an additional argument"},
		{name: "argument is negative", args: words("/stack -1 prog"), want: "toy: fatal error PRF1103: STACK option requires an additional argument"},
		{name: "argument is an option", args: words("/sf /fc prog"), want: "toy: fatal error PRF1103: SF option requires an additional argument"},
		{name: "argument is end of options", args: words("/sf -- prog"), want: "toy: fatal error PRF1103: SF option requires an additional argument"},
		{name: "argument is root", args: words("/sf / prog"), want: "toy: fatal error PRF1103: SF option requires an additional argument"},
		{name: "empty argument", args: []string{"/sf", "", "prog"}, want: "toy: fatal error PRF1103: SF option requires an additional argument"},
		{name: "long at the end", args: words("prog --start"), want: "toy: fatal error PRF1103: --start option requires an additional argument"},
		{name: "long empty value", args: words("--start= prog"), want: "toy: fatal error PRF1103: --start option requires an additional argument"},
		{name: "not a number", args: words("/nologo /stack x prog"), noLogo: true, want: "toy: fatal error PRF1104: STACK option requires a numeric parameter"},
		{name: "hexadecimal", args: words("/stack 0x10 prog"), want: "toy: fatal error PRF1104: STACK option requires a numeric parameter"},
		{name: "too large", args: words("/stack 2147483648 prog"), want: "toy: fatal error PRF1104: STACK option requires a numeric parameter"},
		{name: "far too large", args: words("/stack 99999999999999999999999 prog"), want: "toy: fatal error PRF1104: STACK option requires a numeric parameter"},
		{name: "long not a number", args: words("--tab=two prog"), want: "toy: fatal error PRF1104: --tab option requires a numeric parameter"},
		{name: "over the limit", args: words("/inc a --include=b /inc c --include d prog"), want: "toy: fatal error PRF1105: --include option specified more than 3 times"},
		{name: "at only", args: words("@"), want: "toy: fatal error PRF1201: missing filename after @"},
		{name: "at only in a response file", args: words("@r prog"), files: map[string]string{"r": "/nologo @"}, noLogo: true,
			want: "toy: fatal error PRF1201: missing filename after @"},
		{name: "response file missing", args: words("@nosuch.rsp"), want: "toy: fatal error PRF1011: cannot open file nosuch.rsp: file does not exist"},
		{name: "response file loops", args: words("@loop"), files: map[string]string{"loop": "/nologo @loop"}, noLogo: true,
			want: "toy: fatal error PRF1202: response files nested too deeply"},
		{name: "too many names", args: words("a b c d"), want: "toy: fatal error PRF1423: number of modules exceeds 3"},
		{name: "too many names, trailing option", args: words("a b c /sf"), want: "toy: fatal error PRF1423: number of modules exceeds 3"},
		{name: "first error wins", args: words("/bogus @nosuch /stack x"), want: "toy: fatal error PRF1102: bogus: invalid option"},
		{name: "first error wins, response file", args: words("@nosuch /bogus"), want: "toy: fatal error PRF1011: cannot open file nosuch: file does not exist"},
		{name: "error in env", args: words("prog"), env: "/nologo /c5", noLogo: true, want: "toy: fatal error PRF1102: c5: invalid option"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := parseToy(t, toyTool(), tt.args, tt.env, tt.files)
			if err == nil {
				t.Fatalf("toy %q: no error, want %s", tt.args, tt.want)
			}
			if got := prf.Line("toy", err); got != tt.want {
				t.Errorf("toy %q:\n got %s\nwant %s", tt.args, got, tt.want)
			}
			if !prf.IsUsage(err) || prf.ExitStatus(err) != 2 {
				t.Errorf("toy %q: %v is not a usage error of status 2", tt.args, err)
			}
			if c.NoLogo != tt.noLogo {
				t.Errorf("toy %q: NoLogo after the error = %v, want %v", tt.args, c.NoLogo, tt.noLogo)
			}
		})
	}
}

// TestAbbreviations checks the table-order rule of original.md §2.3: a
// token names the first option it is a prefix of, at its minimum length.
func TestAbbreviations(t *testing.T) {
	tool := toyTool()
	tests := []struct {
		word, want string // want: the option's name, "" for none
	}{
		{"E", ""}, {"EX", ""}, {"EXC", "EXC"}, {"exca", "EXCALL"}, {"EXCAL", "EXCALL"}, {"EXCALLS", ""},
		{"F", ""}, {"fc", "FC"}, {"h", "HELP"}, {"He", "HELP"}, {"IN", ""}, {"inc", "INC"},
		{"N", ""}, {"NO", ""}, {"nol", "NOLOGO"}, {"S", ""}, {"SF", "SF"}, {"ST", "STACK"}, {"sta", "STACK"},
		{"T", "T"}, {"TR", "TRACE"}, {"TRAC", "TRACE"}, {"TA", ""}, {"tab", "TAB"},
		{"?", "?"}, {"??", ""},
		{"\u017f", ""}, // Long S folds to S under Unicode rules, not here
	}
	for _, tt := range tests {
		got := ""
		if o := tool.lookupShort(tt.word); o != nil {
			got = o.Name
		}
		if got != tt.want {
			t.Errorf("lookupShort(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
}

func TestHelpNames(t *testing.T) {
	tool := toyTool()
	tests := []struct{ name, want string }{
		{"NOLOGO", "/NOL[OGO], --nologo"},
		{"STACK", "/ST[ACK], --stack=N"},
		{"EXCALL", "/EXCA[LL], --exclude-all"},
		{"EXC", "/EXC, --exclude=SPEC"},
		{"HELP", "/H[ELP]"},
		{"?", "/?"},
		{"TRACE", "/TR[ACE], --trace"},
		{"T", "/T, --quiet"},
		{"SC", "/SC, --sort=count"},
	}
	for _, tt := range tests {
		o := tool.lookupShort(tt.name)
		if o == nil || o.Name != tt.name {
			t.Fatalf("lookupShort(%q) = %v", tt.name, o)
		}
		if got := tool.helpName(o); got != tt.want {
			t.Errorf("helpName(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestHelpTexts(t *testing.T) {
	tool := toyTool()
	usage := "TOY [options] <names>\n\n" +
		"/EXC\tExclude\n/EXCALL\tExclude all\n/FC\tCount\n/INC\t<spec> Include\n/HELP\tDisplay TOY usage\n" +
		"/NOLOGO\tSuppress copyright message\n/SF\t<function> Start\n/STACK\t<number> Depth\n" +
		"/SC\tSort by count\n/SN\tSort by name\n/T\tQuiet\n/TRACE\tTrace\n/?\tDisplay TOY usage\n/TAB\t<width> Tab\n" +
		"\n<names> are names.\n"
	if got := tool.HelpText(UsageHelp); got != usage {
		t.Errorf("usage:\n got %q\nwant %q", got, usage)
	}
	long := tool.HelpText(LongHelp)
	for _, line := range []string{
		"Usage: toy [OPTION]... NAME...\n",
		"Mode:\n  /FC, --counting            count\n  /FS, --sampling            sample\n",
		"Sort:\n  /SC, --sort=count          by count\n",
		"Other options:\n  /H[ELP]                    print the original's usage summary\n",
		"  --help                     print this help\n",
		"Names are names.\nThe environment variable TOY is read before the arguments",
	} {
		if !strings.Contains(long, line) {
			t.Errorf("--help lacks %q:\n%s", line, long)
		}
	}
	if got := tool.HelpText(NoHelp); got != "" {
		t.Errorf("HelpText(NoHelp) = %q", got)
	}
	if !strings.HasSuffix(long, "reads\narguments from FILE. Exit status: 0 success, 1 fatal error, 2 invalid\ncommand line.\n") {
		t.Errorf("--help does not end with the exit statuses:\n%s", long)
	}
	tool.ExitStatus = "3 a third outcome, named here to make a long line"
	if long := tool.HelpText(LongHelp); !strings.HasSuffix(long, "Exit status: 0 success, 1 fatal error, 2 invalid\n"+
		"command line, 3 a third outcome, named here to make a long line.\n") {
		t.Errorf("--help does not end with the exit statuses, the tool's own last:\n%s", long)
	}
	if man := tool.HelpText(ManHelp); !strings.Contains(man, ".SH EXIT STATUS\n0 success, 1 fatal error, 2 invalid command line, "+
		"3 a third outcome, named here to make a long line.\n.SH") {
		t.Errorf("--man lacks the exit statuses:\n%s", man)
	}
}

func TestWrap(t *testing.T) {
	tests := []struct {
		text  string
		width int
		want  string
	}{
		{"", 10, "\n"},
		{"one", 10, "one\n"},
		{"one two three", 7, "one two\nthree\n"},
		{"one  two\nthree", 9, "one two\nthree\n"},
		{"a verylongword b", 4, "a\nverylongword\nb\n"},
		{"abcd efgh", 9, "abcd efgh\n"},
		{"abcd efghi", 9, "abcd\nefghi\n"},
	}
	for _, tt := range tests {
		if got := wrap(tt.text, tt.width); got != tt.want {
			t.Errorf("wrap(%q, %d) = %q, want %q", tt.text, tt.width, got, tt.want)
		}
	}
}

func TestStart(t *testing.T) {
	tool := toyTool()
	defer func(v string) { Version = v }(Version)
	Version = "9.8.7"
	banner := "toy: Source Profiler for Linux, version 9.8.7\n"
	tests := []struct {
		name           string
		args           []string
		status         int
		done           bool
		stdout, stderr string
	}{
		{"run", words("/nologo prog"), 0, false, "", ""},
		{"banner", words("prog"), 0, false, "", banner},
		{"usage", words("/nologo /?"), 0, true, tool.HelpText(UsageHelp), ""},
		{"long help", words("--help"), 0, true, tool.HelpText(LongHelp), banner},
		{"bad option", words("/nologo /bogus"), 2, true, "",
			"toy: fatal error PRF1102: bogus: invalid option\ntoy: hint: try 'toy --help' for the options\n"},
		{"warnings after the banner", words("/sn /sc prog"), 0, false, "",
			banner + "toy: warning PRF4101: option SC overrides an earlier option\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var warnings []*prf.Diagnostic
			c, err := tool.parse(tt.args, "", fakeFS(nil), func(d *prf.Diagnostic) { warnings = append(warnings, d) })
			var out, errb bytes.Buffer
			status, done := tool.Start(&out, &errb, c, warnings, err)
			if status != tt.status || done != tt.done || out.String() != tt.stdout || errb.String() != tt.stderr {
				t.Errorf("Start = %d %v, stdout %q, stderr %q; want %d %v, %q, %q",
					status, done, out.String(), errb.String(), tt.status, tt.done, tt.stdout, tt.stderr)
			}
		})
	}
}

// TestManyOptions parses command lines of 100,000 options and of a program
// with 100,000 arguments, checking that every one is taken. (How fast is
// measured by BenchmarkParse, not here.)
func TestManyOptions(t *testing.T) {
	const n = 100000
	args := make([]string, 0, 2*n+1)
	for i := range n {
		args = append(args, "/exc", "f"+strconv.Itoa(i))
	}
	c, _, err := parseToy(t, toyTool(), append(args, "prog"), "", nil)
	if err != nil || len(c.Options.List) != n || c.Options.List[n-1] != "-f"+strconv.Itoa(n-1) {
		t.Fatalf("%d /exc options: %v, %d taken", n, err, len(c.Options.List))
	}
	c, _, err = parseToy(t, programTool(), append([]string{"prog"}, args...), "", nil)
	if err != nil || len(c.Args) != 2*n {
		t.Fatalf("program with %d arguments: %v, %d taken", 2*n, err, len(c.Args))
	}
}

// BenchmarkParse measures a command line of 100,000 options: the parse is
// linear in the number of tokens.
func BenchmarkParse(b *testing.B) {
	args := make([]string, 0, 200001)
	for i := range 100000 {
		args = append(args, "/exc", "f"+strconv.Itoa(i))
	}
	args = append(args, "prog")
	tool := toyTool()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.parse(args, "", fakeFS(nil), nil); err != nil {
			b.Fatal(err)
		}
	}
}

func TestValidate(t *testing.T) {
	if err := toyTool().Validate(); err != nil {
		t.Fatalf("the test tool: %v", err)
	}
	for _, tt := range []struct {
		name string
		edit func(*Tool[toy])
		want string
	}{
		{"no Set", func(tl *Tool[toy]) { tl.Options[2].Set = nil }, "toy option FC has no Set"},
		{"no help", func(tl *Tool[toy]) { tl.Options[2].Help = "" }, "toy option FC has no help"},
		{"shadowed", func(tl *Tool[toy]) { tl.Options[3].Name = "FC" }, "toy option FC is taken by an earlier option"},
		{"lower case", func(tl *Tool[toy]) { tl.Options[2].Name = "fc" }, "toy option fc: minimum length 2, or not upper case"},
		{"long twice", func(tl *Tool[toy]) { tl.Options[3].Long = "counting" }, "toy long option --counting given twice"},
		{"nameless", func(tl *Tool[toy]) { tl.Options[3].Name, tl.Options[3].Long = "", "" }, "toy option 3 has neither a name nor a long form"},
	} {
		tl := toyTool()
		tt.edit(tl)
		if err := tl.Validate(); err == nil || err.Error() != tt.want {
			t.Errorf("%s: Validate = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestLongPrefixes takes every prefix of every long name of the test tool:
// it names its option when it is the name whole or no other long name
// begins with it, another option when it is that one's name whole
// (--exclude of --exclude-all), and is otherwise ambiguous, naming the
// option among the others.
func TestLongPrefixes(t *testing.T) {
	tool := toyTool()
	for i := range tool.Options {
		o := &tool.Options[i]
		key, fixed, isFixed := strings.Cut(o.Long, "=")
		for n := 1; n <= len(key); n++ {
			tok := "--" + key[:n]
			if isFixed {
				tok += "=" + fixed
			}
			others := 0
			for j := range tool.Options {
				k, f, _ := strings.Cut(tool.Options[j].Long, "=")
				if j != i && strings.HasPrefix(k, key[:n]) && (f == "" || f == fixed) {
					others++
				}
			}
			got, _, _, err := tool.matchLong(tok)
			whole := tool.lookupLong(key[:n]) // another name typed whole
			switch {
			case n < len(key) && whole != nil:
				if got != whole || err != nil {
					t.Errorf("%s: %v, %v; want --%s", tok, got, err, whole.Long)
				}
			case n == len(key) || others == 0:
				if got != o || err != nil {
					t.Errorf("%s: %v, %v; want --%s", tok, got, err, o.Long)
				}
			case err == nil || !strings.Contains(err.Error(), "ambiguous option") || !strings.Contains(err.Error(), "--"+o.Long):
				t.Errorf("%s: %v, want ambiguous, naming --%s", tok, err, o.Long)
			}
		}
	}
}
