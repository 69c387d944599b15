package cli

import "github.com/sourceprofiler/sprof/internal/prf"

// ProfileOptions is a PROFILE command line.
type ProfileOptions struct {
	// Input is the /I .pbi, or empty for the program's base name.
	Input string
	// Output is the /O .pbo, or empty for the .pbi's base name.
	Output string
	// ErrorFile is the /E file for PROFILE's diagnostics, or empty.
	ErrorFile string
	// Append is /A: append to ErrorFile.
	Append bool
	// ExitCode is /X: exit with the program's status.
	ExitCode bool
	// NewConsole is /NC.
	NewConsole bool
	// SampleInterval is /S, or -1 when not given.
	SampleInterval int
	// Program is the program to run, as typed.
	Program string
	// Args are the program's arguments, every token after Program as typed,
	// options and @ included.
	Args []string
	// NoLogo is /NOLOGO: no banner.
	NoLogo bool
	// Help is the help asked for, UsageHelp also when no program is given;
	// when it is not NoHelp PROFILE only prints [Tool.HelpText].
	Help Help
}

// profileGrammar is PROFILE's canonical command line as kong reads it. The
// normaliser already stopped at the program and puts "--" before it; the
// passthrough keeps kong from looking at the program's arguments even so.
type profileGrammar struct {
	Append         bool     `name:"append"`
	ErrorFile      string   `name:"error-file"`
	Input          string   `name:"input"`
	NewConsole     bool     `name:"new-console"`
	NoLogo         bool     `name:"nologo"`
	Output         string   `name:"output"`
	SampleInterval int      `name:"sample-interval" default:"-1"`
	ExitCode       bool     `name:"exit-code"`
	Usage          bool     `name:"usage" lastwins:"help"`
	Help           bool     `name:"help" lastwins:"help"`
	Program        string   `arg:"" optional:""`
	Args           []string `arg:"" optional:"" passthrough:"partial"`
}

var profileConfig = config{tool: Profile, table: profileTable, program: true}

// ParseProfile reads PROFILE's command line: args without the program name,
// the environment through env (for the variable PROFILE; nil reads none).
// Everything after the program's name is the program's (original.md §2.1).
// Warning PRF4111 (/A without /E) goes to warn before ParseProfile returns.
//
// The options are never nil: after an error NoLogo still tells whether
// /NOLOGO was seen. Every error is a [UsageError] carrying a [prf.Error].
func ParseProfile(args []string, env func(string) string, warn func(error)) (*ProfileOptions, error) {
	return parseProfile(args, env, warn, readFile)
}

func parseProfile(args []string, env func(string) string, warn func(error), read readFunc) (*ProfileOptions, error) {
	var g profileGrammar
	n, err := parseTool(&profileConfig, &g, args, env, read, warn)
	if err != nil {
		return &ProfileOptions{NoLogo: n.noLogo, SampleInterval: -1}, err
	}
	o := &ProfileOptions{
		Input:          g.Input,
		Output:         g.Output,
		ErrorFile:      g.ErrorFile,
		Append:         g.Append,
		ExitCode:       g.ExitCode,
		NewConsole:     g.NewConsole,
		SampleInterval: g.SampleInterval,
		Program:        g.Program,
		Args:           g.Args,
		NoLogo:         g.NoLogo,
		Help:           helpOf(g.Usage, g.Help),
	}
	if len(n.positionals) == 0 && o.Help == NoHelp {
		// No program (an empty name is one): the usage (original.md §2.9).
		o.Help = UsageHelp
	}
	if o.Help == NoHelp && o.Append && o.ErrorFile == "" && warn != nil {
		warn(prf.Errorf(4111, "no error file (/E) specified for /A option"))
	}
	return o, nil
}
