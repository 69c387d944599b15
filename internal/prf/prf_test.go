package prf

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
)

func TestWrite(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"fatal with a number and a cause", CannotOpen("x.pbt", &fs.PathError{Op: "open", Path: "x.pbt", Err: fs.ErrNotExist}),
			"prep: fatal error PRF1011: cannot open file x.pbt: file does not exist\n"},
		{"warning", NeverMatched("foo", nil), "prep: warning PRF4106: function/source/object/lib foo was never matched\n"},
		{"warning with near names", NeverMatched("is_prme", []string{"is_prime"}),
			"prep: warning PRF4106: function/source/object/lib is_prme was never matched\nprep: hint: did you mean is_prime?\n"},
		{"warning with names near", StartNotFound("gdc", []string{"gcd", "gdb", "god"}),
			"prep: warning PRF4524: entry function gdc not found\nprep: hint: did you mean gcd, gdb or god?\n"},
		{"warning the original printed as a warning", SortMismatch("x.pbt"), "prep: warning PRF1481: x.pbt inconsistent with sorting type\n"},
		{"a number of this port", OtherArch("arm64", "amd64"), "prep: fatal error PRF1445: cannot profile an arm64 program on amd64\n"},
		{"a number of this port, warning", ExecEnded(), "prep: warning PRF4643: the program called exec: profiling ended there, the counts up to it are kept\n"},
		{"no number", &Diagnostic{Severity: Warning, Text: "a message"},
			"prep: warning PRF1001: unknown error: a message\nprep: hint: " + unknownHint + "\n"},
		{"usage suggests --help", InvalidOption("bogus"),
			"prep: fatal error PRF1102: bogus: invalid option\nprep: hint: try 'prep --help' for the options\n"},
		{"ambiguous", AmbiguousOption("--f", []string{"--flat", "--format", "--full-paths"}),
			"prep: fatal error PRF1102: --f: invalid option: ambiguous option, could be --flat, --format or --full-paths\nprep: hint: try 'prep --help' for the options\n"},
		{"hint of its own", AlreadyMerged("a.pbo", "a.pbt"),
			"prep: fatal error PRF1308: the run in a.pbo is already in a.pbt\nprep: hint: each run is merged once; run profile again for another run\n"},
		{"not a diagnostic", errors.New("plant breakpoints: lost"),
			"prep: fatal error PRF1001: unknown error: plant breakpoints: lost\nprep: hint: " + unknownHint + "\n"},
		{"a full disk", CannotWrite("x.pbo", &fs.PathError{Op: "write", Path: "x.pbo", Err: syscall.ENOSPC}),
			"prep: fatal error PRF1013: cannot write expected number of bytes to file x.pbo: write x.pbo: no space left on device\n" +
				"prep: hint: the file system is full, or your disk quota used up: make room, then run again\n"},
		{"a directory that takes no file", CannotWrite("x.pbi", &datafile.FileError{Op: datafile.OpWrite, Path: "x.pbi",
			Err: fmt.Errorf("write x.pbi: %w", &datafile.DirError{Dir: "/d", Err: syscall.EACCES})}),
			"prep: fatal error PRF1013: cannot write expected number of bytes to file x.pbi: directory /d cannot be written: permission denied\n" +
				"prep: hint: run in a directory you can write, or name another file\n"},
		{"a directory that takes no file, and the option that names another", OutputOption(
			DataFile(&datafile.FileError{Op: datafile.OpWrite, Path: "x.pbi",
				Err: fmt.Errorf("write x.pbi: %w", &datafile.DirError{Dir: "/d", Err: syscall.EACCES})}), "/OI and /OT"),
			"prep: fatal error PRF1013: cannot write expected number of bytes to file x.pbi: directory /d cannot be written: permission denied\n" +
				"prep: hint: run in a directory you can write, or name another file with /OI and /OT\n"},
		{"a read-only file system, and the option that names another", OutputOption(
			CannotWrite("x.pbo", &datafile.DirError{Dir: "/mnt", Err: syscall.EROFS}), "/O"),
			"prep: fatal error PRF1013: cannot write expected number of bytes to file x.pbo: directory /mnt cannot be written: read-only file system\n" +
				"prep: hint: the file system is read-only: run in a directory you can write, or name another file with /O\n"},
		{"the option that names another, for another error", OutputOption(NoInput(), "/O"),
			"prep: fatal error PRF1421: no input specified\nprep: hint: try 'prep --help' for the options\n"},
		{"wrapped", fmt.Errorf("context: %w", NoInput()),
			"prep: fatal error PRF1421: context: no input specified\nprep: hint: try 'prep --help' for the options\n"},
		{"a name with a newline and a tab: one line", CannotOpen("x\nprep: fatal error PRF1011: forged\t.pbt", fs.ErrNotExist),
			"prep: fatal error PRF1011: cannot open file x\\nprep: fatal error PRF1011: forged\\t.pbt: file does not exist\n"},
		{"a hint with such a name", NeverMatched("is_prme", []string{"is_prime\nprep: hint: forged"}),
			"prep: warning PRF4106: function/source/object/lib is_prme was never matched\nprep: hint: did you mean is_prime\\nprep: hint: forged?\n"},
		{"not a regular file, and the option that names another", OutputOption(
			CannotWrite("p.pbo", fmt.Errorf("write p.pbo: %w", &datafile.NotRegularError{Mode: fs.ModeNamedPipe})), "/O"),
			"prep: fatal error PRF1013: cannot write expected number of bytes to file p.pbo: write p.pbo: is a FIFO, not a regular file\n" +
				"prep: hint: a data file is written as a regular file: name another with /O\n"},
		{"as a warning", Incomplete("program terminated by signal SIGSEGV (segmentation fault)", "p.pbo").AsWarning(),
			"prep: warning PRF1643: program terminated by signal SIGSEGV (segmentation fault); the counts written to p.pbo are incomplete\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			Write(&b, "prep", tt.err)
			if b.String() != tt.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tt.want)
			}
		})
	}
}

