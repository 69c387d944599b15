package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// plistWant returns the options of "plist fcount" changed by edit.
func plistWant(edit func(o *PlistOptions)) *PlistOptions {
	o := &PlistOptions{Count: 1, PageLength: -1, PageWidth: -1, TabWidth: 2, Input: "fcount"}
	if edit != nil {
		edit(o)
	}
	return o
}

// plistUsage is the options of a PLIST command line without input.
func plistUsage(edit func(o *PlistOptions)) *PlistOptions {
	o := plistWant(edit)
	o.Input = ""
	return o
}

func TestParsePlistOptions(t *testing.T) {
	sort := func(k SortKey) func(*PlistOptions) {
		return func(o *PlistOptions) { o.Sort = k }
	}
	tests := []struct {
		name string
		args []string
		env  string
		want *PlistOptions
	}{
		{"default", words("fcount"), "", plistWant(nil)},
		{"C", words("/c 10 fcount"), "", plistWant(func(o *PlistOptions) { o.Count = 10 })},
		{"C zero", words("-C 0 fcount"), "", plistWant(func(o *PlistOptions) { o.Count = 0 })},
		{"C long", words("--count=3 fcount"), "", plistWant(func(o *PlistOptions) { o.Count = 3 })},
		// plist-c-missing-arg: a trailing /C is a second input, ignored.
		{"C trailing", words("/nologo fcount /c"), "", plistWant(func(o *PlistOptions) { o.NoLogo = true })},
		{"D", words("/d srcdir /D /usr/src/x --source-dir=a,b --source-dir /tmp fcount"), "", plistWant(func(o *PlistOptions) {
			o.SourceDirs = []string{"srcdir", "/usr/src/x", "a,b", "/tmp"}
		})},
		{"F", words("/f fcount"), "", plistWant(func(o *PlistOptions) { o.Full = true })},
		{"F long", words("--full-paths fcount"), "", plistWant(func(o *PlistOptions) { o.Full = true })},
		{"L", words("/L fcount"), "", plistWant(func(o *PlistOptions) { o.Mangled = true })},
		{"L long", words("--mangled fcount"), "", plistWant(func(o *PlistOptions) { o.Mangled = true })},
		{"PL", words("/pl 0 fcount"), "", plistWant(func(o *PlistOptions) { o.PageLength = 0 })},
		{"PL long", words("--page-length=255 fcount"), "", plistWant(func(o *PlistOptions) { o.PageLength = 255 })},
		{"PW", words("/PW 20 fcount"), "", plistWant(func(o *PlistOptions) { o.PageWidth = 20 })},
		{"PW long", words("--page-width 512 fcount"), "", plistWant(func(o *PlistOptions) { o.PageWidth = 512 })},
		{"SC", words("/sc fcount"), "", plistWant(sort(SortCount))},
		{"SL", words("/sl fcount"), "", plistWant(sort(SortLine))},
		{"SLS", words("/SLS fcount"), "", plistWant(sort(SortLineSummary))},
		{"SN", words("/sn fcount"), "", plistWant(sort(SortName))},
		{"SN dash", words("-nologo -sn fcount"), "", plistWant(func(o *PlistOptions) { o.NoLogo, o.Sort = true, SortName })},
		{"SN upper", words("/NOLOGO /SN FCOUNT"), "", plistWant(func(o *PlistOptions) {
			o.NoLogo, o.Sort, o.Input = true, SortName, "FCOUNT"
		})},
		{"SNS", words("/sns fcount"), "", plistWant(sort(SortNameSummary))},
		{"ST", words("/st fcount"), "", plistWant(sort(SortTime))},
		{"STC", words("/stc fcount"), "", plistWant(sort(SortChildTime))},
		{"sort long", words("--sort=child-time fcount"), "", plistWant(sort(SortChildTime))},
		{"sort long next token", words("--sort line-summary fcount"), "", plistWant(sort(SortLineSummary))},
		{"T", words("/t fcount"), "", plistWant(func(o *PlistOptions) { o.TabDelimited = true })},
		{"T long", words("--tab-delimited fcount"), "", plistWant(func(o *PlistOptions) { o.TabDelimited = true })},
		{"TRACE TR", words("/tr fcount"), "", plistWant(func(o *PlistOptions) { o.Trace = true })},
		{"TRACE", words("/TRACE fcount"), "", plistWant(func(o *PlistOptions) { o.Trace = true })},
		{"TRACE long", words("--trace fcount"), "", plistWant(func(o *PlistOptions) { o.Trace = true })},
		{"FLAT", words("/flat fcount"), "", plistWant(func(o *PlistOptions) { o.Flat = true })},
		{"FLAT long", words("--flat fcount"), "", plistWant(func(o *PlistOptions) { o.Flat = true })},
		{"INDENT", words("/ind fcount"), "", plistWant(func(o *PlistOptions) { o.Indent = true })},
		{"INDENT long", words("--indent fcount"), "", plistWant(func(o *PlistOptions) { o.Indent = true })},
		{"FLAT then INDENT", words("/flat /indent fcount"), "", plistWant(func(o *PlistOptions) { o.Indent = true })},
		{"INDENT then FLAT", words("--indent /flat fcount"), "", plistWant(func(o *PlistOptions) { o.Flat = true })},
		{"TAB", words("/tab 8 fcount"), "", plistWant(func(o *PlistOptions) { o.TabWidth = 8 })},
		{"TAB zero", words("/nologo /tab 0 fcount"), "", plistWant(func(o *PlistOptions) { o.NoLogo, o.TabWidth = true, 0 })},
		{"TAB long", words("--tab-width=4 fcount"), "", plistWant(func(o *PlistOptions) { o.TabWidth = 4 })},
		{"NOLOGO NOL", words("/nol /sn fcount"), "", plistWant(func(o *PlistOptions) { o.NoLogo, o.Sort = true, SortName })},
		{"NOLOGO long", words("--nologo fcount"), "", plistWant(func(o *PlistOptions) { o.NoLogo = true })},
		// plist-env-var
		{"env", words("fcount"), "/sn /nologo", plistWant(func(o *PlistOptions) { o.NoLogo, o.Sort = true, SortName })},
		{"two inputs", words("/nologo fcount other"), "", plistWant(func(o *PlistOptions) { o.NoLogo = true })},
		{"with extension", words("withext.pbt"), "", plistWant(func(o *PlistOptions) { o.Input = "withext.pbt" })},
		{"path input", words("/home/u/prog.pbt"), "", plistWant(func(o *PlistOptions) { o.Input = "/home/u/prog.pbt" })},

		{"help q", words("/?"), "", plistUsage(func(o *PlistOptions) { o.Help = UsageHelp })},
		{"help dash q", words("-?"), "", plistUsage(func(o *PlistOptions) { o.Help = UsageHelp })},
		{"help h", words("/H"), "", plistUsage(func(o *PlistOptions) { o.Help = UsageHelp })},
		{"help HELP with input", words("/help fcount"), "", plistWant(func(o *PlistOptions) { o.Help = UsageHelp })},
		{"long help", words("--help"), "", plistUsage(func(o *PlistOptions) { o.Help = LongHelp })},
		{"no arguments", nil, "", plistUsage(func(o *PlistOptions) { o.Help = UsageHelp })},
		{"nologo only", words("/nologo"), "", plistUsage(func(o *PlistOptions) { o.NoLogo, o.Help = true, UsageHelp })},
		// plist-no-input: options but no input print the usage.
		{"no input", words("/nologo /t"), "", plistUsage(func(o *PlistOptions) {
			o.NoLogo, o.TabDelimited, o.Help = true, true, UsageHelp
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, warnings, err := parseAny(t, Plist, tt.args, tt.env, nil)
			if err != nil {
				t.Fatalf("plist %q: %v", tt.args, err)
			}
			if len(warnings) > 0 {
				t.Errorf("plist %q: unexpected warnings %q", tt.args, warnings)
			}
			if diff := cmp.Diff(tt.want, opts, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plist %q: options (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestPlistSortOverride is plist-sort-override: the second sort option
// wins with PRF4101, also against the environment variable's.
func TestPlistSortOverride(t *testing.T) {
	sc := "plist: warning PRF4101: option SC overrides an earlier option"
	tests := []struct {
		args, env string
		sort      SortKey
		warnings  []string
	}{
		{"/nologo /sn /sc fcount", "", SortCount, []string{sc}},
		{"/sc fcount", "/sn", SortCount, []string{sc}},
		{"/sc /sc fcount", "", SortCount, []string{sc}},
		{"/sl /sn /stc fcount", "", SortChildTime, []string{
			"plist: warning PRF4101: option SN overrides an earlier option",
			"plist: warning PRF4101: option STC overrides an earlier option",
		}},
		{"--sort=time /sc fcount", "", SortCount, []string{sc}},
		{"/sc --sort=name fcount", "", SortName, []string{"plist: warning PRF4101: option --sort overrides an earlier option"}},
		{"/sc /flat /indent /tab 3 /tab 4 /c 2 /c 3 fcount", "", SortCount, nil},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			opts, warnings, err := parseAny(t, Plist, words(tt.args), tt.env, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := opts.(*PlistOptions).Sort; got != tt.sort {
				t.Errorf("Sort = %q, want %q", got, tt.sort)
			}
			if diff := cmp.Diff(tt.warnings, warnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}
