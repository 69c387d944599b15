// Command prep prepares a program for profiling and merges runs, as the
// original PREP did:
//
//	prep [options] program [library...]     phase I: writes program.pbi and an empty program.pbt
//	prep /M program                          phase II: adds program.pbo into program.pbt
//
// See prep /? and prep --help, and docs/ in the repository.
package main

import (
	"io"
	"os"
	"path/filepath"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/cli"
	"github.com/sourceprofiler/sprof/internal/prep"
	"github.com/sourceprofiler/sprof/internal/prf"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	report := func(severity string, err error) { cli.Prep.Report(stderr, severity, err) }
	var warnings []error
	opts, err := cli.ParsePrep(args, os.Getenv, cli.Collect(&warnings))
	if status, done := cli.Prep.Start(stdout, stderr, opts.NoLogo, opts.Help, warnings, err); done {
		return status
	}
	warn := func(err error) { report("warning", err) }
	if opts.Merge != "" || opts.InputPBT != "" || len(opts.InputPBOs) > 0 {
		err = merge(opts, warn)
	} else {
		err = prepare(opts, warn)
	}
	if err != nil {
		report("fatal error", err)
		return 1
	}
	return 0
}

// prepare is phase I.
func prepare(opts *cli.PrepOptions, warn func(error)) error {
	if err := notYet(opts); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	specs, err := prep.DefaultSpecs(filepath.Dir(self), os.Getenv, cwd, warn)
	if err != nil {
		return err
	}
	for _, s := range opts.Specs {
		specs = append(specs, prep.Spec{Op: specOp(s.Op), Text: s.Text})
	}
	programs := make([]string, len(opts.Programs))
	for i, p := range opts.Programs {
		path, err := cli.LookPath(p)
		if err != nil {
			// BuildPlan names the file as typed in PRF1011.
			path = p
		}
		programs[i] = path
	}
	plan, err := prep.BuildPlan(prep.Options{
		Method:      opts.Method,
		Programs:    programs,
		Specs:       specs,
		Start:       opts.Start,
		Attribution: opts.Attribution,
		Stack:       opts.Stack,
		Calibration: int64(opts.Calibrate),
		Warn:        warn,
	})
	if err != nil {
		return err
	}
	pbi := cli.WithExt(opts.OutputPBI, ".pbi")
	if pbi == "" {
		pbi = cli.DataName(opts.Programs[0], ".pbi")
	}
	pbt := cli.WithExt(opts.OutputPBT, ".pbt")
	if pbt == "" {
		pbt = cli.DataName(opts.Programs[0], ".pbt")
	}
	return prep.WriteOutputs(plan, pbi, pbt)
}

// notYet refuses the options of later versions with a clear message rather
// than ignoring them.
func notYet(opts *cli.PrepOptions) error {
	var what string
	switch {
	case opts.Method == datafile.FuncTiming:
		what = "function timing (/FT, the default type: give /FC or /FV)"
	case opts.Method == datafile.LineCounting:
		what = "line counting (/LC)"
	case opts.Method == datafile.LineCoverage:
		what = "line coverage (/LV)"
	case opts.Method == datafile.FuncSampling:
		what = "function sampling (/FS)"
	case opts.Start != "":
		what = "the start function option (/SF)"
	case opts.Attribution:
		what = "attribution (/AT)"
	case opts.Calibrate >= 0:
		what = "overhead calibration (/CB)"
	default:
		return nil
	}
	return prf.Errorf(1001, "%s is not available yet in this version", what)
}

func specOp(op cli.SpecOp) prep.SpecOp {
	switch op {
	case cli.Exclude:
		return prep.Exclude
	case cli.ExcludeAll:
		return prep.ExcludeAll
	}
	return prep.Include
}

// merge is phase II: /M base, or /IT in [/IO run]... /OT out.
func merge(opts *cli.PrepOptions, warn func(error)) error {
	in := cli.WithExt(opts.InputPBT, ".pbt")
	out := cli.WithExt(opts.OutputPBT, ".pbt")
	var pbos []string
	if opts.Merge != "" {
		if in == "" {
			in = opts.Merge + ".pbt"
		}
		if out == "" {
			out = opts.Merge + ".pbt"
		}
		pbos = append(pbos, opts.Merge+".pbo")
	}
	for _, p := range opts.InputPBOs {
		pbos = append(pbos, cli.WithExt(p, ".pbo"))
	}
	switch {
	case in == "":
		return prf.Errorf(1462, "no PBT input file specified")
	case out == "":
		return prf.Errorf(1461, "no PBT output file specified")
	}
	return prep.Merge(in, pbos, out, warn)
}