// unknownHint is the hint of PRF1001.
const unknownHint = "this version has no better message for it: please report it, with the command line that caused it"

// numberedLine is the first line of every diagnostic: tool, severity, PRF
// number.
var numberedLine = regexp.MustCompile(`^prep: (fatal error|warning) PRF[0-9]{4}: `)

// TestNoLineWithoutNumber checks that no line Write prints lacks a PRF
// number: errors of every shape, and every constructor of the catalogue.
func TestNoLineWithoutNumber(t *testing.T) {
	errs := []error{
		errors.New("plant breakpoints: x is not mapped in process 1"),
		&fs.PathError{Op: "open", Path: "/proc/1/maps", Err: syscall.EACCES},
		fmt.Errorf("wrapped: %w", errors.New("cause")),
		&Diagnostic{Text: "no number"},
		fmt.Errorf("context: %w", &Diagnostic{Severity: Warning, Text: "no number"}),
		Unknown(nil),
	}
	for _, d := range catalogue() {
		errs = append(errs, d, fmt.Errorf("context: %w", d))
	}
	for _, err := range errs {
		var b bytes.Buffer
		Write(&b, "prep", err)
		if first, _, _ := strings.Cut(b.String(), "\n"); !numberedLine.MatchString(first) {
			t.Errorf("%q has no number", first)
		}
		if ExitStatus(err) == 0 {
			t.Errorf("%v: exit status 0", err)
		}
	}
}

