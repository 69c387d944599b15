// Command plist prints the reports of a merged profile (.pbt), as the
// original PLIST did:
//
//	plist [options] program          the listing (plist program.pbt is the same)
//	plist /T program                 the tab-delimited records
//	plist --dump file...             any .pbi, .pbo or .pbt in its text form
//
// See plist /? and plist --help, and docs/ in the repository.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/cli"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/plist"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	var warnings []*prf.Diagnostic
	cmd, err := tool.Parse(args, os.Getenv, func(d *prf.Diagnostic) { warnings = append(warnings, d) })
	if err == nil && cmd.Help == cli.NoHelp && len(cmd.Names) == 0 {
		if cmd.Options.dump {
			err = prf.NoInput()
		} else {
			cmd.Help = cli.NoInputHelp // original.md §2.9: no input, usage
		}
	}
	if status, done := tool.Start(stdout, stderr, cmd, warnings, err); done {
		return status
	}
	warn := func(d *prf.Diagnostic) { prf.Write(stderr, tool.Name, d) }
	switch {
	case cmd.Options.dump:
		err = dump(cmd.Names, stdout)
	case cmd.Options.combine:
		err = combine(&cmd.Options, cmd.Names, stdout, warn)
	default:
		// PLIST lists the first input and ignores the others, as the
		// original did (original.md §5.1).
		err = list(&cmd.Options, cmd.Names[0], stdout, warn)
	}
	var gate *belowGate
	if errors.As(err, &gate) {
		fmt.Fprintf(stderr, "%s: %v\n", tool.Name, gate)
		return gateStatus
	}
	if err != nil {
		prf.Write(stderr, tool.Name, err)
		return prf.ExitStatus(err)
	}
	return 0
}

// gateStatus is the exit status of a coverage below --fail-under: not an
// error of PLIST's (1), nor a bad command line (2).
const gateStatus = 3

// belowGate is a coverage below --fail-under.
type belowGate struct{ coverage, want float64 }

func (g *belowGate) Error() string {
	return fmt.Sprintf("coverage %.1f%% is below --fail-under=%.0f%%", g.coverage, g.want)
}

// list writes the report of the .pbt named input.
func list(o *options, input string, stdout io.Writer, warn func(*prf.Diagnostic)) error {
	r := o.report
	if err := setFormat(o, &r); err != nil {
		return err
	}
	if err := setTime(o, &r); err != nil {
		return err
	}
	path, m, err := openInput(input, warn)
	if err != nil {
		return err
	}
	if r.Time == plist.TimeCPU && !plist.HasWaits(m) {
		return prf.NoWaits(path, m.Plan.Method)
	}
	r.Now, r.Path, r.Warn, r.Version = time.Now(), path, warn, cli.Version
	if r.Format == plist.FormatGmon && !m.Plan.Method.IsSampling() && o.diffBase == "" {
		// (The option is right; the profile is not of the type it
		// writes.)
		return prf.NotSampling(path, strings.ToLower(m.Plan.Method.Words()))
	}
	if o.trace && (o.diffBase != "" || (r.Format != plist.FormatText && r.Format != plist.FormatTab)) {
		d := prf.InvalidOption("/TRACE")
		d.Hint = "/TRACE appends the trace to the listing or to /T's records; --format=chrome writes it for a timeline viewer"
		return d
	}
	if r.Format == plist.FormatChrome && o.diffBase == "" {
		var done func()
		if r.Trace, done, err = readTrace(path, m, warn); err != nil {
			return err
		}
		defer done()
	}
	// As the original, PLIST looks for the trace to append (/TRACE) after
	// the report (original.md §5.10): the report is written, then a
	// missing trace is an error.
	var trace *plist.Trace
	var traceErr error
	if o.trace {
		var done func()
		if trace, done, traceErr = readTrace(path, m, warn); traceErr == nil {
			defer done()
		}
	}
	write := func(w io.Writer) error {
		if err := plist.Generate(w, m, r); err != nil || trace == nil {
			return err
		}
		return plist.WriteTrace(w, m, trace, r)
	}
	if o.diffBase != "" {
		basePath := cli.InputName(o.diffBase, ".pbt")
		base, err := datafile.OpenMerged(basePath)
		if err != nil {
			return prf.DataFile(err)
		}
		if r.Time == plist.TimeCPU && !plist.HasWaits(base) {
			return prf.NoWaits(basePath, base.Plan.Method)
		}
		r.Path = basePath
		write = func(w io.Writer) error { return plist.WriteDiff(w, base, m, r) }
	}
	if err := writeReport(o.output, stdout, write); err != nil {
		return err
	}
	if o.failUnder >= 0 {
		if c := plist.Coverage(m); c < float64(o.failUnder) {
			return &belowGate{c, float64(o.failUnder)}
		}
	}
	return traceErr
}

