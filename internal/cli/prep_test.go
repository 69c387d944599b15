package cli

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sourceprofiler/sprof/datafile"
)

// prepWant returns the options of "prep prog" changed by edit.
func prepWant(edit func(o *PrepOptions)) *PrepOptions {
	o := &PrepOptions{Method: datafile.FuncTiming, Calibrate: -1, Programs: []string{"prog"}}
	if edit != nil {
		edit(o)
	}
	return o
}

func TestParsePrepOptions(t *testing.T) {
	method := func(m datafile.Method) func(*PrepOptions) {
		return func(o *PrepOptions) { o.Method = m }
	}
	specs := func(s ...Spec) func(*PrepOptions) {
		return func(o *PrepOptions) { o.Specs = s }
	}
	tests := []struct {
		name string
		args []string
		env  string
		want *PrepOptions
	}{
		{"default", words("prog"), "", prepWant(nil)},
		{"FC", words("/fc prog"), "", prepWant(method(datafile.FuncCounting))},
		{"FC dash upper", words("-FC prog"), "", prepWant(method(datafile.FuncCounting))},
		{"FC long", words("--function-counting prog"), "", prepWant(method(datafile.FuncCounting))},
		{"FS", words("/Fs prog"), "", prepWant(method(datafile.FuncSampling))},
		{"FS long", words("--function-sampling prog"), "", prepWant(method(datafile.FuncSampling))},
		{"FT after FC", words("/fc /FT prog"), "", prepWant(nil)},
		{"FT long after FC", words("/fc --function-timing prog"), "", prepWant(nil)},
		{"FV", words("-fv prog"), "", prepWant(method(datafile.FuncCoverage))},
		{"FV long", words("--function-coverage prog"), "", prepWant(method(datafile.FuncCoverage))},
		{"LC", words("/LC prog"), "", prepWant(method(datafile.LineCounting))},
		{"LC long", words("--line-counting prog"), "", prepWant(method(datafile.LineCounting))},
		{"LV", words("/lv prog"), "", prepWant(method(datafile.LineCoverage))},
		{"LV long", words("--line-coverage prog"), "", prepWant(method(datafile.LineCoverage))},
		{"types1 FC LC", words("/nologo /om /fc /lc prog"), "", prepWant(func(o *PrepOptions) {
			o.NoLogo, o.ModifiedImage, o.Method = true, true, datafile.LineCounting
		})},
		{"types2 LC FC", words("/lc /fc prog"), "", prepWant(method(datafile.FuncCounting))},
		{"types3 FT FC", words("/ft /fc prog"), "", prepWant(method(datafile.FuncCounting))},
		{"types4 FC FV", words("/fc /fv prog"), "", prepWant(method(datafile.FuncCoverage))},
		{"long then short type", words("--line-counting /fv prog"), "", prepWant(method(datafile.FuncCoverage))},

		{"EXC", words("/exc fcount.c(1-2) prog"), "", prepWant(specs(Spec{Exclude, "fcount.c(1-2)"}))},
		{"EXC upper dash", words("-EXC _fib prog"), "", prepWant(specs(Spec{Exclude, "_fib"}))},
		{"EXC long", words("--exclude=std::* prog"), "", prepWant(specs(Spec{Exclude, "std::*"}))},
		{"EXC long next token", words("--exclude libc.so prog"), "", prepWant(specs(Spec{Exclude, "libc.so"}))},
		{"EXCALL", words("/excall prog"), "", prepWant(specs(Spec{Op: ExcludeAll}))},
		{"EXCALL abbreviated", words("/ExcA prog"), "", prepWant(specs(Spec{Op: ExcludeAll}))},
		{"EXCALL long", words("--exclude-all prog"), "", prepWant(specs(Spec{Op: ExcludeAll}))},
		{"INC commas kept", words("/inc lcount.c(21-22,35-37,13-13) prog"), "",
			prepWant(specs(Spec{Include, "lcount.c(21-22,35-37,13-13)"}))},
		{"INC long", words("--include=a,b prog"), "", prepWant(specs(Spec{Include, "a,b"}))},
		{"INC value with equals", words("--include=x=y prog"), "", prepWant(specs(Spec{Include, "x=y"}))},
		{"selection order", words("/excall /inc lcount.c(0-0) --exclude lcount.c(21-28) --include=b /exca prog"), "",
			prepWant(specs(Spec{Op: ExcludeAll}, Spec{Include, "lcount.c(0-0)"}, Spec{Exclude, "lcount.c(21-28)"},
				Spec{Include, "b"}, Spec{Op: ExcludeAll}))},
		{"env selection first", words("/inc b prog"), "/exc a",
			prepWant(specs(Spec{Exclude, "a"}, Spec{Include, "b"}))},

		{"SF", words("/sf _work prog"), "", prepWant(func(o *PrepOptions) { o.Start = "_work" })},
		{"SF long", words("--start=main prog"), "", prepWant(func(o *PrepOptions) { o.Start = "main" })},
		{"SF long next token", words("--start main prog"), "", prepWant(func(o *PrepOptions) { o.Start = "main" })},
		{"SF long dash value", words("--start=-x prog"), "", prepWant(func(o *PrepOptions) { o.Start = "-x" })},
		{"AT", words("/at prog"), "", prepWant(func(o *PrepOptions) { o.Attribution = true })},
		{"AT long", words("--attribution prog"), "", prepWant(func(o *PrepOptions) { o.Attribution = true })},
		{"types5 AT AT", words("/at /AT prog"), "", prepWant(func(o *PrepOptions) { o.Attribution = true })},
		{"STACK", words("/stack 2 prog"), "", prepWant(func(o *PrepOptions) { o.Stack = 2 })},
		{"STACK ST", words("/ST 16 prog"), "", prepWant(func(o *PrepOptions) { o.Stack = 16 })},
		{"STACK STA", words("-sta 0 prog"), "", prepWant(nil)},
		{"STACK leading zero", words("/stack 010 prog"), "", prepWant(func(o *PrepOptions) { o.Stack = 10 })},
		{"STACK long", words("--stack=256 prog"), "", prepWant(func(o *PrepOptions) { o.Stack = 256 })},
		{"STACK long next token", words("--stack 1000 prog"), "", prepWant(func(o *PrepOptions) { o.Stack = 1000 })},
		{"types6 STACK STACK", words("/stack 2 /stack 3 prog"), "", prepWant(func(o *PrepOptions) { o.Stack = 3 })},
		{"STACK largest", words("/stack 2147483647 prog"), "", prepWant(func(o *PrepOptions) { o.Stack = 2147483647 })},
		{"CB", words("/cb 1 prog"), "", prepWant(func(o *PrepOptions) { o.Calibrate = 1 })},
		{"CB zero", words("/CB 0 prog"), "", prepWant(func(o *PrepOptions) { o.Calibrate = 0 })},
		{"CB long", words("--calibrate=09 prog"), "", prepWant(func(o *PrepOptions) { o.Calibrate = 9 })},
		{"types10 CB CB", words("/cb 1 /cb 2 prog"), "", prepWant(func(o *PrepOptions) { o.Calibrate = 2 })},

		{"OI", words("/oi out prog"), "", prepWant(func(o *PrepOptions) { o.OutputPBI = "out" })},
		{"OI long", words("--output-pbi=out.pbi prog"), "", prepWant(func(o *PrepOptions) { o.OutputPBI = "out.pbi" })},
		{"OI root directory file", words("/oi /tmp prog"), "", prepWant(func(o *PrepOptions) { o.OutputPBI = "/tmp" })},
		{"OI path", words("/oi /tmp/x.pbi prog"), "", prepWant(func(o *PrepOptions) { o.OutputPBI = "/tmp/x.pbi" })},
		{"types8 OI OI", words("/oi a /oi b prog"), "", prepWant(func(o *PrepOptions) { o.OutputPBI = "b" })},
		{"OT", words("/ot a prog"), "", prepWant(func(o *PrepOptions) { o.OutputPBT = "a" })},
		{"OT long", words("--output-pbt a prog"), "", prepWant(func(o *PrepOptions) { o.OutputPBT = "a" })},
		{"types9 OT OT", words("/ot a /ot b prog"), "", prepWant(func(o *PrepOptions) { o.OutputPBT = "b" })},
		{"OM", words("/om prog"), "", prepWant(func(o *PrepOptions) { o.ModifiedImage = true })},
		{"types7 OM OM OM", words("/om /om /OM prog"), "", prepWant(func(o *PrepOptions) { o.ModifiedImage = true })},
		{"OM long", words("--modified-image prog"), "", prepWant(func(o *PrepOptions) { o.ModifiedImage = true })},
		{"NOLOGO", words("/nologo prog"), "", prepWant(func(o *PrepOptions) { o.NoLogo = true })},
		{"NOLOGO NOL", words("/nol prog"), "", prepWant(func(o *PrepOptions) { o.NoLogo = true })},
		{"NOLOGO dash upper", words("-NOLOGO prog"), "", prepWant(func(o *PrepOptions) { o.NoLogo = true })},
		{"NOLOGO long", words("--nologo prog"), "", prepWant(func(o *PrepOptions) { o.NoLogo = true })},
		{"NOLOGO env", words("/om /fc prog"), "/nologo", prepWant(func(o *PrepOptions) {
			o.NoLogo, o.ModifiedImage, o.Method = true, true, datafile.FuncCounting
		})},
		{"env split on white space", words("prog"), " \t/fc\n /nol  ", prepWant(func(o *PrepOptions) {
			o.NoLogo, o.Method = true, datafile.FuncCounting
		})},
		{"command line overrides env", words("/lv prog"), "/fc", prepWant(method(datafile.LineCoverage))},

		{"M", words("/m fcount"), "", prepWant(func(o *PrepOptions) { o.Merge, o.Programs = "fcount", nil })},
		{"M long", words("--merge=fcount"), "", prepWant(func(o *PrepOptions) { o.Merge, o.Programs = "fcount", nil })},
		{"M and FC", words("/m fcount /fc"), "", prepWant(func(o *PrepOptions) {
			o.Merge, o.Programs, o.Method = "fcount", nil, datafile.FuncCounting
		})},
		{"IT IO OT", words("/it fcount.pbt /io fcount.pbo /ot withext.pbt"), "", prepWant(func(o *PrepOptions) {
			o.Programs, o.InputPBT, o.InputPBOs, o.OutputPBT = nil, "fcount.pbt", []string{"fcount.pbo"}, "withext.pbt"
		})},
		{"IT IO OT long", words("--input-pbt=a --input-pbo b --input-pbo=c,d --output-pbt=e"), "", prepWant(func(o *PrepOptions) {
			o.Programs, o.InputPBT, o.InputPBOs, o.OutputPBT = nil, "a", []string{"b", "c,d"}, "e"
		})},
		{"IO 8 times", words("/it f /io 1 /io 2 /io 3 /io 4 /io 5 /io 6 /io 7 /io 8 /ot eight"), "", prepWant(func(o *PrepOptions) {
			o.Programs, o.InputPBT, o.OutputPBT = nil, "f", "eight"
			o.InputPBOs = []string{"1", "2", "3", "4", "5", "6", "7", "8"}
		})},

		{"path program", words("/fc /usr/bin/ls"), "", prepWant(func(o *PrepOptions) {
			o.Method, o.Programs = datafile.FuncCounting, []string{"/usr/bin/ls"}
		})},
		{"relative programs", words("./prog lib/libfoo.so libbar.so"), "", prepWant(func(o *PrepOptions) {
			o.Programs = []string{"./prog", "lib/libfoo.so", "libbar.so"}
		})},
		{"8 modules", words("a b c d e f g h"), "", prepWant(func(o *PrepOptions) {
			o.Programs = words("a b c d e f g h")
		})},
		{"same module twice", words("/fc prog prog"), "", prepWant(func(o *PrepOptions) {
			o.Method, o.Programs = datafile.FuncCounting, []string{"prog", "prog"}
		})},
		{"options after names", words("prog /fc"), "", prepWant(method(datafile.FuncCounting))},
		{"end of options", words("/fc -- -prog /lc @x"), "", prepWant(func(o *PrepOptions) {
			o.Method, o.Programs = datafile.FuncCounting, []string{"-prog", "/lc", "@x"}
		})},
		{"empty program name", []string{""}, "", prepWant(func(o *PrepOptions) { o.Programs = []string{""} })},
		// prep-missing-arg-ot: a trailing /OT is taken as a module name.
		{"trailing OT", words("/nologo /fc fcount /ot"), "", prepWant(func(o *PrepOptions) {
			o.NoLogo, o.Method, o.Programs = true, datafile.FuncCounting, []string{"fcount", "/ot"}
		})},

		{"help q", words("/?"), "", &PrepOptions{Method: datafile.FuncTiming, Calibrate: -1, Help: UsageHelp}},
		{"help dash q", words("-?"), "", &PrepOptions{Method: datafile.FuncTiming, Calibrate: -1, Help: UsageHelp}},
		{"help H", words("/h"), "", &PrepOptions{Method: datafile.FuncTiming, Calibrate: -1, Help: UsageHelp}},
		{"help HELP", words("/HELP"), "", &PrepOptions{Method: datafile.FuncTiming, Calibrate: -1, Help: UsageHelp}},
		{"help HEL", words("/hel prog"), "", prepWant(func(o *PrepOptions) { o.Help = UsageHelp })},
		{"help nologo", words("/nologo /?"), "", &PrepOptions{Method: datafile.FuncTiming, Calibrate: -1, NoLogo: true, Help: UsageHelp}},
		{"long help", words("--help"), "", &PrepOptions{Method: datafile.FuncTiming, Calibrate: -1, Help: LongHelp}},
		{"usage after long help", words("--help /?"), "", &PrepOptions{Method: datafile.FuncTiming, Calibrate: -1, Help: UsageHelp}},
		{"no arguments", nil, "", &PrepOptions{Method: datafile.FuncTiming, Calibrate: -1, Help: UsageHelp}},
		{"no arguments env nologo", nil, "/nologo", &PrepOptions{Method: datafile.FuncTiming, Calibrate: -1, NoLogo: true, Help: UsageHelp}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, warnings, err := parseAny(t, Prep, tt.args, tt.env, nil)
			if err != nil {
				t.Fatalf("prep %q: %v", tt.args, err)
			}
			if len(warnings) > 0 {
				t.Errorf("prep %q: unexpected warnings %q", tt.args, warnings)
			}
			if diff := cmp.Diff(tt.want, opts, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("prep %q: options (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestPrepPhase(t *testing.T) {
	tests := []struct {
		args    string
		phaseII bool
	}{
		{"/fc prog", false},
		{"/m prog", true},
		{"/it a /ot b", true},
		{"/it a /io b /ot c", true},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			o, err := ParsePrep(words(tt.args), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := o.PhaseII(); got != tt.phaseII {
				t.Errorf("prep %s: PhaseII() = %v, want %v", tt.args, got, tt.phaseII)
			}
		})
	}
}

// TestPrepStartOverride is sf/name6-prep: the second /SF wins with PRF4101.
func TestPrepStartOverride(t *testing.T) {
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
			opts, warnings, err := parseAny(t, Prep, words(tt.args), tt.env, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := opts.(*PrepOptions).Start; got != tt.start {
				t.Errorf("Start = %q, want %q", got, tt.start)
			}
			if diff := cmp.Diff(tt.warnings, warnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPrepManyIO checks that /IO and --input-pbo count together.
func TestPrepManyIO(t *testing.T) {
	args := "/it f" + strings.Repeat(" /io x", 4) + strings.Repeat(" --input-pbo=y", 5) + " /ot o"
	_, err := ParsePrep(words(args), nil, nil)
	want := "prep: fatal error PRF1105: --input-pbo option specified more than 8 times"
	if got := fatal(Prep, err); got != want {
		t.Errorf("prep %s:\n got %s\nwant %s", args, got, want)
	}
}
