package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// Version is the version printed in the banner. The build may set it with
// -ldflags "-X github.com/sourceprofiler/sprof/internal/cli.Version=...".
var Version = "0.1.0"

// Arg says whether an option takes an argument, and which.
type Arg uint8

const (
	// NoArg is an option without argument.
	NoArg Arg = iota
	// Text is a file, directory, function or selection.
	Text
	// Number is a decimal number, 0 to 2147483647.
	Number
)

// Value is the argument of one occurrence of an option.
type Value struct {
	// Text is the argument as typed ("" for an option without one).
	Text string
	// Number is its value for a [Number] option.
	Number int
}

// Option is one option of a tool: everything about it, in one place. The
// tool's table lists its options in the original's table order, which
// decides abbreviations and the order of the usage text, followed by the
// options that only have a long form.
type Option[T any] struct {
	// Name is the original's name in upper case ("EXC", "?"); empty for an
	// option that only has a long form (--help).
	Name string
	// Min is the shortest abbreviation of Name the original accepted
	// (original.md §2.3).
	Min int
	// Long is the GNU long form without its dashes ("exclude"). It may
	// hold a fixed value: "sort=count" is --sort=count.
	Long string
	// Arg is the argument the option takes.
	Arg Arg
	// Max is how many times the option may be given (PRF1105); 0 is
	// unlimited.
	Max int
	// Override names a group of options of which a second occurrence
	// replaces the first with warning PRF4101 (PREP /SF, PLIST's sorts).
	Override string
	// Usage is the option's line in the original's usage text, after
	// "/NAME<TAB>"; empty when the original's usage does not list it.
	Usage string
	// Section, Meta and Help make the --help text: the section the option
	// is listed in, the name of its argument, and what it does.
	Section string
	Meta    string
	Help    string
	// Set records one occurrence in the options. Later occurrences are
	// applied after earlier ones, so for a scalar the rightmost wins.
	Set func(o *T, v Value)

	builtin builtin
}

// builtin marks the options the parser handles itself.
type builtin uint8

const (
	notBuiltin builtin = iota
	usageOption
	longHelpOption
	noLogoOption
	versionOption
	manOption
)

// UsageOption is /HELP or /?: the original's usage text. text is its line
// in that text ("Display PREP usage").
func UsageOption[T any](name string, min int, text string) Option[T] {
	return Option[T]{Name: name, Min: min, Usage: text, Section: SectionOther,
		Help: "print the original's usage summary", builtin: usageOption}
}

// NoLogoOption is /NOLOGO.
func NoLogoOption[T any]() Option[T] {
	return Option[T]{Name: "NOLOGO", Min: 3, Long: "nologo", Usage: "Suppress copyright message",
		Section: SectionOther, Help: "do not print the banner", builtin: noLogoOption}
}

// LongHelpOption is --help.
func LongHelpOption[T any]() Option[T] {
	return Option[T]{Long: "help", Section: SectionOther, Help: "print this help", builtin: longHelpOption}
}

// VersionOption is --version.
func VersionOption[T any]() Option[T] {
	return Option[T]{Long: "version", Section: SectionOther, Help: "print the version and the licence", builtin: versionOption}
}

// ManOption is --man: this help as a manual page, which make install
// writes to share/man/man1.
func ManOption[T any]() Option[T] {
	return Option[T]{Long: "man", Section: SectionOther, Help: "print this help as a man(1) page", builtin: manOption}
}

// SectionOther is the --help section of the options every tool has.
const SectionOther = "Other options:"

// Help says which help text a command line asked for.
type Help int

const (
	// NoHelp means the tool should run.
	NoHelp Help = iota
	// UsageHelp is the original's usage text, asked for: /?, /H, /HELP,
	// -?.
	UsageHelp
	// NoInputHelp is the same text, for a command line that names no
	// input: no arguments at all, or PROFILE or PLIST without a program or
	// input (original.md §2.9). The tool has nothing to do: the usage
	// goes to stderr, with exit status 2, as a GNU tool answers a command
	// line without its operands (the original printed it on stdout and
	// exited 0).
	NoInputHelp
	// LongHelp is the GNU-style help of --help, listing every option with
	// its abbreviation and long form.
	LongHelp
	// VersionHelp is --version; ManHelp is --man, the --help text as a
	// manual page.
	VersionHelp
	ManHelp
)

