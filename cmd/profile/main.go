// Command profile runs a program under the profiler and writes the run's
// counts (.pbo), as the original PROFILE did:
//
//	profile [options] program [arguments...]
//
// Everything after the program's name is the program's. See profile /? and
// profile --help, and docs/ in the repository.
package main

import (
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
	var warnings []error
	opts, err := cli.ParseProfile(args, os.Getenv, cli.Collect(&warnings))
	if status, done := cli.Profile.Start(stdout, stderr, opts.NoLogo, opts.Help, warnings, err); done {
		return status
	}
	diag := stderr
	report := func(severity string, err error) { cli.Profile.Report(diag, severity, err) }
	if opts.ErrorFile != "" {
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if opts.Append {
			flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		f, err := os.OpenFile(opts.ErrorFile, flags, 0o644)
		if err != nil {
			report("fatal error", prf.Wrap(err, 1011, "cannot open file %s", opts.ErrorFile))
			return 1
		}
		defer f.Close()
		diag = f
	}
	status, err := profileProgram(opts, func(err error) { report("warning", err) })
	if err != nil {
		report("fatal error", err)
		return 1
	}
	return status
}

// profileProgram runs the program and writes the .pbo; it returns the exit
// status of PROFILE.
func profileProgram(opts *cli.ProfileOptions, warn func(error)) (int, error) {
	pbi := cli.WithExt(opts.Input, ".pbi")
	if opts.Input == "" {
		pbi = cli.DataName(opts.Program, ".pbi")
	}
	pbo := cli.WithExt(opts.Output, ".pbo")
	if opts.Output == "" {
		pbo = strings.TrimSuffix(filepath.Base(pbi), filepath.Ext(pbi)) + ".pbo"
	}
	plan, err := datafile.OpenPlan(pbi)
	if err != nil {
		return 0, err
	}
	path, err := cli.LookPath(opts.Program)
	if err != nil {
		return 0, prf.Wrap(err, 1011, "cannot open file %s", opts.Program)
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
		Args:        append([]string{opts.Program}, opts.Args...),
		CommandLine: commandLine(opts.Program, opts.Args),
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
		return 0, err
	}
	status := 0
	if opts.ExitCode {
		status = res.Status()
	}
	if run := res.Counts.Run; run.Incomplete {
		err := prf.Errorf(1643, "%s; the counts written to %s are incomplete", run.Reason, pbo)
		if opts.ExitCode {
			warn(err)
			return status, nil
		}
		return 0, err
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
