// Command plist prints the reports of a merged profile (.pbt), as the
// original PLIST did:
//
//	plist [options] program          the listing (plist program.pbt is the same)
//	plist /T program                 the tab-delimited records
//	plist --dump file                any .pbi, .pbo or .pbt in its text form
//
// See plist /? and plist --help, and docs/ in the repository.
package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/cli"
	"github.com/sourceprofiler/sprof/internal/plist"
	"github.com/sourceprofiler/sprof/internal/prf"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	report := func(severity string, err error) { cli.Plist.Report(stderr, severity, err) }
	if len(args) > 0 && args[0] == "--dump" {
		if err := dump(args[1:], stdout); err != nil {
			report("fatal error", err)
			return 1
		}
		return 0
	}
	var warnings []error
	opts, err := cli.ParsePlist(args, os.Getenv, cli.Collect(&warnings))
	if status, done := cli.Plist.Start(stdout, stderr, opts.NoLogo, opts.Help, warnings, err); done {
		return status
	}
	if err := list(opts, stdout, func(err error) { report("warning", err) }); err != nil {
		report("fatal error", err)
		return 1
	}
	return 0
}

// list writes the report.
func list(opts *cli.PlistOptions, stdout io.Writer, warn func(error)) error {
	path := cli.WithExt(opts.Input, ".pbt")
	m, err := datafile.OpenMerged(path)
	if err != nil {
		return err
	}
	o := plist.DefaultOptions()
	o.Sort = sortKeys[opts.Sort]
	o.MinCount = opts.Count
	o.Tab = opts.TabDelimited
	o.Mangled = opts.Mangled
	o.FullPaths = opts.Full
	if opts.PageWidth >= 0 {
		o.PageWidth, o.PageWidthGiven = opts.PageWidth, true
	}
	if opts.PageLength >= 0 {
		// The original acted on /PL 0 to 16 as 16 (original.md §5.5.4).
		o.PageLength = max(opts.PageLength, 16)
	}
	o.SourceDirs = opts.SourceDirs
	o.Flat = opts.Flat
	o.TabWidth = opts.TabWidth
	o.Now = time.Now()
	o.Path = path
	o.Warn = warn
	w := bufio.NewWriter(stdout)
	if err := plist.Generate(w, m, o); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if opts.Trace {
		// No run records an execution trace: as the original, PLIST looks
		// for the trace file after the report and does not find it.
		pbx := strings.TrimSuffix(path, ".pbt") + ".pbx"
		if _, err := os.Stat(pbx); err != nil {
			return prf.Wrap(err, 1011, "cannot open file %s", pbx)
		}
		return prf.Errorf(1001, "execution traces (/TRACE) are not available yet in this version")
	}
	return nil
}

var sortKeys = map[cli.SortKey]plist.Sort{
	cli.SortDefault:     plist.SortDefault,
	cli.SortCount:       plist.SortCount,
	cli.SortLine:        plist.SortLine,
	cli.SortLineSummary: plist.SortLineSummary,
	cli.SortName:        plist.SortName,
	cli.SortNameSummary: plist.SortNameSummary,
	cli.SortTime:        plist.SortTime,
	cli.SortChildTime:   plist.SortChildTime,
}

// dump writes data files in their text form.
func dump(files []string, stdout io.Writer) error {
	if len(files) == 0 {
		return prf.Errorf(1421, "no input specified")
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return prf.Wrap(err, 1011, "cannot open file %s", name)
		}
		v, err := datafile.Read(bufio.NewReader(f))
		f.Close()
		switch {
		case errors.Is(err, datafile.ErrSignature):
			return prf.Errorf(1301, "file %s has an incorrect (old) signature", name)
		case err != nil:
			return prf.Wrap(err, 1012, "cannot read expected number of bytes from file %s", name)
		}
		if err := datafile.WriteText(stdout, v); err != nil {
			return err
		}
	}
	return nil
}
