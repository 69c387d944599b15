package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageGoldens compares the usage texts byte for byte with the
// original's, CR LF turned into LF, and checks that each captured usage
// command line asks for the usage.
func TestUsageGoldens(t *testing.T) {
	tests := []struct {
		golden string
		tool   Tool
		args   string
	}{
		{"usage/prep-help-q.out", Prep, "/?"},
		{"usage/prep-help-HELP.out", Prep, "/HELP"},
		{"usage/prep-help-h.out", Prep, "/h"},
		{"usage/prep-help-dash.out", Prep, "-?"},
		{"usage/prep-noargs.out", Prep, ""},
		{"usage/prep-nologo-help.out", Prep, "/nologo /?"},
		{"usage/profile-help-q.out", Profile, "/?"},
		{"usage/profile-help-HELP.out", Profile, "/HELP"},
		{"usage/profile-help-h.out", Profile, "/h"},
		{"usage/profile-help-dash.out", Profile, "-?"},
		{"usage/profile-noargs.out", Profile, ""},
		{"usage/profile-nologo-noargs.out", Profile, "/nologo"},
		{"usage/profile-nologo-help.out", Profile, "/nologo /?"},
		{"usage/plist-help-q.out", Plist, "/?"},
		{"usage/plist-help-HELP.out", Plist, "/HELP"},
		{"usage/plist-help-h.out", Plist, "/h"},
		{"usage/plist-help-dash.out", Plist, "-?"},
		{"usage/plist-noargs.out", Plist, ""},
		{"usage/plist-nologo-noargs.out", Plist, "/nologo"},
		{"usage/plist-nologo-help.out", Plist, "/nologo /?"},
		{"diag/profile-no-program.out", Profile, "/nologo /o named"},
		{"diag/plist-no-input.out", Plist, "/nologo /t"},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			opts, _, err := parseAny(t, tt.tool, words(tt.args), "", nil)
			if err != nil {
				t.Fatalf("%s %s: %v", tt.tool.Name, tt.args, err)
			}
			help := helpField(t, opts)
			if help != UsageHelp {
				t.Fatalf("%s %s: Help = %v, want UsageHelp", tt.tool.Name, tt.args, help)
			}
			data, err := os.ReadFile(filepath.Join(goldenDir, tt.golden))
			if os.IsNotExist(err) {
				t.Skipf("golden %s absent", tt.golden)
			}
			if err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(string(data), "\r\n", "\n")
			if got := tt.tool.HelpText(help); got != want {
				t.Errorf("%s %s: usage differs from %s\n got %q\nwant %q", tt.tool.Name, tt.args, tt.golden, got, want)
			}
		})
	}
}

// helpField returns the Help field of any options struct.
func helpField(t *testing.T, opts any) Help {
	t.Helper()
	switch o := opts.(type) {
	case *PrepOptions:
		return o.Help
	case *ProfileOptions:
		return o.Help
	case *PlistOptions:
		return o.Help
	}
	t.Fatalf("options of type %T", opts)
	return NoHelp
}

func TestUsageTextsShape(t *testing.T) {
	for _, tool := range []Tool{Prep, Profile, Plist} {
		t.Run(tool.Name, func(t *testing.T) {
			text := tool.HelpText(UsageHelp)
			if !strings.HasPrefix(text, strings.ToUpper(tool.Name)+" [options] ") {
				t.Errorf("usage begins %q", text[:min(len(text), 30)])
			}
			if strings.Contains(text, "\r") || !strings.HasSuffix(text, "\n") {
				t.Error("usage must have LF line ends and end in one")
			}
			if got := tool.HelpText(NoHelp); got != "" {
				t.Errorf("HelpText(NoHelp) = %q, want empty", got)
			}
		})
	}
}

// TestLongHelp checks that --help lists every option with its shortest
// abbreviation and its long form, within 80 columns.
func TestLongHelp(t *testing.T) {
	tables := map[Tool]optionTable{Prep: prepTable, Profile: profileTable, Plist: plistTable}
	for tool, table := range tables {
		t.Run(tool.Name, func(t *testing.T) {
			text := tool.HelpText(LongHelp)
			if !strings.HasPrefix(text, "Usage: "+tool.Name+" [OPTION]...") {
				t.Errorf("help begins %q", text[:min(len(text), 30)])
			}
			for i := range table {
				o := &table[i]
				line := "  " + table.helpName(o)
				if !strings.Contains(text, line+" ") {
					t.Errorf("help does not list %q", line)
				}
				if o.long != "" && !strings.Contains(line, "--"+o.long) {
					t.Errorf("help line %q lacks --%s", line, o.long)
				}
				if o.help == "" {
					t.Errorf("option %s/%s has no help", o.name, o.long)
				}
			}
			for _, line := range strings.Split(text, "\n") {
				if len(line) > 80 {
					t.Errorf("line longer than 80 columns: %q", line)
				}
			}
			if !strings.Contains(text, "environment variable "+tool.Env+" ") {
				t.Errorf("help does not name the variable %s", tool.Env)
			}
		})
	}
}