// Tool is one of the three programs: its names and its options.
type Tool[T any] struct {
	// Name is the program's name in diagnostics ("prep").
	Name string
	// Env is the environment variable read before the arguments ("PREP").
	Env string
	// Options is the option table.
	Options []Option[T]
	// Defaults returns the options of an empty command line.
	Defaults func() T
	// MaxNames bounds the names (PREP: 8 modules, PRF1423); 0 is unlimited.
	MaxNames int
	// Program makes the first name end the options: it is PROFILE's
	// program, and every later token its argument, untouched.
	Program bool
	// UsageHead and UsageFoot surround the option lines of the original's
	// usage text.
	UsageHead, UsageFoot string
	// HelpHead, HelpSections and HelpFoot make the --help text.
	HelpHead     string
	HelpSections []string
	HelpFoot     string
	// ExitStatus lists, for --help and the man page's EXIT STATUS, the
	// exit statuses of the tool besides 0 (success), 1 (a fatal error) and
	// 2 (an invalid command line): "3 coverage below --fail-under".
	ExitStatus string
}

// Command is a parsed command line.
type Command[T any] struct {
	// Options are the tool's options, from its defaults and the command
	// line.
	Options T
	// Names are the arguments that are not options, in order: modules,
	// inputs, or PROFILE's program.
	Names []string
	// Args are PROFILE's program arguments: every token after the program
	// as typed, options and @ included.
	Args []string
	// Empty is true when the command line had no arguments at all (the
	// environment variable aside): a request for the usage.
	Empty bool
	// NoLogo is /NOLOGO. After a parse error it still tells whether
	// /NOLOGO came before the error, so that the banner is printed as the
	// original did.
	NoLogo bool
	// Help is the help asked for.
	Help Help
}

// Banner returns the one-line banner the tool writes to stderr before
// anything else unless /NOLOGO was given (docs/design/linux.md: short, on
// stderr), with its line end.
func (t *Tool[T]) Banner() string {
	return t.Name + ": Source Profiler for Linux, version " + Version + "\n"
}

// HelpText returns the text to print on stdout for h, ending in a line
// end; it is empty for [NoHelp].
func (t *Tool[T]) HelpText(h Help) string {
	switch h {
	case UsageHelp, NoInputHelp:
		return t.usageText()
	case LongHelp:
		return t.longHelp()
	case VersionHelp:
		return t.version()
	case ManHelp:
		return t.manPage()
	}
	return ""
}

// version returns the --version text, as GNU tools print it.
func (t *Tool[T]) version() string {
	return t.Name + " (Source Profiler for Linux) " + Version + "\n" +
		"A reimplementation of the Microsoft Source Profiler's PREP, PROFILE and PLIST.\n" +
		"License: MIT. This is free software: you are free to change and redistribute it.\n"
}

// Start does what every command does after parsing its command line: the
// banner on stderr unless /NOLOGO (or --version, --man), the parse warnings, then the parse error
// (exit status 2 for a bad command line) or the help text on stdout (status
// 0), or on stderr for a command line without input ([NoInputHelp],
// status 2). It returns done when the command has nothing more to do,
// with its exit status.
func (t *Tool[T]) Start(stdout, stderr io.Writer, c *Command[T], warnings []*prf.Diagnostic, err error) (status int, done bool) {
	if !c.NoLogo && c.Help != VersionHelp && c.Help != ManHelp {
		io.WriteString(stderr, t.Banner())
	}
	for _, w := range warnings {
		prf.Write(stderr, t.Name, w)
	}
	switch {
	case err != nil:
		prf.Write(stderr, t.Name, err)
		return prf.ExitStatus(err), true
	case c.Help == NoInputHelp:
		io.WriteString(stderr, t.HelpText(c.Help))
		return 2, true
	case c.Help != NoHelp:
		io.WriteString(stdout, t.HelpText(c.Help))
		return 0, true
	}
	return 0, false
}

