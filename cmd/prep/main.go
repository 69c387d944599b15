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
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/cli"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/prep"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	var warnings []*prf.Diagnostic
	cmd, err := tool.Parse(args, os.Getenv, func(d *prf.Diagnostic) { warnings = append(warnings, d) })
	if err == nil {
		err = checkInputs(cmd)
	}
	if status, done := tool.Start(stdout, stderr, cmd, warnings, err); done {
		return status
	}
	warn := func(d *prf.Diagnostic) { prf.Write(stderr, tool.Name, d) }
	if cmd.Options.phaseII() {
		err = prf.OutputOption(merge(&cmd.Options, warn), "/OT")
	} else {
		err = prf.OutputOption(prepare(&cmd.Options, cmd.Names, warn), "/OI and /OT")
	}
	if err != nil {
		prf.Write(stderr, tool.Name, err)
		return prf.ExitStatus(err)
	}
	return 0
}

// checkInputs applies the rules of original.md §2.9 and §3.1 for what a
// phase needs: no arguments at all asks for the usage; phase I needs a
// module (PRF1421), phase II without /M its .pbt input and output (PRF1462,
// PRF1461).
func checkInputs(cmd *cli.Command[options]) error {
	o := &cmd.Options
	switch {
	case cmd.Help != cli.NoHelp:
		return nil
	case cmd.Empty:
		cmd.Help = cli.NoInputHelp
		return nil
	case !o.phaseII() && len(cmd.Names) == 0:
		return prf.NoInput()
	case o.phaseII() && o.merge == "" && o.inputPBT == "":
		return prf.NoPBTInput()
	case o.phaseII() && o.merge == "" && o.outputPBT == "":
		return prf.NoPBTOutput()
	}
	return nil
}

// prepare is phase I.
func prepare(o *options, names []string, warn func(*prf.Diagnostic)) error {
	self, err := os.Executable()
	if err != nil {
		// profiler.ini is found beside PREP, through /proc/self/exe.
		return prf.CannotOpen("/proc/self/exe", err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return prf.NoWorkingDir(err)
	}
	defaults, err := prep.DefaultSpecs(filepath.Dir(self), os.Getenv, cwd, warn)
	if err != nil {
		return err
	}
	plan := o.plan
	plan.Specs = append(defaults, o.plan.Specs...)
	plan.Warn = warn
	for _, name := range names {
		path, err := cli.LookPath(name)
		if err != nil {
			// BuildPlan names the file as typed in PRF1011.
			path = name
		}
		plan.Programs = append(plan.Programs, path)
	}
	p, err := prep.BuildPlan(plan)
	if err != nil {
		return err
	}
	// The data files are named after the program as found on disk.
	pbi := cli.WithExt(o.outputPBI, ".pbi")
	if pbi == "" {
		pbi = cli.DataName(plan.Programs[0], ".pbi")
	}
	pbt := cli.WithExt(o.outputPBT, ".pbt")
	if pbt == "" {
		pbt = cli.DataName(plan.Programs[0], ".pbt")
	}
	// Phase I discards the runs waiting beside the database it replaces
	// (docs/linux.md, "Merging and concurrent runs").
	base := strings.TrimSuffix(pbt, filepath.Ext(pbt))
	return prep.WriteOutputs(p, pbi, pbt, func() []string { return cli.RunFiles(base) }, warn)
}

// merge is phase II: /M base, or /IT in [/IO run]... /OT out. It holds the
// directory's lock, so that merges and PROFILE's writes of runs at the same
// time all land.
func merge(o *options, warn func(*prf.Diagnostic)) error {
	if o.merge != "" && o.inputPBT == "" && o.outputPBT == "" && len(o.inputPBOs) == 0 {
		return mergePending(o.merge, warn)
	}
	in := cli.InputName(o.inputPBT, ".pbt")
	out := cli.WithExt(o.outputPBT, ".pbt")
	var pbos []string
	if o.merge != "" {
		if in == "" {
			in = cli.FindFile(o.merge + ".pbt")
		}
		if out == "" {
			out = in
		}
		pbos = append(pbos, cli.FindFile(o.merge+".pbo"))
	}
	for _, p := range o.inputPBOs {
		pbos = append(pbos, cli.InputName(p, ".pbo"))
	}
	unlock, err := datafile.LockDir(out)
	if err != nil {
		if _, serr := os.Stat(in); serr != nil {
			return prf.CannotOpen(in, serr) // as the merge would say first
		}
		return prf.CannotWrite(out, err)
	}
	defer unlock()
	return prep.Merge(in, pbos, out, warn)
}

// mergePending is prep /M base: every run of base.pbo and of the base.pbo.N
// files PROFILE wrote beside it that base.pbt does not hold yet. The
// numbered files are removed once merged; base.pbo stays, as the original
// left it.
func mergePending(base string, warn func(*prf.Diagnostic)) error {
	pbt := cli.FindFile(base + ".pbt")
	unlock, err := datafile.LockDir(pbt)
	if err != nil {
		if _, serr := os.Stat(pbt); serr != nil {
			return prf.CannotOpen(pbt, serr) // as the merge would say
		}
		return prf.CannotWrite(pbt, err)
	}
	defer unlock()
	base = strings.TrimSuffix(pbt, filepath.Ext(pbt))
	runs := cli.RunFiles(base)
	if len(runs) == 0 {
		runs = []string{base + ".pbo"} // PRF1011 names it
	}
	added, err := prep.MergePending(pbt, runs, warn)
	if err != nil {
		return err
	}
	for _, path := range added {
		if !strings.HasSuffix(path, ".pbo") { // base.pbo.N
			os.Remove(path)
		}
	}
	return nil
}
