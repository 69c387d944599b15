package main

import (
	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/cli"
	"github.com/sourceprofiler/sprof/prep"
)

// options is PREP's command line.
type options struct {
	// plan holds the options of phase I: the profile type, the selections
	// (the command line's, without the defaults), /SF, /AT, /STACK, /CB.
	plan prep.Options
	// Phase II: /M, /IT, /IO (in order), and the outputs /OI and /OT.
	merge     string
	inputPBT  string
	inputPBOs []string
	outputPBI string
	outputPBT string
}

// phaseII reports whether the command line merges runs (/M, /IT or /IO)
// rather than preparing programs (original.md §3.1).
func (o *options) phaseII() bool {
	return o.merge != "" || o.inputPBT != "" || len(o.inputPBOs) > 0
}

// The --help sections.
const (
	secType    = "Profile type (the last one given wins; the default is function timing):"
	secSelect  = "Selection (applied left to right, after profiler.ini and tools.ini):"
	secCollect = "Collection:"
	secFiles   = "Files (the default extension is added to a name without one):"
)

// method returns the setter of a profile type switch.
func method(m datafile.Method) func(*options, cli.Value) {
	return func(o *options, _ cli.Value) { o.plan.Method = m }
}

// selection returns the setter of /INC, /EXC or /EXCALL.
func selection(op prep.SpecOp) func(*options, cli.Value) {
	return func(o *options, v cli.Value) {
		o.plan.Specs = append(o.plan.Specs, prep.Spec{Op: op, Text: v.Text})
	}
}

