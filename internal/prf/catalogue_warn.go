// The catalogue's warnings of PREP and PLIST (41xx-45xx): what a selection matched, what a report leaves out.

package prf

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Overrides is warning PRF4101: a second /SF, or a second PLIST sort.
func Overrides(name string) *Diagnostic {
	return newDiag(4101, Warning, nil, "option %s overrides an earlier option", name)
}

// NoErrorFile is warning PRF4111: PROFILE /A without /E.
func NoErrorFile() *Diagnostic {
	return newDiag(4111, Warning, nil, "no error file (/E) specified for /A option")
}

// IncompleteRun warns that a merged .pbo holds a run that did not finish.
func IncompleteRun(path, reason string) *Diagnostic {
	if reason == "" {
		reason = "reason unknown"
	}
	return newDiag(4305, Warning, nil, "%s holds an incomplete run (%s): its counts stop where the run stopped", path, reason)
}

// RunsDiscarded warns that PREP phase I replaced a database holding runs.
func RunsDiscarded(pbt string, runs int) *Diagnostic {
	what := fmt.Sprintf("%d runs; they are", runs)
	if runs == 1 {
		what = "1 run; it is"
	}
	d := newDiag(4306, Warning, nil, "%s held %s discarded and the new %s is empty", pbt, what, filepath.Base(pbt))
	d.Hint = "to keep runs, copy the .pbt before preparing the program again"
	return d
}

// RunFilesCleared warns that PREP phase I discarded the runs waiting to
// be merged in the run files cleared (prog.pbo, prog.pbo.N), of the
// database pbt it replaced, and removed the numbered files among them
// (removed): PROFILE wrote those only to keep a run for prep /M.
func RunFilesCleared(cleared, removed []string, pbt string) *Diagnostic {
	what, verb := "runs", "they are"
	if len(cleared) == 1 {
		what, verb = "a run", "it is"
	}
	d := newDiag(4308, Warning, nil, "%s held %s of the earlier preparation, not merged into %s: %s discarded with it",
		andList(cleared), what, pbt, verb)
	switch {
	case len(removed) == 0:
	case len(removed) == len(cleared) && len(removed) == 1:
		d.Text += ", and the file removed"
	case len(removed) == len(cleared):
		d.Text += ", and the files removed"
	default:
		d.Text += ", and " + andList(removed) + " removed"
	}
	d.Hint = fmt.Sprintf("to keep runs, merge them (prep /M %s) before preparing the program again", strings.TrimSuffix(pbt, filepath.Ext(pbt)))
	return d
}

// MergeMissing warns PLIST that the runs of .pbo files are not in the
// .pbt it lists.
func MergeMissing(pbos []string, pbt, merge string) *Diagnostic {
	d := newDiag(4482, Warning, nil, "%s holds a run that %s does not: this report leaves it out", pbos[0], pbt)
	if len(pbos) > 1 {
		d.Text = fmt.Sprintf("%s hold runs that %s does not: this report leaves them out", strings.Join(pbos, ", "), pbt)
	}
	d.Hint = fmt.Sprintf("run '%s' to add them", merge)
	if len(pbos) == 1 {
		d.Hint = fmt.Sprintf("run '%s' to add it", merge)
	}
	return d
}

// RunKept warns that PROFILE wrote its run beside pbo, which holds a run
// not merged yet.
func RunKept(pbo, written, base string) *Diagnostic {
	d := newDiag(4307, Warning, nil, "%s holds a run not merged yet: this run is written to %s", pbo, written)
	d.Hint = fmt.Sprintf("'prep /M %s' merges both", base)
	if !strings.HasSuffix(written, ".pbo.2") {
		d.Hint = fmt.Sprintf("'prep /M %s' merges them all", base)
	}
	return d
}

// GmonLibraries warns that gmon.out leaves out the functions of the
// shared libraries libs: gprof reads the program's own only.
func GmonLibraries(libs string) *Diagnostic {
	d := newDiag(4483, Warning, nil, "gmon.out leaves out the functions of %s: gprof reads the program's own functions only", libs)
	d.Hint = "plist's listing and --format=pprof show them"
	return d
}