func TestHelpNames(t *testing.T) {
	tests := []struct {
		table optionTable
		name  string
		want  string
	}{
		{prepTable, "NOLOGO", "/NOL[OGO], --nologo"},
		{prepTable, "STACK", "/ST[ACK], --stack=N"},
		{prepTable, "EXCALL", "/EXCA[LL], --exclude-all"},
		{prepTable, "EXC", "/EXC, --exclude=SPEC"},
		{prepTable, "HELP", "/H[ELP]"},
		{prepTable, "?", "/?"},
		{plistTable, "TRACE", "/TR[ACE], --trace"},
		{plistTable, "T", "/T, --tab-delimited"},
		{plistTable, "TAB", "/TAB, --tab-width=N"},
		{plistTable, "SLS", "/SLS, --sort=line-summary"},
		{plistTable, "INDENT", "/IND[ENT], --indent"},
		{profileTable, "S", "/S, --sample-interval=N"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			o := tt.table.lookupShort(tt.name)
			if o == nil || o.name != tt.name {
				t.Fatalf("lookupShort(%q) = %v", tt.name, o)
			}
			if got := tt.table.helpName(o); got != tt.want {
				t.Errorf("helpName(%s) = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
}

func TestBanner(t *testing.T) {
	defer func(v string) { Version = v }(Version)
	Version = "9.8.7"
	tests := []struct {
		tool Tool
		want string
	}{
		{Prep, "prep: Source Profiler for Linux, version 9.8.7\n"},
		{Profile, "profile: Source Profiler for Linux, version 9.8.7\n"},
		{Plist, "plist: Source Profiler for Linux, version 9.8.7\n"},
	}
	for _, tt := range tests {
		if got := tt.tool.Banner(); got != tt.want {
			t.Errorf("%s banner = %q, want %q", tt.tool.Name, got, tt.want)
		}
	}
}

// TestAbbreviations checks the table-order rule of original.md §2.3: a
// token names the first option it is a prefix of, at its minimum length.
func TestAbbreviations(t *testing.T) {
	tests := []struct {
		table optionTable
		word  string
		want  string // option name, "" for none
	}{
		{prepTable, "E", ""},
		{prepTable, "EX", ""},
		{prepTable, "EXC", "EXC"},
		{prepTable, "exca", "EXCALL"},
		{prepTable, "EXCAL", "EXCALL"},
		{prepTable, "EXCALLS", ""},
		{prepTable, "F", ""},
		{prepTable, "h", "HELP"},
		{prepTable, "He", "HELP"},
		{prepTable, "I", ""},
		{prepTable, "IN", ""},
		{prepTable, "inc", "INC"},
		{prepTable, "M", "M"},
		{prepTable, "MERGE", ""},
		{prepTable, "N", ""},
		{prepTable, "NO", ""},
		{prepTable, "nol", "NOLOGO"},
		{prepTable, "O", ""},
		{prepTable, "S", ""},
		{prepTable, "SF", "SF"},
		{prepTable, "ST", "STACK"},
		{prepTable, "sta", "STACK"},
		{prepTable, "A", ""},
		{prepTable, "?", "?"},
		{prepTable, "??", ""},
		{profileTable, "a", "A"},
		{profileTable, "E", "E"},
		{profileTable, "ERR", ""},
		{profileTable, "N", ""},
		{profileTable, "NC", "NC"},
		{profileTable, "NOL", "NOLOGO"},
		{profileTable, "S", "S"},
		{profileTable, "X", "X"},
		{plistTable, "c", "C"},
		{plistTable, "F", "F"},
		{plistTable, "FL", ""},
		{plistTable, "FLA", ""},
		{plistTable, "flat", "FLAT"},
		{plistTable, "I", ""},
		{plistTable, "IN", ""},
		{plistTable, "IND", "INDENT"},
		{plistTable, "P", ""},
		{plistTable, "S", ""},
		{plistTable, "SL", "SL"},
		{plistTable, "SLS", "SLS"},
		{plistTable, "ST", "ST"},
		{plistTable, "STC", "STC"},
		{plistTable, "T", "T"},
		{plistTable, "TR", "TRACE"},
		{plistTable, "TRAC", "TRACE"},
		{plistTable, "TA", ""},
		{plistTable, "tab", "TAB"},
		{plistTable, "\u017f", ""}, // Long S folds to S under Unicode rules
	}
	for _, tt := range tests {
		t.Run(tt.word, func(t *testing.T) {
			got := ""
			if o := tt.table.lookupShort(tt.word); o != nil {
				got = o.name
			}
			if got != tt.want {
				t.Errorf("lookupShort(%q) = %q, want %q", tt.word, got, tt.want)
			}
		})
	}
}

// TestTablesMatchGrammar checks that every canonical flag of every table is
// a flag of its kong grammar.
func TestTablesMatchGrammar(t *testing.T) {
	tests := []struct {
		tool    Tool
		table   optionTable
		grammar func() any
	}{
		{Prep, prepTable, func() any { return &prepGrammar{} }},
		{Profile, profileTable, func() any { return &profileGrammar{} }},
		{Plist, plistTable, func() any { return &plistGrammar{} }},
	}
	for _, tt := range tests {
		for i := range tt.table {
			o := &tt.table[i]
			arg := ""
			switch o.arg {
			case numberArg:
				arg = "1"
			case stringArg:
				arg = "x"
				if o.choices != nil {
					arg = o.choices[0]
				}
			}
			if err := parseKong(tt.tool, tt.grammar(), []string{o.canonical(arg)}); err != nil {
				t.Errorf("%s %s: %v", tt.tool.Name, o.canonical(arg), err)
			}
		}
	}
}
