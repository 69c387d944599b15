package cli

// SortKey is a PLIST sort order (original.md §5.4); it is also the value of
// --sort.
type SortKey string

// The sort orders of PLIST.
const (
	// SortDefault is no sort option: the profile type's default.
	SortDefault SortKey = ""
	// SortCount is /SC.
	SortCount SortKey = "count"
	// SortLine is /SL.
	SortLine SortKey = "line"
	// SortLineSummary is /SLS, the line coverage layout.
	SortLineSummary SortKey = "line-summary"
	// SortName is /SN.
	SortName SortKey = "name"
	// SortNameSummary is /SNS, the function coverage summary.
	SortNameSummary SortKey = "name-summary"
	// SortTime is /ST.
	SortTime SortKey = "time"
	// SortChildTime is /STC, function+child time.
	SortChildTime SortKey = "child-time"
)

// PlistOptions is a PLIST command line.
type PlistOptions struct {
	// Count is /C, the minimum hit count; 1 by default.
	Count int
	// SourceDirs are the /D directories in order.
	SourceDirs []string
	// Full is /F: full paths in the tab-delimited report.
	Full bool
	// Mangled is /L: linkage (mangled) names.
	Mangled bool
	// PageLength is /PL, or -1 when not given (no paging).
	PageLength int
	// PageWidth is /PW, or -1 when not given (no cutting).
	PageWidth int
	// Sort is the last sort option, or SortDefault.
	Sort SortKey
	// TabDelimited is /T, the tab-delimited report.
	TabDelimited bool
	// Trace is /TRACE.
	Trace bool
	// Flat is /FLAT and Indent is /INDENT; the later one wins, so at most
	// one is set, and neither means the indented default.
	Flat, Indent bool
	// TabWidth is /TAB, the indentation step of attribution listings; 2 by
	// default.
	TabWidth int
	// Input is the .pbt named first; later names are ignored, as by the
	// original (original.md §5.1).
	Input string
	// NoLogo is /NOLOGO: no banner.
	NoLogo bool
	// Help is the help asked for, UsageHelp also when no input is given;
	// when it is not NoHelp PLIST only prints [Tool.HelpText].
	Help Help
}

// plistGrammar is PLIST's canonical command line as kong reads it.
type plistGrammar struct {
	Count        int      `name:"count" default:"1"`
	SourceDir    []string `name:"source-dir" sep:"none"`
	FullPaths    bool     `name:"full-paths"`
	Mangled      bool     `name:"mangled"`
	PageLength   int      `name:"page-length" default:"-1"`
	PageWidth    int      `name:"page-width" default:"-1"`
	Sort         string   `name:"sort"`
	TabDelimited bool     `name:"tab-delimited"`
	Trace        bool     `name:"trace"`
	Flat         bool     `name:"flat" lastwins:"layout"`
	Indent       bool     `name:"indent" lastwins:"layout"`
	TabWidth     int      `name:"tab-width" default:"2"`
	NoLogo       bool     `name:"nologo"`
	Usage        bool     `name:"usage" lastwins:"help"`
	Help         bool     `name:"help" lastwins:"help"`
	Inputs       []string `arg:"" optional:""`
}

var plistConfig = config{tool: Plist, table: plistTable}

// ParsePlist reads PLIST's command line: args without the program name, the
// environment through env (for the variable PLIST; nil reads none).
// Warnings (PRF4101) go to warn before ParsePlist returns.
//
// The options are never nil: after an error NoLogo still tells whether
// /NOLOGO was seen. Every error is a [UsageError] carrying a [prf.Error].
func ParsePlist(args []string, env func(string) string, warn func(error)) (*PlistOptions, error) {
	return parsePlist(args, env, warn, readFile)
}

func parsePlist(args []string, env func(string) string, warn func(error), read readFunc) (*PlistOptions, error) {
	var g plistGrammar
	n, err := parseTool(&plistConfig, &g, args, env, read, warn)
	if err != nil {
		return &PlistOptions{NoLogo: n.noLogo, Count: 1, PageLength: -1, PageWidth: -1, TabWidth: 2}, err
	}
	o := &PlistOptions{
		Count:        g.Count,
		SourceDirs:   g.SourceDir,
		Full:         g.FullPaths,
		Mangled:      g.Mangled,
		PageLength:   g.PageLength,
		PageWidth:    g.PageWidth,
		Sort:         SortKey(g.Sort),
		TabDelimited: g.TabDelimited,
		Trace:        g.Trace,
		Flat:         g.Flat,
		Indent:       g.Indent,
		TabWidth:     g.TabWidth,
		NoLogo:       g.NoLogo,
		Help:         helpOf(g.Usage, g.Help),
	}
	if len(g.Inputs) > 0 {
		o.Input = g.Inputs[0]
	} else if o.Help == NoHelp {
		o.Help = UsageHelp // original.md §2.9: no input, usage
	}
	return o, nil
}
