package cli

import (
	"fmt"
	"strings"
)

// usageText returns the original's usage text (original.md §3.2, §4.2,
// §5.2), byte for byte but with LF line ends: the head, one line per option
// the original listed, in table order, and the foot.
func (t *Tool[T]) usageText() string {
	var b strings.Builder
	b.WriteString(t.UsageHead)
	for i := range t.Options {
		if o := &t.Options[i]; o.Usage != "" {
			fmt.Fprintf(&b, "/%s\t%s\n", o.Name, o.Usage)
		}
	}
	b.WriteString(t.UsageFoot)
	return b.String()
}

const syntaxHelp = "Options begin with / or - and ignore case; letters in [ ] may be left out.\n" +
	"Long options (--name) take their argument after = or as the next word.\n"

// longHelp returns the --help text: every option with its shortest
// abbreviation and its long form, by section.
func (t *Tool[T]) longHelp() string {
	var b strings.Builder
	b.WriteString(t.HelpHead)
	b.WriteString("\n")
	b.WriteString(syntaxHelp)
	for _, section := range t.HelpSections {
		fmt.Fprintf(&b, "\n%s\n", section)
		for i := range t.Options {
			if o := &t.Options[i]; o.Section == section {
				fmt.Fprintf(&b, "  %-26s %s\n", t.helpName(o), o.Help)
			}
		}
	}
	b.WriteString("\n")
	b.WriteString(t.HelpFoot)
	fmt.Fprintf(&b, "The environment variable %s is read before the arguments; @FILE reads\n", t.Env)
	b.WriteString("arguments from FILE. Exit status: 0 success, 1 fatal error, 2 invalid\n" +
		"command line.\n")
	return b.String()
}

// helpName returns the left column of an option in --help: "/NOL[OGO],
// --nologo", "/SC, --sort=count", "/?", "--help".
func (t *Tool[T]) helpName(o *Option[T]) string {
	var names []string
	if o.Name != "" {
		short := t.abbreviation(o)
		if rest := o.Name[len(short):]; rest != "" {
			short += "[" + rest + "]"
		}
		names = append(names, "/"+short)
	}
	switch {
	case o.Long != "" && o.Arg != NoArg:
		names = append(names, "--"+o.Long+"="+o.Meta)
	case o.Long != "":
		names = append(names, "--"+o.Long)
	}
	return strings.Join(names, ", ")
}