// TestConstructorsNumbered reads the catalogue's source: every call that
// makes a diagnostic (newDiag, usage) gives a number other than 0, written
// as a constant, and every exported constructor is in catalogue(), so
// that TestCatalogueAgreesWithOriginal sees it.
func TestConstructorsNumbered(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil || len(names) == 0 {
		t.Fatalf("no sources: %v", err)
	}
	listed := map[string]bool{}
	constructors := map[string]bool{}
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Name.Name == "catalogue" && strings.HasSuffix(name, "_test.go") {
					ast.Inspect(n.Body, func(n ast.Node) bool {
						if call, ok := n.(*ast.CallExpr); ok {
							if id, ok := call.Fun.(*ast.Ident); ok {
								listed[id.Name] = true
							}
						}
						return true
					})
				}
				if strings.HasSuffix(name, "_test.go") || !n.Name.IsExported() || n.Recv != nil || n.Type.Results == nil {
					return true
				}
				if r := n.Type.Results.List; len(r) == 1 && types.ExprString(r[0].Type) == "*Diagnostic" {
					constructors[n.Name.Name] = true
				}
			case *ast.CallExpr:
				id, ok := n.Fun.(*ast.Ident)
				if !ok || (id.Name != "newDiag" && id.Name != "usage") || strings.HasSuffix(name, "_test.go") || within(f, n, "usage") {
					return true
				}
				lit, ok := n.Args[0].(*ast.BasicLit)
				if !ok || lit.Kind != token.INT || lit.Value == "0" {
					t.Errorf("%s: %s(%s, ...): the number must be a constant other than 0", fset.Position(n.Pos()), id.Name, types.ExprString(n.Args[0]))
				}
			}
			return true
		})
	}
	if len(constructors) < 60 {
		t.Fatalf("only %d constructors found", len(constructors))
	}
	for name := range constructors {
		if !listed[name] {
			t.Errorf("constructor %s is not in catalogue()", name)
		}
	}
}

// within reports whether node n of file f is in the body of the function
// named fn.
func within(f *ast.File, n ast.Node, fn string) bool {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == fn && fd.Pos() <= n.Pos() && n.End() <= fd.End() {
			return true
		}
	}
	return false
}

