package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/cli"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
	"github.com/sourceprofiler/sprof/prep"
)

// parse parses a PREP command line with env as the variable PREP.
func parse(t *testing.T, args []string, env string) (*cli.Command[options], []string, error) {
	t.Helper()
	var warnings []string
	cmd, err := tool.Parse(args, func(string) string { return env }, func(d *prf.Diagnostic) {
		warnings = append(warnings, prf.Line("prep", d))
	})
	if err == nil {
		err = checkInputs(cmd)
	}
	return cmd, warnings, err
}

// want returns the command of "prep prog" changed by edit.
func want(edit func(c *cli.Command[options], o *options)) *cli.Command[options] {
	c := &cli.Command[options]{Options: tool.Defaults(), Names: []string{"prog"}}
	if edit != nil {
		edit(c, &c.Options)
	}
	return c
}

// compare is how two parsed commands are compared: the options' unexported
// fields included, nil and empty slices alike, Empty left out.
var compare = []cmp.Option{
	cmp.AllowUnexported(options{}), cmpopts.EquateEmpty(),
	cmpopts.IgnoreFields(cli.Command[options]{}, "Empty"),
}

func TestCommandLine(t *testing.T) {
	method := func(m datafile.Method) func(*cli.Command[options], *options) {
		return func(_ *cli.Command[options], o *options) { o.plan.Method = m }
	}
	specs := func(s ...prep.Spec) func(*cli.Command[options], *options) {
		return func(_ *cli.Command[options], o *options) { o.plan.Specs = s }
	}
	usage := func(edit func(c *cli.Command[options], o *options)) *cli.Command[options] {
		c := want(edit)
		c.Names, c.Help = nil, cli.UsageHelp
		return c
	}
	noInput := func(edit func(c *cli.Command[options], o *options)) *cli.Command[options] {
		c := usage(edit)
		c.Help = cli.NoInputHelp
		return c
	}
	tests := []struct {
		name string
		args []string
		env  string
		want *cli.Command[options]
	}{
		{"default is function timing", words("prog"), "", want(nil)},
		{"FC", words("/fc prog"), "", want(method(datafile.FuncCounting))},
		{"FC dash upper", words("-FC prog"), "", want(method(datafile.FuncCounting))},
		{"FC long", words("--function-counting prog"), "", want(method(datafile.FuncCounting))},
		{"FS", words("/Fs prog"), "", want(method(datafile.FuncSampling))},
		{"FS long", words("--function-sampling prog"), "", want(method(datafile.FuncSampling))},
		{"FT after FC", words("/fc /FT prog"), "", want(nil)},
		{"FT long after FC", words("/fc --function-timing prog"), "", want(nil)},
		{"FV", words("-fv prog"), "", want(method(datafile.FuncCoverage))},
		{"FV long", words("--function-coverage prog"), "", want(method(datafile.FuncCoverage))},
		{"LC", words("/LC prog"), "", want(method(datafile.LineCounting))},
		{"LC long", words("--line-counting prog"), "", want(method(datafile.LineCounting))},
		{"LV", words("/lv prog"), "", want(method(datafile.LineCoverage))},
		{"LV long", words("--line-coverage prog"), "", want(method(datafile.LineCoverage))},
		{"types1 FC LC", words("/nologo /om /fc /lc prog"), "", want(func(c *cli.Command[options], o *options) {
			c.NoLogo, o.plan.Method = true, datafile.LineCounting
		})},
		{"types2 LC FC", words("/lc /fc prog"), "", want(method(datafile.FuncCounting))},
		{"types3 FT FC", words("/ft /fc prog"), "", want(method(datafile.FuncCounting))},
		{"types4 FC FV", words("/fc /fv prog"), "", want(method(datafile.FuncCoverage))},
		{"long then short type", words("--line-counting /fv prog"), "", want(method(datafile.FuncCoverage))},

		{"EXC", words("/exc fcount.c(1-2) prog"), "", want(specs(prep.Spec{Op: prep.Exclude, Text: "fcount.c(1-2)"}))},
		{"EXC upper dash", words("-EXC _fib prog"), "", want(specs(prep.Spec{Op: prep.Exclude, Text: "_fib"}))},
		{"EXC long", words("--exclude=std::* prog"), "", want(specs(prep.Spec{Op: prep.Exclude, Text: "std::*"}))},
		{"EXC long next token", words("--exclude libc.so prog"), "", want(specs(prep.Spec{Op: prep.Exclude, Text: "libc.so"}))},
		{"EXCALL", words("/excall prog"), "", want(specs(prep.Spec{Op: prep.ExcludeAll}))},
		{"EXCALL abbreviated", words("/ExcA prog"), "", want(specs(prep.Spec{Op: prep.ExcludeAll}))},
		{"EXCALL long", words("--exclude-all prog"), "", want(specs(prep.Spec{Op: prep.ExcludeAll}))},
		{"INC commas kept", words("/inc lcount.c(21-22,35-37,13-13) prog"), "",
			want(specs(prep.Spec{Op: prep.Include, Text: "lcount.c(21-22,35-37,13-13)"}))},
		{"INC long", words("--include=a,b prog"), "", want(specs(prep.Spec{Op: prep.Include, Text: "a,b"}))},
		{"selection order", words("/excall /inc lcount.c(0-0) --exclude lcount.c(21-28) --include=b /exca prog"), "",
			want(specs(prep.Spec{Op: prep.ExcludeAll}, prep.Spec{Op: prep.Include, Text: "lcount.c(0-0)"},
				prep.Spec{Op: prep.Exclude, Text: "lcount.c(21-28)"}, prep.Spec{Op: prep.Include, Text: "b"}, prep.Spec{Op: prep.ExcludeAll}))},
		{"env selection first", words("/inc b prog"), "/exc a",
			want(specs(prep.Spec{Op: prep.Exclude, Text: "a"}, prep.Spec{Op: prep.Include, Text: "b"}))},

		{"SF", words("/sf _work prog"), "", want(func(_ *cli.Command[options], o *options) { o.plan.Start = "_work" })},
		{"SF long", words("--start=main prog"), "", want(func(_ *cli.Command[options], o *options) { o.plan.Start = "main" })},
		{"SF long next token", words("--start main prog"), "", want(func(_ *cli.Command[options], o *options) { o.plan.Start = "main" })},
		{"AT", words("/at prog"), "", want(func(_ *cli.Command[options], o *options) { o.plan.Attribution = true })},
		{"AT long", words("--attribution prog"), "", want(func(_ *cli.Command[options], o *options) { o.plan.Attribution = true })},
		{"types5 AT AT", words("/at /AT prog"), "", want(func(_ *cli.Command[options], o *options) { o.plan.Attribution = true })},
		{"STACK", words("/stack 2 prog"), "", want(func(_ *cli.Command[options], o *options) { o.plan.Stack = 2 })},
		{"STACK ST", words("/ST 16 prog"), "", want(func(_ *cli.Command[options], o *options) { o.plan.Stack = 16 })},
		{"STACK long", words("--stack=256 prog"), "", want(func(_ *cli.Command[options], o *options) { o.plan.Stack = 256 })},
		{"types6 STACK STACK", words("/stack 2 /stack 3 prog"), "", want(func(_ *cli.Command[options], o *options) { o.plan.Stack = 3 })},
		{"CB", words("/cb 1 prog"), "", want(func(_ *cli.Command[options], o *options) { o.plan.Calibration = 1 })},
		{"CB zero", words("/CB 0 prog"), "", want(func(_ *cli.Command[options], o *options) { o.plan.Calibration = 0 })},
		{"CB long", words("--calibrate=09 prog"), "", want(func(_ *cli.Command[options], o *options) { o.plan.Calibration = 9 })},
		{"types10 CB CB", words("/cb 1 /cb 2 prog"), "", want(func(_ *cli.Command[options], o *options) { o.plan.Calibration = 2 })},

		{"OI", words("/oi out prog"), "", want(func(_ *cli.Command[options], o *options) { o.outputPBI = "out" })},
		{"OI long", words("--output-pbi=out.pbi prog"), "", want(func(_ *cli.Command[options], o *options) { o.outputPBI = "out.pbi" })},
		{"OI root directory file", words("/oi /tmp prog"), "", want(func(_ *cli.Command[options], o *options) { o.outputPBI = "/tmp" })},
		{"types8 OI OI", words("/oi a /oi b prog"), "", want(func(_ *cli.Command[options], o *options) { o.outputPBI = "b" })},
		{"OT", words("/ot a prog"), "", want(func(_ *cli.Command[options], o *options) { o.outputPBT = "a" })},
		{"types9 OT OT", words("/ot a /ot b prog"), "", want(func(_ *cli.Command[options], o *options) { o.outputPBT = "b" })},
		{"types7 OM OM OM", words("/om /om /OM prog"), "", want(nil)},
		{"OM long", words("--modified-image prog"), "", want(nil)},
		{"NOLOGO", words("/nologo prog"), "", want(func(c *cli.Command[options], _ *options) { c.NoLogo = true })},
		{"NOLOGO NOL", words("/nol prog"), "", want(func(c *cli.Command[options], _ *options) { c.NoLogo = true })},
		{"NOLOGO long", words("--nologo prog"), "", want(func(c *cli.Command[options], _ *options) { c.NoLogo = true })},
		{"NOLOGO env", words("/om /fc prog"), "/nologo", want(func(c *cli.Command[options], o *options) {
			c.NoLogo, o.plan.Method = true, datafile.FuncCounting
		})},
		{"command line overrides env", words("/lv prog"), "/fc", want(method(datafile.LineCoverage))},

		{"M", words("/m fcount"), "", want(func(c *cli.Command[options], o *options) { c.Names, o.merge = nil, "fcount" })},
		{"M long", words("--merge=fcount"), "", want(func(c *cli.Command[options], o *options) { c.Names, o.merge = nil, "fcount" })},
		{"M and FC", words("/m fcount /fc"), "", want(func(c *cli.Command[options], o *options) {
			c.Names, o.merge, o.plan.Method = nil, "fcount", datafile.FuncCounting
		})},
		{"IT IO OT", words("/it fcount.pbt /io fcount.pbo /ot withext.pbt"), "", want(func(c *cli.Command[options], o *options) {
			c.Names, o.inputPBT, o.inputPBOs, o.outputPBT = nil, "fcount.pbt", []string{"fcount.pbo"}, "withext.pbt"
		})},
		{"IT IO OT long", words("--input-pbt=a --input-pbo b --input-pbo=c,d --output-pbt=e"), "", want(func(c *cli.Command[options], o *options) {
			c.Names, o.inputPBT, o.inputPBOs, o.outputPBT = nil, "a", []string{"b", "c,d"}, "e"
		})},
		{"IO 8 times", words("/it f /io 1 /io 2 /io 3 /io 4 /io 5 /io 6 /io 7 /io 8 /ot eight"), "", want(func(c *cli.Command[options], o *options) {
			c.Names, o.inputPBT, o.outputPBT = nil, "f", "eight"
			o.inputPBOs = words("1 2 3 4 5 6 7 8")
		})},

		{"path program", words("/fc /usr/bin/ls"), "", want(func(c *cli.Command[options], o *options) {
			c.Names, o.plan.Method = []string{"/usr/bin/ls"}, datafile.FuncCounting
		})},
		{"8 modules", words("a b c d e f g h"), "", want(func(c *cli.Command[options], _ *options) { c.Names = words("a b c d e f g h") })},
		// prep-missing-arg-ot: a trailing /OT is taken as a module name.
		{"trailing OT", words("/nologo /fc fcount /ot"), "", want(func(c *cli.Command[options], o *options) {
			c.NoLogo, c.Names, o.plan.Method = true, []string{"fcount", "/ot"}, datafile.FuncCounting
		})},

		{"help q", words("/?"), "", usage(nil)},
		{"help dash q", words("-?"), "", usage(nil)},
		{"help HELP", words("/HELP"), "", usage(nil)},
		{"help HEL with a program", words("/hel prog"), "", want(func(c *cli.Command[options], _ *options) { c.Help = cli.UsageHelp })},
		{"long help", words("--help"), "", want(func(c *cli.Command[options], _ *options) { c.Names, c.Help = nil, cli.LongHelp })},
		{"no arguments", nil, "", noInput(nil)},
		{"no arguments, env nologo", nil, "/nologo", noInput(func(c *cli.Command[options], _ *options) { c.NoLogo = true })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warnings, err := parse(t, tt.args, tt.env)
			if err != nil {
				t.Fatalf("prep %q: %v", tt.args, err)
			}
			if len(warnings) > 0 {
				t.Errorf("prep %q: unexpected warnings %q", tt.args, warnings)
			}
			if diff := cmp.Diff(tt.want, got, compare...); diff != "" {
				t.Errorf("prep %q (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestStartOverride is sf/name6-prep: the second /SF wins with PRF4101.
func TestStartOverride(t *testing.T) {
	tests := []struct {
		args, env string
		start     string
		warnings  []string
	}{
		{"/nologo /om /fc /sf _work /sf _inner sf", "", "_inner",
			[]string{"prep: warning PRF4101: option SF overrides an earlier option"}},
		{"/sf a --start=b /SF c sf", "", "c", []string{
			"prep: warning PRF4101: option --start overrides an earlier option",
			"prep: warning PRF4101: option SF overrides an earlier option",
		}},
		{"/sf b sf", "/sf a", "b", []string{"prep: warning PRF4101: option SF overrides an earlier option"}},
		{"/sf a sf", "", "a", nil},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			cmd, warnings, err := parse(t, words(tt.args), tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if got := cmd.Options.plan.Start; got != tt.start {
				t.Errorf("start %q, want %q", got, tt.start)
			}
			if diff := cmp.Diff(tt.warnings, warnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
	if got := testOriginalLine(t, "sf/name6-prep.out"); got != "prep: warning PRF4101: option SF overrides an earlier option" {
		t.Errorf("the original printed %q", got)
	}
}

// FuzzCommandLine parses any PREP command line: it never panics, every
// error is a usage diagnostic, and a command that runs has a program or a
// merge, at most 8 modules and 8 .pbo files.
func FuzzCommandLine(f *testing.F) {
	for _, tt := range diagnostics {
		f.Add(joinArgs(tt.Args), tt.Env)
	}
	f.Add("/fc\n/inc\na(1-2)\n--exclude=b\nprog", "")
	f.Add("/m\nx\n/io\ny", "/nologo")
	f.Fuzz(func(t *testing.T, line, env string) {
		args := splitArgs(line)
		cmd := testutil.ParseFuzzed(t, &tool, line, env)
		if cmd == nil {
			return
		}
		if err := checkInputs(cmd); err != nil {
			if !prf.IsUsage(err) {
				t.Fatalf("args %q: not a usage diagnostic: %v", args, err)
			}
			return
		}
		o := &cmd.Options
		if cmd.Help != cli.NoHelp {
			return
		}
		if !o.plan.Method.Valid() || len(cmd.Names) > 8 || len(o.inputPBOs) > 8 ||
			(!o.phaseII() && len(cmd.Names) == 0) || o.plan.Stack < 0 || o.plan.Calibration < -1 {
			t.Fatalf("args %q: invalid options %+v", args, o)
		}
	})
}
