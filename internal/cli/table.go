package cli

import (
	"slices"
	"strings"
)

// argKind says whether an option takes an argument, and which.
type argKind int

const (
	noArg     argKind = iota
	stringArg         // a file, directory, function or selection
	numberArg         // a decimal number, 0 to 2147483647
)

// option is one entry of a tool's option table: the original's name and
// minimum length, its GNU long form, and the canonical kong flag it becomes.
type option struct {
	// name is the original's table name in upper case ("EXC", "?"); empty
	// for an option that only has a long form (--sort, --help).
	name string
	// min is the shortest abbreviation of name the original accepted
	// (original.md §2.3).
	min int
	// long is the GNU long name without its dashes ("exclude"); empty when
	// the option has none of its own (/SC is written --sort=count).
	long string
	arg  argKind
	// flag is the kong flag the option becomes; empty means long.
	flag string
	// value is the fixed value given to flag by an option without argument
	// (/SC gives --sort=count), or the prefix put before the argument of an
	// option with one (/INC x gives --select=include:x).
	value string
	// choices lists the values allowed for a string argument; nil allows any.
	choices []string
	// max is how many times the option may be given (PRF1105); 0 is
	// unlimited.
	max int
	// override names a group of options of which a second occurrence
	// replaces the first with warning PRF4101 (PREP /SF, PLIST sorts).
	override string
	// nologo marks the option that suppresses the banner.
	nologo bool

	// section and metavar and help make the --help text.
	section string
	metavar string
	help    string
}

// kongFlag returns the kong flag the option sets.
func (o *option) kongFlag() string {
	if o.flag != "" {
		return o.flag
	}
	return o.long
}

// canonical returns the kong argument for one occurrence of o with argument
// arg (ignored for options without one).
func (o *option) canonical(arg string) string {
	switch {
	case o.arg != noArg:
		return "--" + o.kongFlag() + "=" + o.value + arg
	case o.value != "":
		return "--" + o.kongFlag() + "=" + o.value
	}
	return "--" + o.kongFlag()
}

// optionTable is a tool's options in the original's table order, which
// decides abbreviations, followed by the options that only have a long form.
type optionTable []option

// lookupShort returns the option the text after a leading / or - names: the
// first entry of which it is a case-insensitive prefix at least min
// characters long (original.md §2.3), or nil.
func (t optionTable) lookupShort(word string) *option {
	for i := range t {
		o := &t[i]
		if o.name == "" || len(word) < o.min || len(word) > len(o.name) {
			continue
		}
		if strings.EqualFold(word, o.name[:len(word)]) {
			return o
		}
	}
	return nil
}

// lookupLong returns the option with the GNU long name (case-sensitive, as
// getopt_long), or nil.
func (t optionTable) lookupLong(name string) *option {
	for i := range t {
		if t[i].long != "" && t[i].long == name {
			return &t[i]
		}
	}
	return nil
}

// abbreviation returns the shortest prefix of o's name that selects o, which
// is longer than o.min when an earlier entry takes the shorter prefixes (/T
// is tab-delimited, so TRACE needs /TR).
func (t optionTable) abbreviation(o *option) string {
	for n := o.min; n < len(o.name); n++ {
		if t.lookupShort(o.name[:n]) == o {
			return o.name[:n]
		}
	}
	return o.name
}

// allows reports whether v is a valid argument of o.
func (o *option) allows(v string) bool {
	return o.choices == nil || slices.Contains(o.choices, v)
}

// Kong flags shared by the three tools.
const (
	flagUsage  = "usage"
	flagHelp   = "help"
	flagNoLogo = "nologo"
)

// Sections of the --help texts.
const (
	secType      = "Profile type (the last one given wins; the default is function timing):"
	secSelect    = "Selection (applied left to right, after profiler.ini and tools.ini):"
	secCollect   = "Collection:"
	secFiles     = "Files (the default extension is added to a name without one):"
	secOther     = "Other options:"
	secReport    = "Report:"
	secSort      = "Sort order (a second sort option replaces the first with warning PRF4101):"
	secRunning   = "Options:"
	secAttribute = "Attribution listings (profiles made with prep /AT):"
)

