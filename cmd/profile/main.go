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
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/cli"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile"
)

func main() {
	// The interrupts are caught first of all: one that comes while
	// PROFILE reads the plan or finds the process is not lost (a
	// PROFILE started with SIGINT ignored, as a shell starts a job in
	// the background, would ignore it until it asked for it).
	signal.Notify(interrupts, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// interrupts receives the SIGINT, SIGTERM and SIGHUP PROFILE receives
// (main): passed on to the program once it runs, or the end of an
// attached run's window (profile.Config.Signals).
var interrupts = make(chan os.Signal, 4)

// interruptedBefore ends PROFILE as signal s would have, when it came
// before anything was started or attached to: nothing to end, nothing to
// write. It returns, with the shell's status for a death by s, only when
// s was ignored when PROFILE started, and is ignored again.
func interruptedBefore(s os.Signal) int {
	signal.Reset(s)
	n := s.(syscall.Signal)
	syscall.Kill(os.Getpid(), n)
	time.Sleep(10 * time.Millisecond) // (the signal's delivery)
	return 128 + int(n)
}

// run is the command; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	var warnings []*prf.Diagnostic
	cmd, err := tool.Parse(args, os.Getenv, func(d *prf.Diagnostic) { warnings = append(warnings, d) })
	if err == nil && cmd.Help == cli.NoHelp {
		if len(cmd.Names) == 0 && !cmd.Options.attaching() {
			// No program (an empty name is one): the usage (original.md §2.9).
			cmd.Help = cli.NoInputHelp
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
		// A new file that takes the name at once, written as the run
		// goes; with /A the file of that name, appended to; in place, a
		// terminal or /dev/stderr.
		f, err := datafile.OpenLog(o.errorFile, o.appendErrors, 0o666)
		if err != nil {
			prf.Write(stderr, tool.Name, prf.CannotOpen(o.errorFile, err))
			return 1
		}
		defer f.Close()
		diag = f
	}
	warn := func(d *prf.Diagnostic) { prf.Write(diag, tool.Name, d) }
	var status int
	if o.attaching() {
		status, err = attachProcess(o, cmd.Names, cmd.Args, diag, warn)
	} else {
		status, err = profileProgram(o, cmd.Names[0], cmd.Args, diag, warn)
	}
	if err != nil {
		err = prf.OutputOption(err, "/O")
		prf.Write(diag, tool.Name, err)
		return prf.ExitStatus(err)
	}
	return status
}

// profileProgram runs the program and writes the .pbo; it returns the exit
// status of PROFILE. With --explain, its narration goes to diag, with the
// diagnostics.
func profileProgram(o *options, program string, args []string, diag io.Writer, warn func(*prf.Diagnostic)) (int, error) {
	return record(o, program, diag, warn, func(cfg *profile.Config) error {
		path, err := cli.LookPath(program)
		if err != nil {
			return prf.CannotOpen(program, err)
		}
		dir, err := os.Getwd()
		if err != nil {
			return prf.NoWorkingDir(err)
		}
		cfg.Path = path
		cfg.Args = append([]string{program}, args...)
		cfg.CommandLine = commandLine(program, args)
		cfg.Env = os.Environ()
		cfg.Dir = dir
		cfg.Stdin, cfg.Stdout, cfg.Stderr = os.Stdin, os.Stdout, os.Stderr
		return nil
	})
}

// record makes one run of the plan of program, the process or program
// that target puts in the run's configuration, and writes its .pbo.
func record(o *options, program string, diag io.Writer, warn func(*prf.Diagnostic), target func(*profile.Config) error) (int, error) {
	pbi, pbo := dataNames(o, program)
	plan, err := openPlan(pbi, program)
	if err != nil {
		return 0, err
	}
	cfg := profile.Config{
		Plan:          plan,
		PlanPath:      pbi,
		Warn:          warn,
		Breakpoints:   o.breakpoints,
		NoCPUTime:     o.noCPUTime,
		NoStacks:      o.noStacks,
		UserOnly:      o.userOnly,
		EveryLineSite: o.everyLineSite,
		Verbose:       o.verbose,
		Explain:       explainTo(o, diag),
		ExplainLimit:  explainLimit(o.explainLimit),
		TraceLimit:    traceLimit(o.traceLimit),
	}
	if err := target(&cfg); err != nil {
		return 0, err
	}
	// A run that lasts shows a status line on a terminal, taken away
	// before any message and at the end: with --pid, or when the
	// program's output goes elsewhere (it would be written over); not
	// with --explain, whose narration goes there.
	if !o.explain && diag == io.Writer(os.Stderr) && profile.IsTerminal(os.Stderr) && (cfg.Attach != 0 || !profile.IsTerminal(os.Stdout)) {
		line := &statusLine{w: os.Stderr}
		defer line.clear()
		inner := warn
		warn = func(d *prf.Diagnostic) { line.clear(); inner(d) }
		cfg.Warn, cfg.Progress = warn, line.update
	}
	// A run that cannot be written is lost: find out before the program
	// runs, not after.
	if err := checkWritable(pbo); err != nil {
		return 0, prf.CannotWrite(pbo, err)
	}
	if cfg.SampleInterval, err = sampleInterval(o.sampleInterval, plan.Method, warn); err != nil {
		return 0, err
	}
	// The trace goes beside the .pbo: prog.pbx for prog.pbo, where PLIST
	// /TRACE looks for it.
	if o.trace {
		cfg.Trace = strings.TrimSuffix(pbo, filepath.Ext(pbo)) + ".pbx"
	}
	// An interrupt that came before the run began ends PROFILE now,
	// with nothing started or attached to; one that comes from here on
	// is passed on to the program once it runs, or ends the window of an
	// attached run as soon as the window can end.
	select {
	case s := <-interrupts:
		return interruptedBefore(s), nil
	default:
	}
	cfg.Signals = interrupts

	res, err := profile.Run(cfg)
	if err != nil {
		return 0, err
	}
	if pbo, err = saveRun(pbo, res.Counts, warn); err != nil {
		return 0, err
	}
	if o.explain {
		profile.ExplainSaved(diag, pbo, res.Counts)
	}
	if cfg.Attach != 0 {
		// The run record says what the counts cover; the process is
		// not PROFILE's to report on.
		return 0, nil
	}
	return exitStatus(o, res, pbo, warn)
}

// dataNames returns the names of the plan PROFILE reads and of the run it
// writes: as the options give them, else program's .pbi, found as the
// tools find their files, and a .pbo of the plan's name in the current
// directory.
func dataNames(o *options, program string) (pbi, pbo string) {
	pbi = cli.InputName(o.input, ".pbi")
	if o.input == "" {
		pbi = cli.FindFile(cli.DataName(program, ".pbi"))
	}
	pbo = cli.WithExt(o.output, ".pbo")
	if o.output == "" {
		pbo = strings.TrimSuffix(filepath.Base(pbi), filepath.Ext(pbi)) + ".pbo"
	}
	return pbi, pbo
}

// openPlan reads the plan pbi of program: PRF1011 when it cannot be
// opened (prep has not prepared the program), else the data file's error.
func openPlan(pbi, program string) (*datafile.Plan, error) {
	plan, err := datafile.OpenPlan(pbi)
	if err != nil {
		var fe *datafile.FileError
		if errors.As(err, &fe) && fe.Op == datafile.OpOpen {
			return nil, prf.NoPlan(pbi, program, fe.Err)
		}
		return nil, prf.DataFile(err)
	}
	return plan, nil
}

// exitStatus returns PROFILE's exit status after a run it launched, saved
// as pbo: 0, or with /X the program's; an incomplete run is an error, or
// with /X a warning.
func exitStatus(o *options, res *profile.Result, pbo string, warn func(*prf.Diagnostic)) (int, error) {
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

// checkWritable reports why a .pbo could not be written at path: its
// directory does not take new files, or path is a directory, or another
// file that is not replaced ([datafile.Replaceable]).
func checkWritable(path string) error {
	if err := datafile.Replaceable(path); err != nil {
		return err // a directory, a device, a FIFO: not written over
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".profile-check-*")
	if err != nil {
		return datafile.NewDirError(filepath.Dir(path), err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// saveRun writes the run's counts to pbo, or, when pbo holds a run of the
// same plan that the .pbt beside it does not hold yet (it would be lost),
// to the first free pbo.N: runs at the same time, or one after another
// without prep /M between them, are all kept, and prep /M merges them all.
// It returns the file written. The directory's lock makes the choice and
// the write one step against other PROFILEs and PREP /M.
func saveRun(pbo string, c *datafile.Counts, warn func(*prf.Diagnostic)) (string, error) {
	unlock, err := datafile.LockDir(pbo)
	if err != nil {
		return "", prf.CannotWrite(pbo, err)
	}
	defer unlock()
	name := pbo
	base := strings.TrimSuffix(pbo, filepath.Ext(pbo))
	if pending(pbo, base+".pbt", c.PlanID) {
		name = cli.NextRunFile(base)
		warn(prf.RunKept(pbo, name, base))
	}
	return name, prf.DataFile(datafile.SaveCounts(name, c))
}

// pending reports whether the .pbo at pbo holds a run of plan that the
// database pbt counts as pending ([datafile.Merged.Pending]): never merged
// into it, nor into a database phase I replaced with it. A missing or
// damaged .pbo, one of another plan or type, one without a run ID, or one
// whose run was merged, holds nothing to keep.
func pending(pbo, pbt string, plan datafile.ID) bool {
	old, err := datafile.OpenCounts(pbo)
	if err != nil || old.PlanID != plan {
		return false
	}
	m, err := datafile.OpenMerged(pbt)
	if err != nil {
		return true // no database to tell: keep the run
	}
	return m.Pending(old)
}

// commandLine renders the program's command line for the run record,
// quoting the words a shell would need quoted (shellWord).
func commandLine(prog string, args []string) string {
	parts := []string{prog}
	if hasControl(prog) {
		parts[0] = shellWord(prog)
	}
	for _, a := range args {
		parts = append(parts, shellWord(a))
	}
	return strings.Join(parts, " ")
}

// shellWord quotes a word of a command line as a shell reads it back: as
// it is when nothing in it is special, in double quotes when something
// is, and, when it holds a control character (a newline, a tab, an
// escape), as $'...' with that character escaped (\n, \t, \xHH), which
// bash, zsh, ksh and POSIX sh (since 2024) read: the command line in the
// records and reports is then one line, and a word of it a newline in an
// argument cannot turn into a record of its own.
func shellWord(a string) string {
	switch {
	case hasControl(a):
		var b strings.Builder
		b.WriteString("$'")
		for i := 0; i < len(a); i++ {
			switch c := a[i]; {
			case c == '\\' || c == '\'':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\t':
				b.WriteString(`\t`)
			case c == '\r':
				b.WriteString(`\r`)
			case c < 0x20 || c == 0x7f:
				fmt.Fprintf(&b, `\x%02x`, c)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('\'')
		return b.String()
	case a == "" || strings.ContainsAny(a, " \"'\\$`*?[]{}()<>|&;#~"):
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "`", "\\`").Replace(a) + `"`
	}
	return a
}

// hasControl reports whether s holds an ASCII control character.
func hasControl(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0
}

// sampleInterval returns the sampling interval /S gives (us microseconds,
// -1 when not given) for a profile of method m: 0, PROFILE's default,
// when it is not given, and for the profiles that do not sample (warned
// about, PRF4677).
func sampleInterval(us int, m datafile.Method, warn func(*prf.Diagnostic)) (time.Duration, error) {
	switch {
	case us < 0:
		return 0, nil
	case !m.IsSampling():
		warn(prf.IntervalIgnored(strings.ToLower(m.Words())))
		return 0, nil
	}
	d := time.Duration(us) * time.Microsecond
	if d < profile.MinInterval || d > profile.MaxInterval {
		return 0, prf.BadInterval(us, int(profile.MinInterval/time.Microsecond), int(profile.MaxInterval/time.Microsecond))
	}
	return d, nil
}

// traceLimit returns the trace's size limit in bytes for --trace-limit's
// MiB (-1: not given).
func traceLimit(mib int) int64 {
	if mib < 0 {
		return profile.DefaultTraceLimit
	}
	return int64(mib) << 20
}

// explainTo is where --explain's narration goes: diag, or nowhere
// without --explain.
func explainTo(o *options, diag io.Writer) io.Writer {
	if !o.explain {
		return nil
	}
	return diag
}

// explainLimit returns the narration's limit for --explain-limit's N
// (-1: not given).
func explainLimit(n int) int {
	if n < 0 {
		return profile.DefaultExplainLimit
	}
	return n
}