// openInput opens the .pbt named input (.pbt added where it has no
// extension), warning of runs not merged into it.
func openInput(input string, warn func(*prf.Diagnostic)) (string, *datafile.Merged, error) {
	path := cli.InputName(input, ".pbt")
	m, err := datafile.OpenMerged(path)
	if err != nil {
		return path, nil, prf.DataFile(err)
	}
	if w := unmerged(path, m); w != nil {
		warn(w)
	}
	return path, m, nil
}

// combine writes the coverage of the .pbt files named inputs, added
// (--combine): a summary, an lcov tracefile, or the HTML page of line
// profiles; --fail-under gates the whole.
func combine(o *options, inputs []string, stdout io.Writer, warn func(*prf.Diagnostic)) error {
	r := o.report
	if err := setFormat(o, &r); err != nil {
		return err
	}
	formats := []plist.Format{plist.FormatText, plist.FormatLcov, plist.FormatHTML}
	if !slices.Contains(formats, r.Format) || r.Tab || o.trace || o.diffBase != "" || o.timeView != "" {
		d := prf.InvalidOption("--combine")
		d.Hint = "--combine writes a summary by source file, an lcov tracefile with --format=lcov, or a page with --format=html; its coverage has no times, records or trace"
		return d
	}
	c := plist.NewCombined()
	for _, input := range inputs {
		path, m, err := openInput(input, warn)
		if err != nil {
			return err
		}
		if err := c.Add(m, path, r); err != nil {
			return err
		}
	}
	write := c.WriteSummary
	switch r.Format {
	case plist.FormatLcov:
		write = c.WriteLcov
	case plist.FormatHTML:
		r.Now, r.Warn, r.Version = time.Now(), warn, cli.Version
		write = func(w io.Writer) error { return c.WriteHTML(w, r) }
	}
	if err := writeReport(o.output, stdout, write); err != nil {
		return err
	}
	if o.failUnder >= 0 {
		if cov := c.Coverage(); cov < float64(o.failUnder) {
			return &belowGate{cov, float64(o.failUnder)}
		}
	}
	return nil
}

// setFormat sets r's format from --format, and refuses an HTML report with
// /T or --diff-base.
func setFormat(o *options, r *plist.Options) error {
	if o.format != "" {
		var err error
		if r.Format, err = plist.ParseFormat(o.format); err != nil {
			d := prf.InvalidOption("--format=" + o.format)
			d.Hint = "the formats are " + strings.Join(plist.FormatNames(), ", ")
			return d
		}
	}
	if r.Format == plist.FormatHTML && (r.Tab || o.diffBase != "") {
		d := prf.InvalidOption("--format=" + o.format)
		d.Hint = "the HTML report is a page of its own: /T's records and --diff-base's comparison are text, written without --format"
		return d
	}
	return nil
}

// setTime sets r's view of the times from --time.
func setTime(o *options, r *plist.Options) error {
	if o.timeView == "" {
		return nil
	}
	v, err := plist.ParseTimeView(o.timeView)
	if err != nil {
		d := prf.InvalidOption("--time=" + o.timeView)
		d.Hint = "the views are " + strings.Join(plist.TimeViewNames(), ", ")
		return d
	}
	r.Time = v
	return nil
}

// writeReport writes the report with write to the file output (/O), or to
// stdout when output is "".
func writeReport(output string, stdout io.Writer, write func(io.Writer) error) error {
	if output == "" {
		return writeStdout(stdout, write)
	}
	// Written whole or not at all, as the data files are, but in place
	// where it is not a regular file (/dev/null, a FIFO, /dev/stdout).
	if err := datafile.WriteOutput(output, 0o666, write); err != nil {
		var de *datafile.DirError
		switch {
		case prf.Code(err) != 0:
			return err // the report's own, not the file's
		case errors.As(err, &de) && !errors.Is(err, fs.ErrNotExist):
			// A directory that exists and takes no file.
			return prf.OutputOption(prf.CannotWrite(output, err), "/O")
		case de != nil:
			err = de
		}
		return prf.CannotOpen(output, err)
	}
	return nil
}

