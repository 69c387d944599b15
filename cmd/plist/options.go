package main

import (
	"github.com/sourceprofiler/sprof/internal/cli"
	"github.com/sourceprofiler/sprof/plist"
)

// options is PLIST's command line.
type options struct {
	// report holds the report's options; Now, Path and Warn are set when
	// the report is written.
	report plist.Options
	trace  bool // /TRACE
	dump   bool // --dump: the names are data files to print in text form
	// format is --format's name ("" for the listing); timeView is
	// --time's ("" for the elapsed times); output is /O, the file the
	// report goes to ("" for stdout); failUnder is --fail-under's
	// percentage (-1: none); diffBase is --diff-base's profile; combine
	// is --combine: the coverage of every input, added.
	format    string
	timeView  string
	output    string
	failUnder int
	diffBase  string
	combine   bool
}

// The --help sections.
const (
	secReport    = "Report:"
	secSort      = "Sort order (a second sort option replaces the first with warning PRF4101):"
	secAttribute = "Attribution listings (profiles made with prep /AT):"
	secExport    = "Other tools' formats, checks and comparisons:"
)

// sortBy returns the setter of a sort switch.
func sortBy(s plist.Sort) func(*options, cli.Value) {
	return func(o *options, _ cli.Value) { o.report.Sort = s }
}

