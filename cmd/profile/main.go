// Command profile runs a program under the profiler and writes the run's
// counts (.pbo), as the original PROFILE did:
//
//	profile [options] program [arguments...]
//
// Everything after the program's name is the program's. See profile /? and
// profile --help, and docs/ in the repository.
package main

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/cli"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/profile"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	var warnings []*prf.Diagnostic
	cmd, err := tool.Parse(args, os.Getenv, func(d *prf.Diagnostic) { warnings = append(warnings, d) })
	if err == nil && cmd.Help == cli.NoHelp {
		if len(cmd.Names) == 0 {
			// No program (an empty name is one): the usage (original.md §2.9).
			cmd.Help = cli.UsageHelp
		} else if cmd.Options.appendErrors && cmd.Options.errorFile == "" {
			warnings = append(warnings, prf.NoErrorFile())
		}
	}
	if status, done := tool.Start(stdout, stderr, cmd, warnings, err); done {
		return status
	}
	o := &cmd.Options
	diag := stderr
	if o.errorFile != "" {
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if o.appendErrors {
			flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		f, err := os.OpenFile(o.errorFile, flags, 0o644)
		if err != nil {
			prf.Write(stderr, tool.Name, prf.CannotOpen(o.errorFile, err))
			return 1
		}
		defer f.Close()
		diag = f
	}
	status, err := profileProgram(o, cmd.Names[0], cmd.Args, func(d *prf.Diagnostic) { prf.Write(diag, tool.Name, d) })
	if err != nil {
		prf.Write(diag, tool.Name, err)
		return prf.ExitStatus(err)
	}
	return status
}

// profileProgram runs the program and writes the .pbo; it returns the exit
// status of PROFILE.
func profileProgram(o *options, program string, args []string, warn func(*prf.Diagnostic)) (int, error) {
	pbi := cli.WithExt(o.input, ".pbi")
	if o.input == "" {
		pbi = cli.DataName(program, ".pbi")
	}
	pbi = cli.FindFile(pbi)
	pbo := cli.WithExt(o.output, ".pbo")
	if o.output == "" {
		pbo = strings.TrimSuffix(filepath.Base(pbi), filepath.Ext(pbi)) + ".pbo"
	}
	plan, err := datafile.OpenPlan(pbi)
	if err != nil {
		var fe *datafile.FileError
		if errors.As(err, &fe) && fe.Op == datafile.OpOpen {
			return 0, prf.NoPlan(pbi, program, fe.Err)
		}
		return 0, prf.DataFile(err)
	}
	path, err := cli.LookPath(program)
	if err != nil {
		return 0, prf.CannotOpen(program, err)
	}
	dir, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	res, err := profile.Run(profile.Config{
		Plan:        plan,
		PlanPath:    pbi,
		Path:        path,
		Args:        append([]string{program}, args...),
		CommandLine: commandLine(program, args),
		Env:         os.Environ(),
		Dir:         dir,
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		Signals:     sigs,
		Warn:        warn,
	})
	if err != nil {
		return 0, err
	}
	if err := datafile.SaveCounts(pbo, res.Counts); err != nil {
		return 0, prf.DataFile(err)
	}
	status := 0
	if o.exitCode {
		status = res.Status()
	}
	if run := res.Counts.Run; run.Incomplete {
		d := prf.Incomplete(run.Reason, pbo)
		if o.exitCode {
			warn(d.AsWarning())
			return status, nil
		}
		return 0, d
	}
	return status, nil
}

// commandLine renders the program's command line for the run record,
// quoting the arguments a shell would need quoted.
func commandLine(prog string, args []string) string {
	parts := []string{prog}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`*?[]{}()<>|&;#~") {
			a = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "`", "\\`").Replace(a) + `"`
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}
