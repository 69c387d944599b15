package cli

import (
	"strconv"
	"strings"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// The normaliser reads a command line the way the original did and rewrites
// it for kong. It owns every diagnostic of the command line because kong
// cannot give them: kong's errors carry no PRF numbers and other texts
// ("unknown flag --bogus"), it knows neither /X options nor their
// abbreviations in table order, nor response files, nor a limit on repeated
// flags, and its last-wins groups are silent where PREP /SF and the PLIST
// sorts warn with PRF4101. Kong then only ever parses canonical long options
// ("--name" or "--name=value") followed by "--" and the positional
// arguments.

// config is what differs between the three tools.
type config struct {
	tool  Tool
	table optionTable
	// maxPositionals bounds the names on the command line (PREP: 8 modules,
	// PRF1423); 0 is unlimited.
	maxPositionals int
	// program makes the first positional argument end the options: it is
	// PROFILE's program and every later token its argument, untouched.
	program bool
}

// normalized is a command line rewritten for kong.
type normalized struct {
	flags       []string // canonical kong options, in command-line order
	positionals []string
	programArgs []string // PROFILE: the tokens after the program, as typed
	noLogo      bool     // /NOLOGO was seen (before an error, if any)
}

// kongArgs returns the argument vector kong parses.
func (n *normalized) kongArgs() []string {
	args := append([]string(nil), n.flags...)
	if len(n.positionals) > 0 {
		args = append(args, "--")
		args = append(args, n.positionals...)
		args = append(args, n.programArgs...)
	}
	return args
}

// normalizer holds the state of one left-to-right pass.
type normalizer struct {
	cfg   *config
	s     *tokenStream
	warn  func(error)
	out   normalized
	count map[*option]int // occurrences, for option.max
	seen  map[string]bool // override groups already given
}

// normalize reads the whole command line. On error the result is still
// valid for noLogo.
func normalize(cfg *config, args []string, env string, read readFunc, warn func(error)) (*normalized, error) {
	n := &normalizer{
		cfg:   cfg,
		s:     newTokenStream(args, env, read),
		warn:  warn,
		count: map[*option]int{},
		seen:  map[string]bool{},
	}
	err := n.run()
	return &n.out, err
}

func (n *normalizer) run() error {
	for {
		tok, ok, err := n.s.next()
		if err != nil || !ok {
			return err
		}
		switch {
		case tok == "--":
			return n.endOfOptions()
		case strings.HasPrefix(tok, "--"):
			err = n.long(tok)
		case isOptionToken(tok):
			err = n.short(tok)
		default:
			err = n.positional(tok)
		}
		if err != nil {
			return err
		}
	}
}

// endOfOptions takes every token after "--" as a name, as typed, like GNU
// tools do.
func (n *normalizer) endOfOptions() error {
	for tok, ok := n.s.nextRaw(); ok; tok, ok = n.s.nextRaw() {
		if err := n.positional(tok); err != nil {
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

// positional records a program, module or input name. For PROFILE the
// first one is the program and takes every later token, which ends the
// command line.
func (n *normalizer) positional(tok string) error {
	if limit := n.cfg.maxPositionals; limit > 0 && len(n.out.positionals) == limit {
		return usageErrorf(1423, "number of modules exceeds %d", limit)
	}
	n.out.positionals = append(n.out.positionals, tok)
	if n.cfg.program {
		n.out.programArgs = n.s.rest()
	}
	return nil
}

// short handles /X and -X: the original's options.
func (n *normalizer) short(tok string) error {
	word := tok[1:]
	if word == "" {
		return usageErrorf(1101, "missing option specifier")
	}
	o := n.cfg.table.lookupShort(word)
	if o == nil {
		// Glued arguments (/OIfile, /c5) land here too, as in the
		// original: PRF1102 names the token as typed.
		return usageErrorf(1102, "%s: invalid option", word)
	}
	if o.arg == noArg {
		return n.add(o, o.name, "")
	}
	arg, ok, err := n.argument(o.name)
	if err != nil {
		return err
	}
	if !ok {
		// An option that needs an argument as the last token is not
		// diagnosed: the original took the token as a name (prep /fc
		// prog /ot opened a program "/ot"; plist prog /c listed prog).
		return n.positional(tok)
	}
	return n.add(o, o.name, arg)
}

// long handles GNU long options: --name, --name=value, --name value.
func (n *normalizer) long(tok string) error {
	name, value, hasValue := strings.Cut(tok[2:], "=")
	o := n.cfg.table.lookupLong(name)
	if o == nil || (o.arg == noArg && hasValue) {
		return usageErrorf(1102, "%s: invalid option", tok)
	}
	display := "--" + o.long
	if o.arg == noArg {
		return n.add(o, display, "")
	}
	if !hasValue {
		var err error
		if value, _, err = n.argument(display); err != nil {
			return err
		}
	}
	if value == "" { // given empty, or the command line ended
		return missingArgument(display)
	}
	if !o.allows(value) {
		return usageErrorf(1102, "%s: invalid option", tok)
	}
	return n.add(o, display, value)
}

// argument reads the argument of the option named display; ok is false when
// the command line ends first.
func (n *normalizer) argument(display string) (arg string, ok bool, err error) {
	arg, ok, err = n.s.next()
	if err != nil || !ok {
		return "", ok, err
	}
	if arg == "" || n.looksLikeOption(arg) {
		return "", false, missingArgument(display)
	}
	return arg, true, nil
}

// missingArgument is PRF1103 for the option named display.
func missingArgument(display string) error {
	return usageErrorf(1103, "%s option requires an additional argument", display)
}

// looksLikeOption reports whether an option's argument is really an option,
// so that the argument is missing (PRF1103: plist /pl -1). Every token
// beginning with - is one, as in the original. A token beginning with / is
// one only if it names an option of the tool: on Linux /tmp or /usr/src/x
// are directories.
func (n *normalizer) looksLikeOption(tok string) bool {
	if strings.HasPrefix(tok, "-") || tok == "/" {
		return true
	}
	return isOptionToken(tok) && n.cfg.table.lookupShort(tok[1:]) != nil
}

// add records one occurrence of option o, named display in diagnostics,
// with argument arg.
func (n *normalizer) add(o *option, display, arg string) error {
	n.count[o]++
	if o.max > 0 && n.count[o] > o.max {
		return usageErrorf(1105, "%s option specified more than %d times", display, o.max)
	}
	if o.arg == numberArg {
		v, ok := parseNumber(arg)
		if !ok {
			return usageErrorf(1104, "%s option requires a numeric parameter", display)
		}
		// Canonical decimal: kong's strconv base 0 would read 010 as octal.
		arg = strconv.Itoa(v)
	}
	if o.override != "" {
		if n.seen[o.override] && n.warn != nil {
			n.warn(prf.Errorf(4101, "option %s overrides an earlier option", display))
		}
		n.seen[o.override] = true
	}
	if o.nologo {
		n.out.noLogo = true
	}
	n.out.flags = append(n.out.flags, o.canonical(arg))
	return nil
}

// maxNumber is the largest numeric argument: the original's were 32-bit.
const maxNumber = 1<<31 - 1

const digits = "0123456789"

// parseNumber parses a decimal number of digits only: no sign (a - makes
// the original's PRF1103), no base prefix, at most maxNumber.
func parseNumber(s string) (int, bool) {
	if s == "" || strings.Trim(s, digits) != "" {
		return 0, false
	}
	s = strings.TrimLeft(s, "0")
	if len(s) > len(strconv.Itoa(maxNumber)) {
		return 0, false
	}
	v := 0
	for _, c := range []byte(s) {
		v = v*10 + int(c-'0')
	}
	return v, v <= maxNumber
}