// tool is PLIST's command line: its option table in the original's order
// (original.md §2.3, §5.3), plus the long-only --dump and --help.
var tool = cli.Tool[options]{
	Name:     "plist",
	Env:      "PLIST",
	Defaults: func() options { return options{report: plist.DefaultOptions(), failUnder: -1} },
	Options: []cli.Option[options]{
		{Name: "C", Min: 1, Long: "count", Arg: cli.Number,
			Set:     func(o *options, v cli.Value) { o.report.MinCount = v.Number },
			Usage:   "<count> Specify minimum hit count to appear in listing",
			Section: secReport, Meta: "N", Help: "list only entries with N hits or more (1)"},
		{Name: "D", Min: 1, Long: "source-dir", Arg: cli.Text,
			Set:     func(o *options, v cli.Value) { o.report.SourceDirs = append(o.report.SourceDirs, v.Text) },
			Usage:   "<directory> Search additional directory for source code",
			Section: secReport, Meta: "DIR", Help: "search DIR for source files not found"},
		{Name: "F", Min: 1, Long: "full-paths",
			Set:     func(o *options, _ cli.Value) { o.report.FullPaths = true },
			Usage:   "List full paths in tab-delimited report",
			Section: secReport, Help: "full paths in the tab-delimited report"},
		cli.UsageOption[options]("HELP", 1, "Display PLIST usage"),
		{Name: "L", Min: 1, Long: "mangled",
			Set:     func(o *options, _ cli.Value) { o.report.Mangled = true },
			Usage:   "List mangled function names",
			Section: secReport, Help: "list mangled (linkage) names"},
		cli.NoLogoOption[options](),
		{Name: "PL", Min: 2, Long: "page-length", Arg: cli.Number,
			// The original acted on /PL 0 to 16 as 16 (original.md §5.5.4).
			Set:     func(o *options, v cli.Value) { o.report.PageLength = max(v.Number, 16) },
			Usage:   "<length> Specify the number of lines per page",
			Section: secReport, Meta: "N", Help: "N lines per page (16 at least)"},
		{Name: "PW", Min: 2, Long: "page-width", Arg: cli.Number,
			Set:     func(o *options, v cli.Value) { o.report.PageWidth, o.report.PageWidthGiven = v.Number, true },
			Usage:   "<width> Specify the maximum number of characters per line",
			Section: secReport, Meta: "N", Help: "cut lines after N characters"},
		{Name: "SC", Min: 2, Long: "sort=count", Override: "sort", Set: sortBy(plist.SortCount),
			Usage:   "Sort by hit/sample count",
			Section: secSort, Help: "sort by hit count"},
		{Name: "SL", Min: 2, Long: "sort=line", Override: "sort", Set: sortBy(plist.SortLine),
			Usage:   "Sort by line number",
			Section: secSort, Help: "sort by line number (line profiles)"},
		{Name: "SLS", Min: 3, Long: "sort=line-summary", Override: "sort", Set: sortBy(plist.SortLineSummary),
			Usage:   "Display coverage summary, sorted by line",
			Section: secSort, Help: "line coverage summary, by line"},
		{Name: "SN", Min: 2, Long: "sort=name", Override: "sort", Set: sortBy(plist.SortName),
			Usage:   "Sort by name (alphabetical order)",
			Section: secSort, Help: "sort by name (function profiles)"},
		{Name: "SNS", Min: 3, Long: "sort=name-summary", Override: "sort", Set: sortBy(plist.SortNameSummary),
			Usage:   "Display coverage summary for functions, sorted by name",
			Section: secSort, Help: "function coverage summary, by name"},
		{Name: "ST", Min: 2, Long: "sort=time", Override: "sort", Set: sortBy(plist.SortTime),
			Usage:   "Sort by function time",
			Section: secSort, Help: "sort by function time"},
		{Name: "STC", Min: 3, Long: "sort=child-time", Override: "sort", Set: sortBy(plist.SortChildTime),
			Usage:   "Sort by function+child time",
			Section: secSort, Help: "sort by function+child time"},
		{Name: "T", Min: 1, Long: "tab-delimited",
			Set:     func(o *options, _ cli.Value) { o.report.Tab = true },
			Usage:   "Create tab-delimited report",
			Section: secReport, Help: "write the tab-delimited report"},
		{Name: "TRACE", Min: 1, Long: "trace",
			Set:     func(o *options, _ cli.Value) { o.trace = true },
			Usage:   "Print execution trace (if available)",
			Section: secReport, Help: "print the execution trace, if recorded"},
		cli.UsageOption[options]("?", 1, "Display PLIST usage"),
		{Name: "FLAT", Min: 4, Long: "flat",
			Set:     func(o *options, _ cli.Value) { o.report.Flat = true },
			Usage:   "Display attribution data in flat format",
			Section: secAttribute, Help: "list each caller stack on its own"},
		{Name: "INDENT", Min: 3, Long: "indent",
			Set:     func(o *options, _ cli.Value) { o.report.Flat = false },
			Usage:   "Display attribution data in indented format",
			Section: secAttribute, Help: "list callers as a tree (the default)"},
		{Name: "TAB", Min: 3, Long: "tab-width", Arg: cli.Number,
			Set:     func(o *options, v cli.Value) { o.report.TabWidth = v.Number },
			Usage:   "<width> Specify tab width",
			Section: secAttribute, Meta: "N", Help: "indent by N columns (default 2)"},
		{Name: "O", Min: 1, Long: "output", Arg: cli.Text,
			Set:     func(o *options, v cli.Value) { o.output = v.Text },
			Section: secExport, Meta: "FILE", Help: "write the report to FILE instead of stdout"},
		{Long: "time", Arg: cli.Text,
			Set:     func(o *options, v cli.Value) { o.timeView = v.Text },
			Section: secReport, Meta: "VIEW", Help: "times elapsed (the default) or on a CPU (cpu)"},
		{Long: "format", Arg: cli.Text,
			Set:     func(o *options, v cli.Value) { o.format = v.Text },
			Section: secExport, Meta: "NAME", Help: "write the report in format NAME (below)"},
		{Long: "fail-under", Arg: cli.Number,
			Set:     func(o *options, v cli.Value) { o.failUnder = v.Number },
			Section: secExport, Meta: "N", Help: "exit with status 3 when coverage is below N %"},
		{Long: "combine", Set: func(o *options, _ cli.Value) { o.combine = true },
			Section: secExport, Help: "add the coverage of every INPUT by source line"},
		{Long: "diff-base", Arg: cli.Text,
			Set:     func(o *options, v cli.Value) { o.diffBase = v.Text },
			Section: secExport, Meta: "BASE", Help: "list what changed since BASE.pbt (same type)"},
		{Long: "dump", Set: func(o *options, _ cli.Value) { o.dump = true },
			Section: cli.SectionOther, Help: "print data files (.pbi, .pbo, .pbt) as text"},
		cli.LongHelpOption[options](),
		cli.VersionOption[options](),
		cli.ManOption[options](),
	},
	UsageHead: "PLIST [options] <inputfile>\n\noptions:\n\n",
	UsageFoot: "\n<input file> is the name of a PBT file containing profiling statistics.\n" +
		"Output defaults to STDOUT, but can be redirected using the > character.\n\n",
	HelpHead: "Usage: plist [OPTION]... INPUT\n" +
		"  or:  plist --combine [--format=lcov|html] [OPTION]... INPUT...\n" +
		"  or:  plist --dump FILE...\n" +
		"Write the report of the profile INPUT.pbt on standard output.\n",
	HelpSections: []string{secReport, secSort, secAttribute, secExport, cli.SectionOther},
	ExitStatus:   "3 coverage below --fail-under (after the report)",
	HelpFoot: "INPUT may be given with or without its .pbt extension. With --fail-under,\n" +
		"plist exits with status 3 when the coverage is below N %, after the report.\n" +
		"With --combine, the coverage of every INPUT (the databases of a suite's\n" +
		"programs and their libraries) is added by source file and line, as lcov -a\n" +
		"adds tracefiles: a summary by source file, with --format=lcov one\n" +
		"tracefile, or with --format=html the page of the suite's line profiles\n" +
		"(its files, and their annotated sources with the counts and branches\n" +
		"added); --fail-under then gates the whole.\n" +
		"--format's NAME is text (the listing, the default), tab, lcov, callgrind,\n" +
		"pprof, folded, json, gmon, chrome (the execution trace of profile /TRACE\n" +
		"as a timeline for Perfetto and chrome://tracing), or html (one page for a\n" +
		"browser, that fetches nothing: the statistics, the table sortable by each\n" +
		"column, the annotated source of line profiles, and with /AT the flame\n" +
		"graph of timing's callers).\n" +
		"--time's VIEW is elapsed (the times measured, waits included: the default)\n" +
		"or cpu: each function's time on a CPU, its elapsed time less the waits of\n" +
		"its calls, which profile measures in function timing where it can (fatal\n" +
		"error PRF1484 for a profile whose runs did not measure them).\n",
}