// The help options, the same in every table.
var (
	optHelp     = option{name: "HELP", min: 1, flag: flagUsage, section: secOther, help: "print the original's usage summary"}
	optQuestion = option{name: "?", min: 1, flag: flagUsage, section: secOther, help: "print the original's usage summary"}
	optNoLogo   = option{name: "NOLOGO", min: 3, long: flagNoLogo, nologo: true, section: secOther, help: "do not print the banner"}
	optLongHelp = option{long: flagHelp, section: secOther, help: "print this help"}
)

// prepTable is PREP's option table (original.md §2.3, §3.3), plus /FS as
// function sampling (linux.md) and the long-only --help.
var prepTable = optionTable{
	{name: "EXC", min: 3, long: "exclude", arg: stringArg, flag: "select", value: "exclude:", section: secSelect, metavar: "SPEC", help: "exclude functions, sources, objects or libraries"},
	{name: "EXCALL", min: 4, long: "exclude-all", flag: "select", value: "exclude-all", section: secSelect, help: "exclude everything (then /INC what to profile)"},
	{name: "FC", min: 2, long: "function-counting", section: secType, help: "profile by function with counts"},
	{name: "FS", min: 2, long: "function-sampling", section: secType, help: "profile by function, sampling the PC"},
	{name: "FT", min: 2, long: "function-timing", section: secType, help: "profile by function with times and counts"},
	{name: "FV", min: 2, long: "function-coverage", section: secType, help: "profile by function with coverage"},
	{name: "INC", min: 3, long: "include", arg: stringArg, flag: "select", value: "include:", section: secSelect, metavar: "SPEC", help: "include functions, sources, objects or libraries"},
	optHelp,
	{name: "IO", min: 2, long: "input-pbo", arg: stringArg, max: 8, section: secFiles, metavar: "FILE", help: "read a .pbo to add (phase II; up to 8)"},
	{name: "IT", min: 2, long: "input-pbt", arg: stringArg, section: secFiles, metavar: "FILE", help: "read the .pbt to add to (phase II)"},
	{name: "LC", min: 2, long: "line-counting", section: secType, help: "profile by line with counts"},
	{name: "CB", min: 2, long: "calibrate", arg: numberArg, section: secCollect, metavar: "N", help: "overhead per event in ns (no calibration)"},
	{name: "LV", min: 2, long: "line-coverage", section: secType, help: "profile by line with coverage"},
	{name: "M", min: 1, long: "merge", arg: stringArg, section: secFiles, metavar: "BASE", help: "add BASE.pbo into BASE.pbt (phase II)"},
	optNoLogo,
	{name: "OI", min: 2, long: "output-pbi", arg: stringArg, section: secFiles, metavar: "FILE", help: "write the .pbi to FILE"},
	{name: "OM", min: 2, long: "modified-image", section: secFiles, help: "accepted; no modified image is needed"},
	{name: "OT", min: 2, long: "output-pbt", arg: stringArg, section: secFiles, metavar: "FILE", help: "write the .pbt to FILE"},
	{name: "SF", min: 2, long: "start", arg: stringArg, override: "SF", section: secCollect, metavar: "FUNC", help: "count only while FUNC is active"},
	optQuestion,
	{name: "AT", min: 2, long: "attribution", section: secCollect, help: "collect attribution data (caller stacks)"},
	{name: "STACK", min: 2, long: "stack", arg: numberArg, section: secCollect, metavar: "N", help: "callers that tell stacks apart (0: all)"},
	optLongHelp,
}

