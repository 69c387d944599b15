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
	"Long options (--name) take their argument after = or as the next word, and\n" +
	"may be cut short to a prefix no other long option begins with (--nolo).\n"

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
	b.WriteString(wrap(fmt.Sprintf("The environment variable %s is read before the arguments; @FILE reads "+
		"arguments from FILE. Exit status: %s.", t.Env, t.exitStatus()), 74))
	return b.String()
}

// exitStatus lists the tool's exit statuses, without a final period.
func (t *Tool[T]) exitStatus() string {
	s := "0 success, 1 fatal error, 2 invalid command line"
	if t.ExitStatus != "" {
		s += ", " + t.ExitStatus
	}
	return s
}

// wrap breaks text into lines of at most width bytes at spaces (a longer
// word has a line of its own), each ending in a line end.
func wrap(text string, width int) string {
	var b strings.Builder
	line := 0
	for _, w := range strings.Fields(text) {
		switch {
		case line == 0:
		case line+1+len(w) > width:
			b.WriteString("\n")
			line = 0
		default:
			b.WriteString(" ")
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	b.WriteString("\n")
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

// manPage returns the --help text as a manual page in man(7) macros: the
// same head, sections, options and foot, so that `man prep` and `prep
// --help` cannot disagree. make install writes it to share/man/man1.
func (t *Tool[T]) manPage() string {
	var b strings.Builder
	// The head is "Usage: NAME ..." lines ("  or:  NAME ..."), then the
	// description; its first sentence names the page.
	var synopses, desc []string
	for _, l := range strings.Split(strings.TrimSuffix(t.HelpHead, "\n"), "\n") {
		if u, ok := strings.CutPrefix(strings.TrimSpace(l), "Usage: "); ok {
			synopses = append(synopses, u)
		} else if u, ok := strings.CutPrefix(strings.TrimSpace(l), "or:  "); ok {
			synopses = append(synopses, u)
		} else {
			desc = append(desc, l)
		}
	}
	summary := strings.Join(desc, " ")
	if i := strings.Index(summary, ". "); i >= 0 {
		summary = summary[:i]
	}
	summary = strings.TrimSuffix(summary, ".")
	if summary != "" {
		summary = strings.ToLower(summary[:1]) + summary[1:]
	}
	fmt.Fprintf(&b, ".TH %s 1 \"\" \"sprof %s\" \"Source Profiler for Linux\"\n", strings.ToUpper(t.Name), roff(Version))
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", t.Name, roff(summary))
	b.WriteString(".SH SYNOPSIS\n")
	for i, u := range synopses {
		if i > 0 {
			b.WriteString(".br\n")
		}
		fmt.Fprintf(&b, ".B %s\n%s\n", t.Name, roff(strings.TrimPrefix(u, t.Name+" ")))
	}
	b.WriteString(".SH DESCRIPTION\n")
	for _, l := range desc {
		b.WriteString(roffLine(l))
	}
	b.WriteString(".PP\n")
	for _, l := range strings.Split(strings.TrimSuffix(syntaxHelp, "\n"), "\n") {
		b.WriteString(roffLine(l))
	}
	b.WriteString(".SH OPTIONS\n")
	for _, section := range t.HelpSections {
		fmt.Fprintf(&b, ".SS %s\n", roff(strings.TrimSuffix(section, ":")))
		for i := range t.Options {
			if o := &t.Options[i]; o.Section == section {
				fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", roff(t.helpName(o)), roff(o.Help))
			}
		}
	}
	b.WriteString(".SH NOTES\n")
	for _, l := range strings.Split(strings.TrimSuffix(t.HelpFoot, "\n"), "\n") {
		b.WriteString(roffLine(l))
	}
	fmt.Fprintf(&b, ".SH ENVIRONMENT\n.TP\n.B %s\nread before the arguments, as more arguments.\n", t.Env)
	fmt.Fprintf(&b, ".SH EXIT STATUS\n%s.\n", roff(t.exitStatus()))
	b.WriteString(".SH SEE ALSO\n")
	var see []string
	for _, n := range []string{"prep", "profile", "plist", "fcount"} {
		if n != t.Name {
			see = append(see, ".BR "+n+" (1)")
		}
	}
	b.WriteString(strings.Join(see, ",\n") + "\n")
	return b.String()
}

// roff escapes text for a man page: backslashes and the hyphens of
// options.
func roff(s string) string {
	return strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
}

// roffLine returns one line of running text, escaped, with a leading dot
// or quote kept from being read as a request.
func roffLine(s string) string {
	s = roff(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s + "\n"
}