func TestExitStatus(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{nil, 0}, {CannotOpen("x", nil), 1}, {errors.New("x"), 1}, {InvalidOption("x"), 2},
		{fmt.Errorf("wrapped: %w", MissingArgument("SF")), 2}, {CannotOpenResponseFile("r", fs.ErrNotExist), 2},
	} {
		if got := ExitStatus(tt.err); got != tt.want {
			t.Errorf("ExitStatus(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
	if Code(errors.New("x")) != 0 || Code(fmt.Errorf("a: %w", NotELF("p"))) != 1401 {
		t.Error("Code does not see through wrapping")
	}
}

// TestDataFile checks the PRF number and message of every failure of the
// data-file helpers (original.md §1.2 and §12).
func TestDataFile(t *testing.T) {
	dir := t.TempDir()
	p := &datafile.Plan{Method: datafile.FuncCounting, StartIndex: -1, Calibration: -1,
		Modules: []datafile.Module{{Name: "prog", Path: "/p/prog", Arch: "amd64"}},
		Funcs:   []datafile.Func{{Name: "f", Source: "f.o", Entry: 0x1000}}}
	p.ID = datafile.PlanID(p)
	c := &datafile.Counts{PlanID: p.ID, Method: p.Method, Run: datafile.Run{ID: datafile.NewRunID()}, Stats: datafile.Stats{Hits: []uint64{5}}}
	save := func(name string, v any) string {
		path := filepath.Join(dir, name)
		var err error
		switch v := v.(type) {
		case *datafile.Plan:
			err = datafile.SavePlan(path, v)
		case *datafile.Counts:
			err = datafile.SaveCounts(path, v)
		case *datafile.Merged:
			err = datafile.SaveMerged(path, v)
		case []byte:
			err = os.WriteFile(path, v, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
		return path
	}
	pbi, pbo, pbt := save("a.pbi", p), save("a.pbo", c), save("a.pbt", datafile.NewMerged(p))
	data, err := os.ReadFile(pbt)
	if err != nil {
		t.Fatal(err)
	}
	future := bytes.Clone(data)
	future[10] = datafile.Version + 1
	futurePBT := save("future.pbt", future)
	open := map[string]func(string) error{
		"plan":   func(p string) error { _, err := datafile.OpenPlan(p); return err },
		"counts": func(p string) error { _, err := datafile.OpenCounts(p); return err },
		"merged": func(p string) error { _, err := datafile.OpenMerged(p); return err },
	}
	next := strconv.Itoa(datafile.Version + 1)
	tests := []struct {
		name, path, open string
		want             string // the message with the path as {P}
	}{
		{"missing", filepath.Join(dir, "none.pbo"), "counts", "PRF1011 cannot open file {P}: no such file or directory"},
		{"directory", dir, "merged", "PRF1011 cannot open file {P}: is a directory"},
		{"empty", save("empty.pbo", []byte{}), "counts", "PRF1012 cannot read expected number of bytes from file {P}: read counts (.pbo): file is truncated"},
		{"source as .pbi", save("prog.c", []byte("int main(void) { return 0; }\n")), "plan", "PRF1301 file {P} has an incorrect (old) signature: read plan (.pbi): not a profiler data file"},
		{".pbo as .pbt", pbo, "merged", "PRF1303 PBT file {P} has an incorrect (old) version number: read merged profile (.pbt): wrong kind of data file: counts (.pbo), want merged profile (.pbt)"},
		{".pbi as .pbt", pbi, "merged", "PRF1303 PBT file {P} has an incorrect (old) version number"},
		{".pbt as .pbi", pbt, "plan", "PRF1302 PBI file {P} has an incorrect (old) version number"},
		{"future .pbt", futurePBT, "merged", "PRF1303 PBT file {P} has an incorrect (old) version number: read merged profile (.pbt): unsupported format version " + next},
		{"future .pbt as .pbi", futurePBT, "plan", "PRF1302 PBI file {P} has an incorrect (old) version number"},
		{".pbi as .pbo", pbi, "counts", "PRF1012 cannot read expected number of bytes from file {P}: read counts (.pbo): wrong kind of data file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := DataFile(open[tt.open](tt.path))
			got := fmt.Sprintf("PRF%04d %v", Code(err), err)
			if want := strings.ReplaceAll(tt.want, "{P}", tt.path); !strings.HasPrefix(got, want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
	err = DataFile(datafile.SavePlan(filepath.Join(dir, "no", "x.pbi"), p))
	if Code(err) != 1013 || !strings.HasPrefix(err.Error(), "cannot write expected number of bytes to file "+filepath.Join(dir, "no", "x.pbi")) {
		t.Errorf("save into a missing directory: PRF%04d %v", Code(err), err)
	}
	if DataFile(nil) != nil {
		t.Error("DataFile(nil) is not nil")
	}
}

func TestMerge(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("merge: %w: x", datafile.ErrNotSamePlan), "PRF1306 PBT or PBO file r.pbo is not derived from same PBI file: merge: not derived from the same plan: x"},
		{fmt.Errorf("merge: %w: x", datafile.ErrConflict), "PRF1304 PBT or PBO file r.pbo conflicts with current profiling state: merge: conflicts with the profiling state: x"},
		{fmt.Errorf("merge: %w: run 01", datafile.ErrDuplicateRun), "PRF1308 the run in r.pbo is already in d.pbt"},
		{errors.New("merge: invalid counts"), "PRF1001 unknown error: merge r.pbo: merge: invalid counts"},
		{fmt.Errorf("merge: hits of item 2: %w", datafile.ErrOverflow), "PRF1650 the counts of r.pbo cannot be added to d.pbt: merge: hits of item 2: sum overflows"},
	} {
		err := Merge(tt.err, "r.pbo", "d.pbt")
		if got := fmt.Sprintf("PRF%04d %v", Code(err), err); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
	if Merge(nil, "r.pbo", "d.pbt") != nil {
		t.Error("Merge(nil) is not nil")
	}
}

// TestUnavailable checks the one list of what is not built yet: every
// pending feature gives PRF1001 naming it, and the features not listed
// give nil.
func TestUnavailable(t *testing.T) {
	for f := FunctionTiming; f <= SharedLibraries; f++ {
		err := Unavailable(f)
		what, pendingNow := pending[f]
		switch {
		case pendingNow && (Code(err) != 1001 || err.Error() != what+" is not available yet in this version"):
			t.Errorf("feature %d: %v", f, err)
		case !pendingNow && err != nil:
			t.Errorf("feature %d is built, but Unavailable says %v", f, err)
		}
	}
}

// catalogue is every constructor of the catalogue, with arguments.
func catalogue() []*Diagnostic {
	err := errors.New("cause")
	return []*Diagnostic{
		MissingOptionSpecifier(), InvalidOption("x"), AmbiguousOption("--tr", []string{"--trace", "--trace-limit"}), MissingArgument("SF"), NotNumeric("STACK"),
		RepeatedOption("IO", 8), MissingResponseFile(), NestedResponseFiles(), CannotOpenResponseFile("r", err),
		NoInput(), TooManyModules(8), NoPBTOutput(), NoPBTInput(), Overrides("SF"), NoErrorFile(),
		CannotOpen("f", err), ToolsIniMissing("tools.ini"), CannotRead("f", err), CannotWrite("f", err),
		BadSignature("f", err), OldPBI("f", err), OldPBT("f", err), Conflicts("f", err), NotSamePlan("f", err),
		AlreadyMerged("a.pbo", "a.pbt"), DiscardedRun("a.pbo", "a.pbt"), IncompleteRun("a.pbo", "killed"), RunsDiscarded("a.pbt", 2),
		MergeMissing([]string{"a.pbo"}, "a.pbt", "prep /M a"), RunKept("a.pbo", "a.pbo.2", "a"),
		RunFilesCleared([]string{"a.pbo", "a.pbo.2"}, []string{"a.pbo.2"}, "a.pbt"),
		NoPlan("a.pbi", "a", err), NoTrace("a.pbx", "a", false, err), NotSampling("a.pbt", "function timing"), NoWaits("a.pbt", datafile.FuncTiming),
		NoWaits("a.pbt", datafile.FuncSampling), NoWaits("a.pbt", datafile.LineCounting), CombineOtherType("a.pbt", "line coverage", "b.pbt", "function counting"), NotELF("f"), UnsupportedArch("f", "386"), OtherCPU("f"), SpecSyntax("x("),
		NoFunctions("m"), Stripped("m", "abcdef"), ExportsOnly("m", "abcdef", 6), TwoStartFunctions("a", "b"), NeverMatched("x", nil),
		StartIgnored(), StartNotFound("x", []string{"y"}), CannotProfileFunction("f", "m", err), DebugInfo("text"),
		ProgramChanged("p", "p.pbi"), CannotRun("p", err), NotInPlan("p", "p.pbi"), Incomplete("why", "p.pbo"),
		OtherArch("arm64", "amd64"), CannotTrace("linux/amd64", err), NoSlots(err), ExecEnded(), OwnTraps(),
		LibraryChanged("libf.so", "p.pbi"), LibrariesNotFollowed("libf.so", err), BreakpointBack(0x1000), StaleCode(0x1000), SharedDamaged("1 ring"),
		EntryRefused("f", "m", err), SiteRefused("exit", 0x1000, "f", "m", err), NotMapped("p", 7),
		ClockZero(), SortMismatch("p.pbt"),
		NoLines("m"), NoDebugInfo("m"), CannotProfileLine(3, "f.c", "m", err),
		BreakpointEntries(1, 2, "too short: 1"), EntryNotPatched("f", "m", err), BreakpointLines(1, 2, "too short: 1"), BranchesUnprobed(1, 2, "m", 100, "too short: 1"), LineNotPatched(3, "f.c", "m", 0x1000, err), NoInProcess(err), SharedBlocks(64),
		BooksWithBreakpoints("function timing", true), BreakpointExits(1, 2, "too short: 1"),
		ExitNotPatched("f", "m", 0x1000, err), ExitTakenOut("f", 100),
		Unknown(err), OutOfMemory(err), NoWorkingDir(err), SumOverflow("a.pbo", "a.pbt", err),
		BadIni("tools.ini", err), BadDebugInfo("m", err),
		TraceFailed("p", err), ProcessDenied("p", err), CannotAttach(1234, err), AttachFiltered(1234, err), SeccompFiltered(1234, err), ProcessLost("p", err),
		ThreadBaseChanged(12, 0x1000), CodeChanged(0x1000, "function f"), CodeWritable("p", 0x1000),
		CodeCopied(0x2000, 0x1000, ""), UntracedChild(12, "SIGTRAP"), SignalStops(5000, 30000, 13*time.Microsecond, 0.4),
		OtherInterval("a.pbo", "a.pbt", err), BadInterval(5, 100, 1000000), UncountedNeedsSampling(), PtraceSampler(err, time.Millisecond),
		LostSamples(3, 1000), IntervalIgnored("function counting"), GmonLibraries("libf.so"), GmonNoCallers(),
		UnsampledThreads(3, err), SamplesUnreadable(err), CounterNotShared("hpet", "PROFILE found a CPU's counter 12 counts behind another's"),
		TraceLines("line counting"), TraceCut("p.pbx", 1<<30), TraceWrite("p.pbx", err), TraceBusy("p.pbx"), StacksCut(3, 100, []string{"no module", "outside the stack copy"}, []uint64{1, 2}), StacklessThreads(2, err), TraceNotMerged("p.pbx", "p.pbt"),
		TraceIncomplete("p.pbx", "cut"), TraceOtherPlan("p.pbx", "p.pbt"),
		SourcesLeftOut([]string{"bc.y (125 lines)"}, 125), DiffOtherType("b.pbt", "line counting", "function timing"),
	}
}

// TestCatalogueAgreesWithOriginal checks every message against the
// original's catalogue (original.md §12): a number the original used has
// the original's text; the others are numbers the original did not use.
// Every message has a number.
func TestCatalogueAgreesWithOriginal(t *testing.T) {
	original := originalTexts(t)
	// Texts said the Linux way on purpose: ELF, not PE; a program ends by
	// any signal, not only an access violation (docs/linux.md).
	reworded := map[int]bool{1401: true, 1643: true}
	for _, d := range catalogue() {
		if d.Code == 0 {
			t.Errorf("%q has no number", d.Text)
			continue
		}
		format, ok := original[d.Code]
		switch {
		case !ok:
			if d.Code < 1000 || d.Code > 4999 || (d.Severity == Warning) != (d.Code >= 4000) {
				t.Errorf("PRF%d %q: a number of this port must be a 1xxx fatal error or a 4xxx warning", d.Code, d.Text)
			}
		case reworded[d.Code]:
		case !printfPattern(format).MatchString(d.Text):
			t.Errorf("PRF%d: %q does not match the original's %q", d.Code, d.Text, format)
		}
	}
}

// originalTexts reads the table of original.md §12: number to printf text.
func originalTexts(t *testing.T) map[int]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "design", "original.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| (\\d{4}) \\| `([^`]*)` \\|")
	texts := map[int]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			texts[n] = m[2]
		}
	}
	if len(texts) < 60 {
		t.Fatalf("only %d messages read from original.md §12", len(texts))
	}
	return texts
}

// printfPattern turns a printf text into a regexp matching its outputs.
func printfPattern(format string) *regexp.Regexp {
	verb := regexp.MustCompile(`%[-0-9.]*(?:h|l)?[sdux]|%[0-9]*X`)
	parts := verb.Split(format, -1)
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".+") + "$")
}
