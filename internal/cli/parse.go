package cli

import (
	"strings"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// Parse reads a command line: args without the program's name, after the
// tool's environment variable, read through env (nil reads none). Warnings
// (PRF4101) go to warn (nil drops them) in command-line order before Parse
// returns; callers that print the banner first collect them.
//
// The command is never nil: after an error its NoLogo still tells whether
// /NOLOGO came first. Every error is a usage [prf.Diagnostic], and the first
// one ends the parse. The pass is linear in the number of tokens.
func (t *Tool[T]) Parse(args []string, env func(string) string, warn func(*prf.Diagnostic)) (*Command[T], error) {
	envValue := ""
	if env != nil {
		envValue = env(t.Env)
	}
	return t.parse(args, envValue, readFile, warn)
}

func (t *Tool[T]) parse(args []string, env string, read readFunc, warn func(*prf.Diagnostic)) (*Command[T], error) {
	p := &parser[T]{
		tool:  t,
		s:     newTokenStream(args, env, read),
		warn:  warn,
		count: make(map[*Option[T]]int),
		seen:  make(map[string]bool),
	}
	p.cmd.Options = t.Defaults()
	p.cmd.Empty = len(args) == 0
	err := p.run()
	return &p.cmd, err
}

// parser holds the state of one left-to-right pass.
type parser[T any] struct {
	tool  *Tool[T]
	s     *tokenStream
	warn  func(*prf.Diagnostic)
	cmd   Command[T]
	count map[*Option[T]]int // occurrences, for Option.Max
	seen  map[string]bool    // override groups already given
}

func (p *parser[T]) run() error {
	for {
		tok, ok, err := p.s.next()
		if err != nil || !ok {
			return err
		}
		switch {
		case tok == "--":
			return p.endOfOptions()
		case strings.HasPrefix(tok, "--"):
			err = p.long(tok)
		case isOptionToken(tok):
			err = p.short(tok)
		default:
			err = p.name(tok)
		}
		if err != nil || (p.tool.Program && len(p.cmd.Names) > 0) {
			return err
		}
	}
}

// endOfOptions takes every token after "--" as a name, as typed, like GNU
// tools do.
func (p *parser[T]) endOfOptions() error {
	for tok, ok := p.s.nextRaw(); ok; tok, ok = p.s.nextRaw() {
		if err := p.name(tok); err != nil || p.tool.Program {
			return err
		}
	}
	return nil
}

// isOptionToken reports whether tok is written as an option: it begins with
// - or /, except that a token beginning with / and holding a second / is a
// path (/usr/bin/ls).
func isOptionToken(tok string) bool {
	switch {
	case strings.HasPrefix(tok, "-"):
		return true
	case strings.HasPrefix(tok, "/"):
		return !strings.Contains(tok[1:], "/")
	}
	return false
}

// name records a program, module or input name. For PROFILE the first one
// is the program and takes every later token as its arguments.
func (p *parser[T]) name(tok string) error {
	if limit := p.tool.MaxNames; limit > 0 && len(p.cmd.Names) == limit {
		return prf.TooManyModules(limit)
	}
	p.cmd.Names = append(p.cmd.Names, tok)
	if p.tool.Program {
		p.cmd.Args = p.s.rest()
	}
	return nil
}

// short handles /X and -X: the original's options.
func (p *parser[T]) short(tok string) error {
	word := tok[1:]
	if word == "" {
		return prf.MissingOptionSpecifier()
	}
	o := p.tool.lookupShort(word)
	if o == nil {
		// Glued arguments (/OIfile, /c5) land here too, as in the
		// original: PRF1102 names the token as typed.
		return prf.InvalidOption(word)
	}
	if o.Arg == NoArg {
		return p.apply(o, o.Name, "")
	}
	arg, ok, err := p.argument(o.Name)
	if err != nil {
		return err
	}
	if !ok {
		// An option that needs an argument as the last token is not
		// diagnosed: the original took the token as a name (prep /fc
		// prog /ot opened a program "/ot"; plist prog /c listed prog).
		return p.name(tok)
	}
	return p.apply(o, o.Name, arg)
}

// long handles GNU long options: --name, --name=value, --name value, and
// the long forms that hold their value (--sort=count). A name may be cut
// short to any prefix that no other long option shares (--nolo), as GNU
// tools accept; a name typed whole wins over the longer names it begins
// (profile's --trace over --trace-limit).
func (p *parser[T]) long(tok string) error {
	o, value, hasValue, err := p.tool.matchLong(tok)
	if err != nil {
		return err
	}
	display := "--" + o.Long
	if o.Arg == NoArg {
		if hasValue {
			return prf.InvalidOption(tok)
		}
		return p.apply(o, display, "")
	}
	if !hasValue {
		if value, _, err = p.argument(display); err != nil {
			return err
		}
	}
	if value == "" { // given empty, or the command line ended
		return prf.MissingArgument(display)
	}
	return p.apply(o, display, value)
}

// argument reads the argument of the option named display; ok is false when
// the command line ends first.
func (p *parser[T]) argument(display string) (arg string, ok bool, err error) {
	arg, ok, err = p.s.next()
	if err != nil || !ok {
		return "", ok, err
	}
	if arg == "" || p.looksLikeOption(arg) {
		return "", false, prf.MissingArgument(display)
	}
	return arg, true, nil
}

// looksLikeOption reports whether an option's argument is really an option,
// so that the argument is missing (PRF1103: plist /pl -1). Every token
// beginning with - is one, as in the original. A token beginning with / is
// one only if it names an option of the tool: on Linux /tmp or /usr/src/x
// are directories.
func (p *parser[T]) looksLikeOption(tok string) bool {
	if strings.HasPrefix(tok, "-") || tok == "/" {
		return true
	}
	return isOptionToken(tok) && p.tool.lookupShort(tok[1:]) != nil
}

// apply records one occurrence of option o, named display in diagnostics,
// with argument arg.
func (p *parser[T]) apply(o *Option[T], display, arg string) error {
	p.count[o]++
	if o.Max > 0 && p.count[o] > o.Max {
		return prf.RepeatedOption(display, o.Max)
	}
	v := Value{Text: arg}
	if o.Arg == Number {
		n, ok := parseNumber(arg)
		if !ok {
			return prf.NotNumeric(display)
		}
		v.Number = n
	}
	if o.Override != "" {
		if p.seen[o.Override] && p.warn != nil {
			p.warn(prf.Overrides(display))
		}
		p.seen[o.Override] = true
	}
	switch o.builtin {
	case usageOption:
		p.cmd.Help = UsageHelp
	case longHelpOption:
		p.cmd.Help = LongHelp
	case versionOption:
		p.cmd.Help = VersionHelp
	case manOption:
		p.cmd.Help = ManHelp
	case noLogoOption:
		p.cmd.NoLogo = true
	default:
		o.Set(&p.cmd.Options, v)
	}
	return nil
}

// maxNumber is the largest numeric argument: the original's were 32-bit.
const maxNumber = 1<<31 - 1

// parseNumber parses a decimal number of digits only: no sign (a - makes
// the original's PRF1103), no base prefix (010 is ten), at most maxNumber.
func parseNumber(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	v := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
		if v > maxNumber {
			return 0, false
		}
	}
	return v, true
}
