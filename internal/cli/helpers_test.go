package cli

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// toy is the options of the test tool: one field per kind of option.
type toy struct {
	Mode    string
	List    []string
	Start   string
	Depth   int
	Sort    string
	Quiet   bool
	Program bool
}

// toyTool is a tool whose table exercises every feature of the parser:
// abbreviations decided by table order (/T before /TRACE and /TAB), text and
// number arguments, a limit, an override group, long forms with a fixed
// value, a long form that begins another (--trace, --trace-limit), the
// built-in help and logo options, and options the original's usage does
// not list.
func toyTool() *Tool[toy] {
	mode := func(m string) func(*toy, Value) { return func(o *toy, _ Value) { o.Mode = m } }
	sort := func(k string) func(*toy, Value) { return func(o *toy, _ Value) { o.Sort = k } }
	return &Tool[toy]{
		Name:     "toy",
		Env:      "TOY",
		Defaults: func() toy { return toy{Mode: "timing", Depth: -1} },
		MaxNames: 3,
		Options: []Option[toy]{
			{Name: "EXC", Min: 3, Long: "exclude", Arg: Text, Usage: "Exclude", Section: "Select:", Meta: "SPEC", Help: "exclude SPEC",
				Set: func(o *toy, v Value) { o.List = append(o.List, "-"+v.Text) }},
			{Name: "EXCALL", Min: 4, Long: "exclude-all", Usage: "Exclude all", Section: "Select:", Help: "exclude all",
				Set: func(o *toy, _ Value) { o.List = append(o.List, "-*") }},
			{Name: "FC", Min: 2, Long: "counting", Usage: "Count", Section: "Mode:", Help: "count", Set: mode("counting")},
			{Name: "FS", Min: 2, Long: "sampling", Section: "Mode:", Help: "sample", Set: mode("sampling")},
			{Name: "INC", Min: 3, Long: "include", Arg: Text, Max: 3, Usage: "<spec> Include", Section: "Select:", Meta: "SPEC", Help: "include SPEC",
				Set: func(o *toy, v Value) { o.List = append(o.List, "+"+v.Text) }},
			UsageOption[toy]("HELP", 1, "Display TOY usage"),
			NoLogoOption[toy](),
			{Name: "SF", Min: 2, Long: "start", Arg: Text, Override: "SF", Usage: "<function> Start", Section: "Mode:", Meta: "FUNC", Help: "start at FUNC",
				Set: func(o *toy, v Value) { o.Start = v.Text }},
			{Name: "STACK", Min: 2, Long: "stack", Arg: Number, Usage: "<number> Depth", Section: "Mode:", Meta: "N", Help: "depth N",
				Set: func(o *toy, v Value) { o.Depth = v.Number }},
			{Name: "SC", Min: 2, Long: "sort=count", Override: "sort", Usage: "Sort by count", Section: "Sort:", Help: "by count", Set: sort("count")},
			{Name: "SN", Min: 2, Long: "sort=name", Override: "sort", Usage: "Sort by name", Section: "Sort:", Help: "by name", Set: sort("name")},
			{Name: "T", Min: 1, Long: "quiet", Usage: "Quiet", Section: "Mode:", Help: "be quiet", Set: func(o *toy, _ Value) { o.Quiet = true }},
			{Name: "TRACE", Min: 1, Long: "trace", Usage: "Trace", Section: "Mode:", Help: "trace", Set: mode("trace")},
			{Long: "trace-limit", Arg: Number, Section: "Mode:", Meta: "N", Help: "trace N",
				Set: func(o *toy, v Value) { o.Depth = v.Number }},
			UsageOption[toy]("?", 1, "Display TOY usage"),
			{Name: "TAB", Min: 3, Long: "tab", Arg: Number, Usage: "<width> Tab", Section: "Mode:", Meta: "N", Help: "tab N",
				Set: func(o *toy, v Value) { o.Depth = v.Number }},
			LongHelpOption[toy](),
		},
		UsageHead:    "TOY [options] <names>\n\n",
		UsageFoot:    "\n<names> are names.\n",
		HelpHead:     "Usage: toy [OPTION]... NAME...\n",
		HelpSections: []string{"Mode:", "Select:", "Sort:", SectionOther},
		HelpFoot:     "Names are names.\n",
	}
}

// programTool is toyTool with its first name ending the options, as
// PROFILE's program does.
func programTool() *Tool[toy] {
	t := toyTool()
	t.Program, t.MaxNames = true, 0
	return t
}

// fakeFS returns a readFunc over in-memory response files, failing like the
// file system for a missing one.
func fakeFS(files map[string]string) readFunc {
	return func(name string, limit int) ([]byte, error) {
		data, ok := files[name]
		if !ok {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		if len(data) > limit {
			return nil, errResponseTooLarge
		}
		return []byte(data), nil
	}
}

// parseToy parses args with tool over in-memory response files, returning
// the command, the warnings as printed and the error.
func parseToy(t testing.TB, tool *Tool[toy], args []string, env string, files map[string]string) (*Command[toy], []string, error) {
	t.Helper()
	var warnings []string
	cmd, err := tool.parse(args, env, fakeFS(files), func(d *prf.Diagnostic) {
		warnings = append(warnings, prf.Line(tool.Name, d))
	})
	if cmd == nil {
		t.Fatalf("toy %q: nil command", args)
	}
	return cmd, warnings, err
}

// words splits a test command line on spaces; a case that needs empty
// tokens or spaces inside one lists its tokens itself.
func words(s string) []string {
	return strings.Fields(s)
}