// GmonNoCallers warns that a gmon.out of a profile without /AT has no
// arcs: gprof counts no calls.
func GmonNoCallers() *Diagnostic {
	d := newDiag(4484, Warning, nil, "gmon.out has no callers without /AT: gprof shows every function <spontaneous> and counts no calls")
	d.Hint = "prepare with prep /FS /AT for gprof's call graph and calls column; plist's listing has the exact calls"
	return d
}

// NeverMatched is warning PRF4106; near are the names of the program near
// the one typed, which the hint suggests ("did you mean is_prime?").
func NeverMatched(spec string, near []string) *Diagnostic {
	d := newDiag(4106, Warning, nil, "function/source/object/lib %s was never matched", spec)
	d.Hint = didYouMean(near)
	return d
}

// StartIgnored is warning PRF4107: /SF with a line or sampling profile.
func StartIgnored() *Diagnostic {
	return newDiag(4107, Warning, nil, "/SF option not valid for line-level or sample profiles")
}

// StartNotFound is warning PRF4524: nothing will be counted. near are the
// names of the plan near name, which the hint suggests.
func StartNotFound(name string, near []string) *Diagnostic {
	d := newDiag(4524, Warning, nil, "entry function %s not found", name)
	d.Hint = didYouMean(near)
	return d
}

// CannotProfileFunction is warning PRF4525: the function's site cannot take
// a breakpoint (it does not decode, or is a trap).
func CannotProfileFunction(fn, file string, err error) *Diagnostic {
	return newDiag(4525, Warning, err, "cannot profile function %s in file %s", fn, file)
}

// NotInPlan is warning PRF4541: the program is not a module of the .pbi;
// it runs unprofiled.
func NotInPlan(path, pbi string) *Diagnostic {
	return newDiag(4541, Warning, nil, "%s not found in PBI file %s", path, pbi)
}

// ClockZero is warning PRF4481: a timing profile that was never run.
func ClockZero() *Diagnostic { return newDiag(4481, Warning, nil, "clock frequency is zero") }

// TraceNotMerged warns that the trace is of a run the .pbt does not hold
// (PLIST /TRACE): its times are that run's, not the report's.
func TraceNotMerged(pbx, pbt string) *Diagnostic {
	d := newDiag(4485, Warning, nil, "the execution trace %s is of a run not merged into %s: its times are that run's alone", pbx, pbt)
	d.Hint = "merge the run (prep /M) to list it with the report it belongs to"
	return d
}

// TraceIncomplete warns that the trace ends before its run did (PLIST
// /TRACE): PROFILE was killed, or the trace was cut.
func TraceIncomplete(pbx, why string) *Diagnostic {
	return newDiag(4486, Warning, nil, "the execution trace %s is not whole: %s", pbx, why)
}

// SourcesLeftOut warns that the listing leaves out the source files it
// cannot find (PLIST): files names each with the number of the profile's
// lines it holds ("bc.y (125 lines)"), which count in the statistics but
// are not listed.
func SourcesLeftOut(files []string, lines int) *Diagnostic {
	what := "a source file"
	if len(files) > 1 {
		what = fmt.Sprintf("%d source files", len(files))
	}
	d := newDiag(4487, Warning, nil, "the listing leaves out %s it cannot find, with %d of the profile's lines: %s",
		what, lines, strings.Join(files, ", "))
	d.Hint = "name the directories that hold them with /D DIR (repeatable); the line counts are in the statistics all the same"
	return d
}

// DiffOtherType warns that --diff-base compares profiles of two types
// (PLIST): only what both count is compared, and the rest is listed as
// appearing or vanishing.
func DiffOtherType(base, baseType, thisType string) *Diagnostic {
	d := newDiag(4488, Warning, nil, "--diff-base %s is a %s profile, and this one a %s profile: only what both count is compared, and what one alone counts is listed as a change",
		base, baseType, thisType)
	d.Hint = "compare two profiles of one type: prepare the program with the type of the other (prep /FC, /FT, /FV, /FS, /LC or /LV), profile it, and compare again"
	return d
}
