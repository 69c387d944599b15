package main

import "github.com/sourceprofiler/sprof/internal/cli"

// options is PROFILE's command line, the program and its arguments aside.
type options struct {
	input          string // /I: the .pbi, or empty for the program's base name
	output         string // /O: the .pbo, or empty for the .pbi's base name
	errorFile      string // /E: where PROFILE's diagnostics go, or empty
	appendErrors   bool   // /A: append to errorFile
	exitCode       bool   // /X: exit with the program's status
	sampleInterval int    // /S, or -1 when not given
	breakpoints    bool   // --breakpoints: no in-process trampolines
	noCPUTime      bool   // --no-cpu-time: no clock per thread, no waits measured
	noStacks       bool   // --no-stacks: function sampling takes no call stack
	userOnly       bool   // --user-only: function sampling samples user space alone
	everyLineSite  bool   // --every-line-site: no counts shared in a block
	verbose        bool   // --verbose: list the entries that keep a breakpoint
	explain        bool   // --explain: tell what PROFILE does as it does it
	explainLimit   int    // --explain-limit, or -1 when not given
	trace          bool   // /TRACE: write an execution trace (.pbx)
	traceLimit     int    // --trace-limit in MiB, or -1 when not given
	pid            int    // --pid: the running process to attach to, or -1
	duration       string // --duration: how long to profile it, in seconds
}

const (
	secRunning = "Options:"
	secAttach  = "Attaching to a running process:"
)

// tool is PROFILE's command line: its option table in the original's order
// (original.md §2.3, §4.3), plus /S of function sampling and --help.
// Everything after the program's name is the program's (original.md §2.1).
var tool = cli.Tool[options]{
	Name:     "profile",
	Env:      "PROFILE",
	Defaults: func() options { return options{sampleInterval: -1, traceLimit: -1, explainLimit: -1, pid: -1} },
	Program:  true,
	Options: []cli.Option[options]{
		{Name: "A", Min: 1, Long: "append",
			Set:     func(o *options, _ cli.Value) { o.appendErrors = true },
			Usage:   "Append errors to error file",
			Section: secRunning, Help: "append to the error file"},
		{Name: "E", Min: 1, Long: "error-file", Arg: cli.Text,
			Set:     func(o *options, v cli.Value) { o.errorFile = v.Text },
			Usage:   "<filename> Redirect errors to a file",
			Section: secRunning, Meta: "FILE", Help: "write diagnostics to FILE"},
		cli.UsageOption[options]("HELP", 1, "Display PROFILE usage"),
		{Name: "I", Min: 1, Long: "input", Arg: cli.Text,
			Set:     func(o *options, v cli.Value) { o.input = v.Text },
			Usage:   "<filename> Read a PBI file",
			Section: secRunning, Meta: "FILE", Help: "read the .pbi from FILE"},
		{Name: "NC", Min: 2, Long: "new-console", Set: func(*options, cli.Value) {},
			Usage:   "Create new console for program being profiled",
			Section: secRunning, Help: "accepted; the program keeps the terminal"},
		cli.NoLogoOption[options](),
		{Name: "O", Min: 1, Long: "output", Arg: cli.Text,
			Set:     func(o *options, v cli.Value) { o.output = v.Text },
			Usage:   "<filename> Write a PBO file",
			Section: secRunning, Meta: "FILE", Help: "write the .pbo to FILE"},
		{Name: "S", Min: 1, Long: "sample-interval", Arg: cli.Number,
			Set:     func(o *options, v cli.Value) { o.sampleInterval = v.Number },
			Section: secRunning, Meta: "N", Help: "sample every N µs of CPU time (default: 1000)"},
		{Name: "TRACE", Min: 2, Long: "trace",
			Set:     func(o *options, _ cli.Value) { o.trace = true },
			Section: secRunning, Help: "write every call and return to a trace (.pbx)"},
		{Long: "trace-limit", Arg: cli.Number,
			Set:     func(o *options, v cli.Value) { o.traceLimit = v.Number },
			Section: secRunning, Meta: "MIB", Help: "cut the trace at MIB MiB (256; 0: none)"},
		{Name: "X", Min: 1, Long: "exit-code",
			Set:     func(o *options, _ cli.Value) { o.exitCode = true },
			Usage:   "Return exit code of <program>",
			Section: secRunning, Help: "exit with the program's exit status"},
		{Long: "pid", Arg: cli.Number,
			Set:     func(o *options, v cli.Value) { o.pid = v.Number },
			Section: secAttach, Meta: "PID", Help: "profile running process PID, then let it go"},
		{Long: "duration", Arg: cli.Text,
			Set:     func(o *options, v cli.Value) { o.duration = v.Text },
			Section: secAttach, Meta: "SECONDS", Help: "profile it for SECONDS (default: until Ctrl-C)"},
		{Long: "breakpoints",
			Set:     func(o *options, _ cli.Value) { o.breakpoints = true },
			Section: secRunning, Help: "count with breakpoints, a stop per call"},
		{Long: "no-cpu-time",
			Set:     func(o *options, _ cli.Value) { o.noCPUTime = true },
			Section: secRunning, Help: "measure no call's time on a CPU (plist --time=cpu)"},
		{Long: "no-stacks",
			Set:     func(o *options, _ cli.Value) { o.noStacks = true },
			Section: secRunning, Help: "sample program counters alone, without call stacks"},
		{Long: "user-only",
			Set:     func(o *options, _ cli.Value) { o.userOnly = true },
			Section: secRunning, Help: "sample user space alone, not the kernel's time"},
		{Long: "every-line-site",
			Set:     func(o *options, _ cli.Value) { o.everyLineSite = true },
			Section: secRunning, Help: "probe every line site (a test mode)"},
		{Long: "verbose",
			Set:     func(o *options, _ cli.Value) { o.verbose = true },
			Section: secRunning, Help: "list the sites that keep a breakpoint"},
		{Long: "explain",
			Set:     func(o *options, _ cli.Value) { o.explain = true },
			Section: secRunning, Help: "narrate what PROFILE does, as it does it"},
		{Long: "explain-limit", Arg: cli.Number,
			Set:     func(o *options, v cli.Value) { o.explain, o.explainLimit = true, v.Number },
			Section: secRunning, Meta: "N", Help: "--explain, describing N sites (default 10; 0: all)"},
		cli.UsageOption[options]("?", 1, "Display PROFILE usage"),
		cli.LongHelpOption[options](),
		cli.VersionOption[options](),
		cli.ManOption[options](),
	},
	UsageHead: "PROFILE [options] <program> [arguments...]\n\noptions:\n\n",
	UsageFoot: "\n<program> is the name of the executable to profile\n" +
		"[arguments...] are command-line arguments for <program>\n\n",
	HelpHead: "Usage: profile [OPTION]... PROGRAM [ARGUMENT]...\n" +
		"  or:  profile [OPTION]... --pid=PID [--duration=SECONDS] [PROGRAM]\n" +
		"Run PROGRAM under the profiler and record the run in a .pbo, or attach\n" +
		"to the running process PID for a while and let it go as it was.\n",
	HelpSections: []string{secRunning, secAttach, cli.SectionOther},
	ExitStatus:   "with /X the program's own (128+N after signal N)",
	HelpFoot: "Everything after PROGRAM is passed to it unchanged, options included.\n" +
		"With --pid, PROGRAM (default: the process's executable) names the .pbi;\n" +
		"the run's counts cover the window, and the run record says so.\n",
}