// profileTable is PROFILE's option table (original.md §2.3, §4.3).
var profileTable = optionTable{
	{name: "A", min: 1, long: "append", section: secRunning, help: "append to the error file"},
	{name: "E", min: 1, long: "error-file", arg: stringArg, section: secRunning, metavar: "FILE", help: "write diagnostics to FILE"},
	optHelp,
	{name: "I", min: 1, long: "input", arg: stringArg, section: secRunning, metavar: "FILE", help: "read the .pbi from FILE"},
	{name: "NC", min: 2, long: "new-console", section: secRunning, help: "accepted; the program keeps the terminal"},
	optNoLogo,
	{name: "O", min: 1, long: "output", arg: stringArg, section: secRunning, metavar: "FILE", help: "write the .pbo to FILE"},
	{name: "S", min: 1, long: "sample-interval", arg: numberArg, section: secRunning, metavar: "N", help: "sampling interval (prep /FS profiles)"},
	{name: "X", min: 1, long: "exit-code", section: secRunning, help: "exit with the program's exit status"},
	optQuestion,
	optLongHelp,
}

// sortKeys are the values of PLIST's --sort.
var sortKeys = []string{
	string(SortCount), string(SortLine), string(SortLineSummary), string(SortName),
	string(SortNameSummary), string(SortTime), string(SortChildTime),
}

// plistTable is PLIST's option table (original.md §2.3, §5.3), plus the
// long-only --sort=KEY and --help.
var plistTable = optionTable{
	{name: "C", min: 1, long: "count", arg: numberArg, section: secReport, metavar: "N", help: "list only entries with N hits or more (1)"},
	{name: "D", min: 1, long: "source-dir", arg: stringArg, section: secReport, metavar: "DIR", help: "search DIR for source files too"},
	{name: "F", min: 1, long: "full-paths", section: secReport, help: "full paths in the tab-delimited report"},
	optHelp,
	{name: "L", min: 1, long: "mangled", section: secReport, help: "list mangled (linkage) names"},
	optNoLogo,
	{name: "PL", min: 2, long: "page-length", arg: numberArg, section: secReport, metavar: "N", help: "N lines per page (16 at least)"},
	{name: "PW", min: 2, long: "page-width", arg: numberArg, section: secReport, metavar: "N", help: "cut lines after N characters"},
	{name: "SC", min: 2, flag: "sort", value: string(SortCount), override: "sort", section: secSort, help: "sort by hit count"},
	{name: "SL", min: 2, flag: "sort", value: string(SortLine), override: "sort", section: secSort, help: "sort by line number (line profiles)"},
	{name: "SLS", min: 3, flag: "sort", value: string(SortLineSummary), override: "sort", section: secSort, help: "line coverage summary, by line"},
	{name: "SN", min: 2, flag: "sort", value: string(SortName), override: "sort", section: secSort, help: "sort by name (function profiles)"},
	{name: "SNS", min: 3, flag: "sort", value: string(SortNameSummary), override: "sort", section: secSort, help: "function coverage summary, by name"},
	{name: "ST", min: 2, flag: "sort", value: string(SortTime), override: "sort", section: secSort, help: "sort by function time"},
	{name: "STC", min: 3, flag: "sort", value: string(SortChildTime), override: "sort", section: secSort, help: "sort by function+child time"},
	{name: "T", min: 1, long: "tab-delimited", section: secReport, help: "write the tab-delimited report"},
	{name: "TRACE", min: 1, long: "trace", section: secReport, help: "print the execution trace, if recorded"},
	optQuestion,
	{name: "FLAT", min: 4, long: "flat", section: secAttribute, help: "list each caller stack on its own"},
	{name: "INDENT", min: 3, long: "indent", section: secAttribute, help: "list callers as a tree (the default)"},
	{name: "TAB", min: 3, long: "tab-width", arg: numberArg, section: secAttribute, metavar: "N", help: "indent by N columns (default 2)"},
	{long: "sort", arg: stringArg, choices: sortKeys, override: "sort", section: secSort, metavar: "KEY", help: "sort by KEY, one of the keys above"},
	optLongHelp,
}
