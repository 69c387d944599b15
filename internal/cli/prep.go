package cli

import (
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
)

// SpecOp is what a selection option does.
type SpecOp int

// The selection options of PREP, applied left to right.
const (
	// Include is /INC SPEC, --include=SPEC.
	Include SpecOp = iota + 1
	// Exclude is /EXC SPEC, --exclude=SPEC.
	Exclude
	// ExcludeAll is /EXCALL, --exclude-all; its Text is empty.
	ExcludeAll
)

// Spec is one selection option of PREP (original.md §3.4).
type Spec struct {
	Op SpecOp
	// Text is the specification as typed: "parse.c(3-41,50-67)",
	// "libfoo.so", "std::*".
	Text string
}

// PrepOptions is a PREP command line.
type PrepOptions struct {
	// Method is the profile type: the last of /FC /FS /FT /FV /LC /LV, or
	// function timing when none is given.
	Method datafile.Method
	// Specs are /INC, /EXC and /EXCALL in command-line order (after the
	// environment variable's).
	Specs []Spec
	// Start is the /SF start function, or empty; the last one wins.
	Start string
	// Attribution is /AT.
	Attribution bool
	// Stack is the /STACK depth; 0, the default, is unlimited.
	Stack int
	// Calibrate is the /CB overhead, or -1 when not given.
	Calibrate int
	// Programs are the module names: the program, then shared libraries (at
	// most 8, PRF1423 beyond).
	Programs []string
	// Merge is the /M base name of phase II, or empty.
	Merge string
	// InputPBT is /IT, or empty.
	InputPBT string
	// InputPBOs are the /IO files in order (at most 8, PRF1105 beyond).
	InputPBOs []string
	// OutputPBI is /OI, or empty.
	OutputPBI string
	// OutputPBT is /OT, or empty.
	OutputPBT string
	// ModifiedImage is /OM.
	ModifiedImage bool
	// NoLogo is /NOLOGO: no banner.
	NoLogo bool
	// Help is the help asked for; when it is not NoHelp the other fields
	// need not be complete and PREP only prints [Tool.HelpText].
	Help Help
}

// PhaseII reports whether the command line merges runs (/M, /IT or /IO)
// rather than preparing programs (original.md §3.1).
func (o *PrepOptions) PhaseII() bool {
	return o.Merge != "" || o.InputPBT != "" || len(o.InputPBOs) > 0
}

// prepGrammar is PREP's canonical command line as kong reads it.
type prepGrammar struct {
	FunctionCounting bool     `name:"function-counting" lastwins:"method"`
	FunctionSampling bool     `name:"function-sampling" lastwins:"method"`
	FunctionTiming   bool     `name:"function-timing" lastwins:"method"`
	FunctionCoverage bool     `name:"function-coverage" lastwins:"method"`
	LineCounting     bool     `name:"line-counting" lastwins:"method"`
	LineCoverage     bool     `name:"line-coverage" lastwins:"method"`
	Select           []string `name:"select" sep:"none"` // include:SPEC, exclude:SPEC, exclude-all
	Start            string   `name:"start"`
	Attribution      bool     `name:"attribution"`
	Stack            int      `name:"stack"`
	Calibrate        int      `name:"calibrate" default:"-1"`
	Merge            string   `name:"merge"`
	InputPBT         string   `name:"input-pbt"`
	InputPBO         []string `name:"input-pbo" sep:"none"`
	OutputPBI        string   `name:"output-pbi"`
	OutputPBT        string   `name:"output-pbt"`
	ModifiedImage    bool     `name:"modified-image"`
	NoLogo           bool     `name:"nologo"`
	Usage            bool     `name:"usage" lastwins:"help"`
	Help             bool     `name:"help" lastwins:"help"`
	Programs         []string `arg:"" optional:""`
}

var prepConfig = config{tool: Prep, table: prepTable, maxPositionals: 8}

// ParsePrep reads PREP's command line: args without the program name, the
// environment through env (for the variable PREP; nil reads none). Warnings
// (PRF4101) go to warn in command-line order before ParsePrep returns;
// callers that print the banner first collect them.
//
// The options are never nil: after an error NoLogo still tells whether
// /NOLOGO was seen, so the caller can print the banner as the original did.
// Every error is a [UsageError] carrying a [prf.Error].
func ParsePrep(args []string, env func(string) string, warn func(error)) (*PrepOptions, error) {
	return parsePrep(args, env, warn, readFile)
}

func parsePrep(args []string, env func(string) string, warn func(error), read readFunc) (*PrepOptions, error) {
	var g prepGrammar
	n, err := parseTool(&prepConfig, &g, args, env, read, warn)
	if err != nil {
		return &PrepOptions{NoLogo: n.noLogo, Calibrate: -1}, err
	}
	o := &PrepOptions{
		Method:        prepMethod(&g),
		Specs:         prepSpecs(g.Select),
		Start:         g.Start,
		Attribution:   g.Attribution,
		Stack:         g.Stack,
		Calibrate:     g.Calibrate,
		Programs:      g.Programs,
		Merge:         g.Merge,
		InputPBT:      g.InputPBT,
		InputPBOs:     g.InputPBO,
		OutputPBI:     g.OutputPBI,
		OutputPBT:     g.OutputPBT,
		ModifiedImage: g.ModifiedImage,
		NoLogo:        g.NoLogo,
		Help:          helpOf(g.Usage, g.Help),
	}
	if len(args) == 0 && o.Help == NoHelp {
		// No arguments at all (the environment variable aside) is a
		// request for the usage; options without a program are not.
		o.Help = UsageHelp
	}
	if o.Help != NoHelp {
		return o, nil
	}
	return o, checkPrepInputs(o)
}

// checkPrepInputs applies the rules of original.md §2.9 and §3.1 for what a
// phase needs.
func checkPrepInputs(o *PrepOptions) error {
	switch {
	case !o.PhaseII() && len(o.Programs) == 0:
		return usageErrorf(1421, "no input specified")
	case o.PhaseII() && o.Merge == "" && o.InputPBT == "":
		return usageErrorf(1462, "no PBT input file specified")
	case o.PhaseII() && o.Merge == "" && o.OutputPBT == "":
		return usageErrorf(1461, "no PBT output file specified")
	}
	return nil
}

// prepMethod returns the profile type kong's last-wins group left set.
func prepMethod(g *prepGrammar) datafile.Method {
	switch {
	case g.FunctionCounting:
		return datafile.FuncCounting
	case g.FunctionSampling:
		return datafile.FuncSampling
	case g.FunctionCoverage:
		return datafile.FuncCoverage
	case g.LineCounting:
		return datafile.LineCounting
	case g.LineCoverage:
		return datafile.LineCoverage
	}
	return datafile.FuncTiming
}

// prepSpecs decodes the canonical --select values.
func prepSpecs(values []string) []Spec {
	var specs []Spec
	for _, v := range values {
		if text, ok := strings.CutPrefix(v, "include:"); ok {
			specs = append(specs, Spec{Op: Include, Text: text})
		} else if text, ok := strings.CutPrefix(v, "exclude:"); ok {
			specs = append(specs, Spec{Op: Exclude, Text: text})
		} else {
			specs = append(specs, Spec{Op: ExcludeAll})
		}
	}
	return specs
}