// tool is PREP's command line: its option table in the original's order
// (original.md §2.3, §3.3), plus /FS as function sampling
// (docs/design/linux.md) and the long-only --help.
var tool = cli.Tool[options]{
	Name: "prep",
	Env:  "PREP",
	Defaults: func() options {
		return options{plan: prep.Options{Method: datafile.FuncTiming, Calibration: -1}}
	},
	MaxNames: prep.MaxPrograms,
	Options: []cli.Option[options]{
		{Name: "EXC", Min: 3, Long: "exclude", Arg: cli.Text, Set: selection(prep.Exclude),
			Usage:   "Exclude function/source/obj/lib from profile",
			Section: secSelect, Meta: "SPEC", Help: "exclude functions, sources, objects or libraries"},
		{Name: "EXCALL", Min: 4, Long: "exclude-all", Set: selection(prep.ExcludeAll),
			Usage:   "Exclude everything from profile",
			Section: secSelect, Help: "exclude everything (then /INC what to profile)"},
		{Name: "FC", Min: 2, Long: "function-counting", Set: method(datafile.FuncCounting),
			Usage:   "Profile by function with counts",
			Section: secType, Help: "profile by function with counts"},
		{Name: "FS", Min: 2, Long: "function-sampling", Set: method(datafile.FuncSampling),
			Section: secType, Help: "profile by function, sampling the PC"},
		{Name: "FT", Min: 2, Long: "function-timing", Set: method(datafile.FuncTiming),
			Usage:   "Profile by function with times and counts",
			Section: secType, Help: "profile by function with times and counts"},
		{Name: "FV", Min: 2, Long: "function-coverage", Set: method(datafile.FuncCoverage),
			Usage:   "Profile by function with coverage",
			Section: secType, Help: "profile by function with coverage"},
		{Name: "INC", Min: 3, Long: "include", Arg: cli.Text, Set: selection(prep.Include),
			Usage:   "Include function/source/obj/lib in profile",
			Section: secSelect, Meta: "SPEC", Help: "include functions, sources, objects or libraries"},
		cli.UsageOption[options]("HELP", 1, "Display PREP usage"),
		{Name: "IO", Min: 2, Long: "input-pbo", Arg: cli.Text, Max: 8,
			Set:     func(o *options, v cli.Value) { o.inputPBOs = append(o.inputPBOs, v.Text) },
			Usage:   "<filename> Read a PBO file",
			Section: secFiles, Meta: "FILE", Help: "read a .pbo to add (phase II; up to 8)"},
		{Name: "IT", Min: 2, Long: "input-pbt", Arg: cli.Text,
			Set:     func(o *options, v cli.Value) { o.inputPBT = v.Text },
			Usage:   "<filename> Read a PBT file",
			Section: secFiles, Meta: "FILE", Help: "read the .pbt to add to (phase II)"},
		{Name: "LC", Min: 2, Long: "line-counting", Set: method(datafile.LineCounting),
			Usage:   "Profile by line with counts",
			Section: secType, Help: "profile by line with counts"},
		{Name: "CB", Min: 2, Long: "calibrate", Arg: cli.Number,
			Set:     func(o *options, v cli.Value) { o.plan.Calibration = int64(v.Number) },
			Usage:   "<number> Calibrate overhead",
			Section: secCollect, Meta: "N", Help: "overhead per event in ns (no calibration)"},
		{Name: "LV", Min: 2, Long: "line-coverage", Set: method(datafile.LineCoverage),
			Usage:   "Profile by line with coverage",
			Section: secType, Help: "profile by line with coverage"},
		{Name: "M", Min: 1, Long: "merge", Arg: cli.Text,
			Set:     func(o *options, v cli.Value) { o.merge = v.Text },
			Usage:   "<filename> Merge PBT and PBO file",
			Section: secFiles, Meta: "BASE", Help: "add BASE.pbo into BASE.pbt (phase II)"},
		cli.NoLogoOption[options](),
		{Name: "OI", Min: 2, Long: "output-pbi", Arg: cli.Text,
			Set:     func(o *options, v cli.Value) { o.outputPBI = v.Text },
			Usage:   "<filename> Write a PBI file",
			Section: secFiles, Meta: "FILE", Help: "write the .pbi to FILE"},
		{Name: "OM", Min: 2, Long: "modified-image", Set: func(*options, cli.Value) {},
			Usage:   "Store modified EXE/DLL in external file",
			Section: secFiles, Help: "accepted; no modified image is needed"},
		{Name: "OT", Min: 2, Long: "output-pbt", Arg: cli.Text,
			Set:     func(o *options, v cli.Value) { o.outputPBT = v.Text },
			Usage:   "<filename> Write a PBT file",
			Section: secFiles, Meta: "FILE", Help: "write the .pbt to FILE"},
		{Name: "SF", Min: 2, Long: "start", Arg: cli.Text, Override: "SF",
			Set:     func(o *options, v cli.Value) { o.plan.Start = v.Text },
			Usage:   "<function> Start profile with function",
			Section: secCollect, Meta: "FUNC", Help: "count only while FUNC is active"},
		cli.UsageOption[options]("?", 1, "Display PREP usage"),
		{Name: "AT", Min: 2, Long: "attribution",
			Set:     func(o *options, _ cli.Value) { o.plan.Attribution = true },
			Usage:   "Collect attribution data",
			Section: secCollect, Help: "collect attribution data (caller stacks)"},
		{Long: "no-call-counts",
			Set:     func(o *options, _ cli.Value) { o.plan.Uncounted = true },
			Section: secCollect, Help: "with /FS: sample alone, counting no call"},
		{Long: "no-branches",
			Set:     func(o *options, _ cli.Value) { o.plan.NoBranches = true },
			Section: secCollect, Help: "with /LV: cover lines alone, not their branches"},
		{Name: "STACK", Min: 2, Long: "stack", Arg: cli.Number,
			Set:     func(o *options, v cli.Value) { o.plan.Stack = v.Number },
			Usage:   "<number> Set attributed stack depth",
			Section: secCollect, Meta: "N", Help: "callers that tell stacks apart (0: all)"},
		cli.LongHelpOption[options](),
		cli.VersionOption[options](),
		cli.ManOption[options](),
	},
	UsageHead: "PREP [options] [module-names]\n\noptions:\n\n",
	HelpHead: "Usage: prep [OPTION]... PROGRAM [LIBRARY]...\n" +
		"  or:  prep [OPTION]... /M BASE\n" +
		"  or:  prep [OPTION]... /IT FILE /IO FILE... /OT FILE\n" +
		"Prepare a program and its shared libraries for profiling (phase I), or add\n" +
		"the runs recorded in .pbo files into a .pbt (phase II).\n",
	HelpSections: []string{secType, secSelect, secCollect, secFiles, cli.SectionOther},
	HelpFoot: "SPEC is a function (mangled or not), a shared library (libfoo.so), an object\n" +
		"(parse.o), or a source file with line ranges (parse.c(3-41,50-67)) or all of\n" +
		"its lines (parse.c(0-0)); * and ? match any characters.\n" +
		"Phase I writes PROGRAM.pbi and an empty PROGRAM.pbt in the current directory.\n",
}