// lookupShort returns the option the text after a leading / or - names: the
// first entry of which it is a case-insensitive prefix at least Min
// characters long (original.md §2.3), or nil.
func (t *Tool[T]) lookupShort(word string) *Option[T] {
	for i := range t.Options {
		o := &t.Options[i]
		if o.Name == "" || len(word) < o.Min || len(word) > len(o.Name) {
			continue
		}
		if strings.EqualFold(word, o.Name[:len(word)]) {
			return o
		}
	}
	return nil
}

// lookupLong returns the option with the GNU long name (case-sensitive, as
// getopt_long) typed whole, or nil.
func (t *Tool[T]) lookupLong(name string) *Option[T] {
	if name == "" {
		return nil // the options without a long form
	}
	i := slices.IndexFunc(t.Options, func(o Option[T]) bool { return o.Long == name })
	if i < 0 {
		return nil
	}
	return &t.Options[i]
}

// matchLong returns the option a long option token (--name, --name=value)
// names, with its value when the token holds one: the option whose long
// form is the token exactly (--sort=count, --nologo), else the one whose
// name is the token's name exactly (--format=lcov), else the only one whose
// name begins with the token's name (--form=lcov, --nolo), as getopt_long
// takes abbreviations. A long form that holds its value (sort=count) is
// abbreviated in its name only (--so=count), its value typed whole. A
// prefix of several names is PRF1102, ambiguous, naming them; a name of
// none is PRF1102.
func (t *Tool[T]) matchLong(tok string) (o *Option[T], value string, hasValue bool, err error) {
	body := tok[2:]
	if o := t.lookupLong(body); o != nil && o.Arg == NoArg {
		return o, "", false, nil
	}
	name, value, hasValue := strings.Cut(body, "=")
	if o := t.lookupLong(name); o != nil {
		return o, value, hasValue, nil
	}
	var found []*Option[T]
	for i := range t.Options {
		c := &t.Options[i]
		key, fixed, isFixed := strings.Cut(c.Long, "=")
		if name != "" && strings.HasPrefix(key, name) && (!isFixed || (hasValue && value == fixed)) {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return nil, "", false, prf.InvalidOption(tok)
	case 1:
		if strings.Contains(found[0].Long, "=") {
			return found[0], "", false, nil // the value is the form's own
		}
		return found[0], value, hasValue, nil
	}
	names := make([]string, len(found))
	for i, c := range found {
		names[i] = "--" + c.Long
	}
	slices.Sort(names)
	return nil, "", false, prf.AmbiguousOption(tok, names)
}

// abbreviation returns the shortest prefix of o's name that selects o, which
// is longer than o.Min when an earlier entry takes the shorter prefixes (/T
// is tab-delimited, so TRACE needs /TR).
func (t *Tool[T]) abbreviation(o *Option[T]) string {
	for n := o.Min; n < len(o.Name); n++ {
		if t.lookupShort(o.Name[:n]) == o {
			return o.Name[:n]
		}
	}
	return o.Name
}

// Validate reports the first mistake in the tool's table: an option
// without a way to write it, without Set, or without help; a minimum
// length the name does not have; an option its own name does not select
// (an earlier row takes it); a long form given twice.
func (t *Tool[T]) Validate() error {
	longs := map[string]bool{}
	for i := range t.Options {
		o := &t.Options[i]
		label := o.Name
		if label == "" {
			label = "--" + o.Long
		}
		switch {
		case o.Name == "" && o.Long == "":
			return fmt.Errorf("%s option %d has neither a name nor a long form", t.Name, i)
		case o.Set == nil && o.builtin == notBuiltin:
			return fmt.Errorf("%s option %s has no Set", t.Name, label)
		case o.Help == "":
			return fmt.Errorf("%s option %s has no help", t.Name, label)
		case o.Name != "" && (o.Min < 1 || o.Min > len(o.Name) || strings.ToUpper(o.Name) != o.Name):
			return fmt.Errorf("%s option %s: minimum length %d, or not upper case", t.Name, label, o.Min)
		case o.Name != "" && t.lookupShort(o.Name) != o:
			return fmt.Errorf("%s option %s is taken by an earlier option", t.Name, label)
		case o.Long != "" && longs[o.Long]:
			return fmt.Errorf("%s long option --%s given twice", t.Name, o.Long)
		}
		longs[o.Long] = o.Long != ""
	}
	return nil
}