// readTrace opens the execution trace beside the .pbt at path
// (base.pbx), of a run of m's plan, warning when that run is not merged
// into m or the trace is not whole, and returns it with what closes its
// file once the report is written (its events are read from there as
// the report goes: plist.OpenTrace).
func readTrace(path string, m *datafile.Merged, warn func(*prf.Diagnostic)) (*plist.Trace, func(), error) {
	base := strings.TrimSuffix(path, filepath.Ext(path))
	pbx := base + ".pbx"
	f, err := os.Open(pbx)
	if err != nil {
		return nil, nil, prf.NoTrace(pbx, base, !m.Plan.Method.IsFunction(), err)
	}
	tr, err := plist.OpenTrace(f)
	if err != nil {
		f.Close()
		return nil, nil, prf.CannotRead(pbx, err)
	}
	done := func() { tr.Close(); f.Close() }
	if tr.Header.PlanID != m.Plan.ID {
		done()
		return nil, nil, prf.TraceOtherPlan(pbx, path)
	}
	if !slices.ContainsFunc(m.Runs, func(r datafile.Run) bool { return bytes.Equal(r.ID, tr.Header.RunID) }) {
		warn(prf.TraceNotMerged(pbx, path))
	}
	switch st := tr.Status; {
	case st.Cut:
		warn(prf.TraceIncomplete(pbx, fmt.Sprintf("it was cut at its limit of %d MiB (profile --trace-limit)", st.Limit>>20)))
	case st.Torn:
		warn(prf.TraceIncomplete(pbx, fmt.Sprintf("it ends in a chunk not whole at offset %d: PROFILE did not finish it", st.TornAt)))
	case !st.Ended:
		warn(prf.TraceIncomplete(pbx, "PROFILE did not finish it (killed, or still running)"))
	}
	return tr, done, nil
}

// unmerged returns a warning when the .pbo files beside the .pbt at path
// (base.pbo, base.pbo.N) hold runs that m counts as pending
// ([datafile.Merged.Pending]): the user profiled and did not merge. A run
// merged into a .pbt that phase I replaced is not one. Only a .pbo newer
// than the .pbt can hold one, so older ones are not read.
func unmerged(path string, m *datafile.Merged) *prf.Diagnostic {
	base := strings.TrimSuffix(path, filepath.Ext(path))
	pst, err := os.Stat(path)
	if err != nil {
		return nil
	}
	var pending []string
	for _, pbo := range cli.RunFiles(base) {
		if st, err := os.Stat(pbo); err != nil || st.ModTime().Before(pst.ModTime()) {
			continue
		}
		c, err := datafile.OpenCounts(pbo)
		if err == nil && m.Pending(c) {
			pending = append(pending, pbo)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	return prf.MergeMissing(pending, path, "prep /M "+base)
}

// dump writes data files in their text form.
func dump(files []string, stdout io.Writer) error {
	for _, name := range files {
		v, err := datafile.OpenAny(cli.FindFile(name))
		if err != nil {
			return prf.DataFile(err)
		}
		if err := writeStdout(stdout, func(w io.Writer) error { return datafile.WriteText(w, v) }); err != nil {
			return err
		}
	}
	return nil
}

// stdoutName names standard output in PRF1013.
const stdoutName = "standard output"

// writeStdout runs write on a buffer over stdout and flushes it. A failure
// to write stdout (a full disk, a closed pipe) is PRF1013 naming standard
// output; an error of write's own is returned as it is.
func writeStdout(stdout io.Writer, write func(io.Writer) error) error {
	ew := &errWriter{w: stdout}
	w := bufio.NewWriter(ew)
	err := write(w)
	if err == nil {
		err = w.Flush()
	}
	if ew.err != nil {
		return prf.CannotWrite(stdoutName, ew.err)
	}
	return err
}

// errWriter keeps the first error of w.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}
