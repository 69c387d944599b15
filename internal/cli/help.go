package cli

import (
	"fmt"
	"strings"
)

// usageTexts are the original's usage texts, byte for byte but with LF line
// ends (original.md §3.2, §4.2, §5.2; ../golden/usage/*-help-q.out). They do
// not list the options the original left out of them (PREP /FS, PROFILE /S)
// nor the long forms: --help does.
var usageTexts = map[string]string{
	"prep": "PREP [options] [module-names]\n" +
		"\n" +
		"options:\n" +
		"\n" +
		"/EXC\tExclude function/source/obj/lib from profile\n" +
		"/EXCALL\tExclude everything from profile\n" +
		"/FC\tProfile by function with counts\n" +
		"/FT\tProfile by function with times and counts\n" +
		"/FV\tProfile by function with coverage\n" +
		"/INC\tInclude function/source/obj/lib in profile\n" +
		"/HELP\tDisplay PREP usage\n" +
		"/IO\t<filename> Read a PBO file\n" +
		"/IT\t<filename> Read a PBT file\n" +
		"/LC\tProfile by line with counts\n" +
		"/CB\t<number> Calibrate overhead\n" +
		"/LV\tProfile by line with coverage\n" +
		"/M\t<filename> Merge PBT and PBO file\n" +
		"/NOLOGO\tSuppress copyright message\n" +
		"/OI\t<filename> Write a PBI file\n" +
		"/OM\tStore modified EXE/DLL in external file\n" +
		"/OT\t<filename> Write a PBT file\n" +
		"/SF\t<function> Start profile with function\n" +
		"/?\tDisplay PREP usage\n" +
		"/AT\tCollect attribution data\n" +
		"/STACK\t<number> Set attributed stack depth\n",
	"profile": "PROFILE [options] <program> [arguments...]\n" +
		"\n" +
		"options:\n" +
		"\n" +
		"/A\tAppend errors to error file\n" +
		"/E\t<filename> Redirect errors to a file\n" +
		"/HELP\tDisplay PROFILE usage\n" +
		"/I\t<filename> Read a PBI file\n" +
		"/NC\tCreate new console for program being profiled\n" +
		"/NOLOGO\tSuppress copyright message\n" +
		"/O\t<filename> Write a PBO file\n" +
		"/X\tReturn exit code of <program>\n" +
		"/?\tDisplay PROFILE usage\n" +
		"\n" +
		"<program> is the name of the executable to profile\n" +
		"[arguments...] are command-line arguments for <program>\n" +
		"\n",
	"plist": "PLIST [options] <inputfile>\n" +
		"\n" +
		"options:\n" +
		"\n" +
		"/C\t<count> Specify minimum hit count to appear in listing\n" +
		"/D\t<directory> Search additional directory for source code\n" +
		"/F\tList full paths in tab-delimited report\n" +
		"/HELP\tDisplay PLIST usage\n" +
		"/L\tList mangled function names\n" +
		"/NOLOGO\tSuppress copyright message\n" +
		"/PL\t<length> Specify the number of lines per page\n" +
		"/PW\t<width> Specify the maximum number of characters per line\n" +
		"/SC\tSort by hit/sample count\n" +
		"/SL\tSort by line number\n" +
		"/SLS\tDisplay coverage summary, sorted by line\n" +
		"/SN\tSort by name (alphabetical order)\n" +
		"/SNS\tDisplay coverage summary for functions, sorted by name\n" +
		"/ST\tSort by function time\n" +
		"/STC\tSort by function+child time\n" +
		"/T\tCreate tab-delimited report\n" +
		"/TRACE\tPrint execution trace (if available)\n" +
		"/?\tDisplay PLIST usage\n" +
		"/FLAT\tDisplay attribution data in flat format\n" +
		"/INDENT\tDisplay attribution data in indented format\n" +
		"/TAB\t<width> Specify tab width\n" +
		"\n" +
		"<input file> is the name of a PBT file containing profiling statistics.\n" +
		"Output defaults to STDOUT, but can be redirected using the > character.\n" +
		"\n",
}

// helpPage is the fixed text of a tool's --help around its option list.
type helpPage struct {
	table    optionTable
	header   string
	sections []string // in the order printed
	footer   string
}

const syntaxHelp = "Options begin with / or - and ignore case; letters in [ ] may be left out.\n" +
	"Long options (--name) take their argument after = or as the next word.\n"

var helpPages = map[string]helpPage{
	"prep": {
		table: prepTable,
		header: "Usage: prep [OPTION]... PROGRAM [LIBRARY]...\n" +
			"  or:  prep [OPTION]... /M BASE\n" +
			"  or:  prep [OPTION]... /IT FILE /IO FILE... /OT FILE\n" +
			"Prepare a program and its shared libraries for profiling (phase I), or add\n" +
			"the runs recorded in .pbo files into a .pbt (phase II).\n",
		sections: []string{secType, secSelect, secCollect, secFiles, secOther},
		footer: "SPEC is a function (mangled or not), a shared library (libfoo.so), an object\n" +
			"(parse.o), or a source file with line ranges (parse.c(3-41,50-67)) or all of\n" +
			"its lines (parse.c(0-0)); * and ? match any characters.\n" +
			"Phase I writes PROGRAM.pbi and an empty PROGRAM.pbt in the current directory.\n",
	},
	"profile": {
		table: profileTable,
		header: "Usage: profile [OPTION]... PROGRAM [ARGUMENT]...\n" +
			"Run PROGRAM under the profiler and record the run in a .pbo.\n",
		sections: []string{secRunning, secOther},
		footer: "Everything after PROGRAM is passed to it unchanged, options included.\n" +
			"With /X profile exits with the program's status (128+N after signal N).\n",
	},
	"plist": {
		table: plistTable,
		header: "Usage: plist [OPTION]... INPUT\n" +
			"Write the report of the profile INPUT.pbt on standard output.\n",
		sections: []string{secReport, secSort, secAttribute, secOther},
		footer:   "INPUT may be given with or without its .pbt extension.\n",
	},
}

// longHelp returns the --help text of tool t: every option with its
// shortest abbreviation and its long form, by section.
func longHelp(t Tool) string {
	page := helpPages[t.Name]
	var b strings.Builder
	b.WriteString(page.header)
	b.WriteString("\n")
	b.WriteString(syntaxHelp)
	for _, section := range page.sections {
		fmt.Fprintf(&b, "\n%s\n", section)
		for i := range page.table {
			if o := &page.table[i]; o.section == section {
				fmt.Fprintf(&b, "  %-26s %s\n", page.table.helpName(o), o.help)
			}
		}
	}
	b.WriteString("\n")
	b.WriteString(page.footer)
	fmt.Fprintf(&b, "The environment variable %s is read before the arguments; @FILE reads\n", t.Env)
	b.WriteString("arguments from FILE. Exit status: 0 success, 1 fatal error, 2 invalid\n" +
		"command line.\n")
	return b.String()
}

// helpName returns the left column of an option in --help: "/NOL[OGO],
// --nologo", "/SC, --sort=count", "/?", "--help".
func (t optionTable) helpName(o *option) string {
	var names []string
	if o.name != "" {
		short := t.abbreviation(o)
		if rest := o.name[len(short):]; rest != "" {
			short += "[" + rest + "]"
		}
		names = append(names, "/"+short)
	}
	switch {
	case o.long != "" && o.arg != noArg:
		names = append(names, "--"+o.long+"="+o.metavar)
	case o.long != "":
		names = append(names, "--"+o.long)
	case o.value != "":
		names = append(names, o.canonical(""))
	}
	return strings.Join(names, ", ")
}
