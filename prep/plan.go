package prep

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/dwarf"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// MaxPrograms is how many programs phase I takes: the main program and up to
// seven shared libraries (programname1 ... programname8 of the original).
const MaxPrograms = 8

// Options are the settings of phase I.
type Options struct {
	// Method is the profile type (/FC /FT /FV /LC /LV /FS).
	Method datafile.Method
	// Programs are the ELF files to profile: the main program first, then
	// shared libraries. Relative paths are taken from the current directory.
	Programs []string
	// Specs are the selections in the order they apply: the defaults
	// ([DefaultSpecs]) first, then /INC, /EXC and /EXCALL from left to right.
	Specs []Spec
	// Start is the /SF start function, or "".
	Start string
	// Attribution is /AT; Stack is /STACK (0: unlimited).
	Attribution bool
	Stack       int
	// Calibration is /CB in nanoseconds per event, or -1 when not given.
	Calibration int64
	// Uncounted is --no-call-counts: function sampling that counts no
	// call (datafile.Plan.Uncounted).
	Uncounted bool
	// NoBranches is --no-branches: line coverage without its branches
	// (datafile.Plan.Branches), whose probes cost PROFILE's start-up
	// more than the lines' do (docs/performance.md, "Branch coverage (issue 37)").
	NoBranches bool
	// Warn receives the warnings (PRF4106, PRF4524, PRF4525...); nil drops
	// them.
	Warn func(*prf.Diagnostic)
}

// BuildPlan is phase I: it reads the programs and returns the plan of what
// to profile.
//
// Every selected function's site is checked by decoding the function from
// its entry through the site's instruction: a site that is not on an
// instruction boundary, does not decode or is a trap is dropped with warning
// PRF4525, never planted. Functions are in module order, then by entry address. The
// /SF name is looked up among the selected functions by stored or demangled
// name: PRF4524 (a warning; nothing will be counted) when none has it,
// PRF1522 when several do. Fatal errors carry the original's numbers:
// PRF1421 (no program), PRF1423 (more than eight), PRF1422 (a malformed
// specification), PRF1011 (a program that cannot be opened), PRF1401 (not an
// ELF executable or shared library), PRF1307 (modules of different
// architectures), PRF1521 (no function left; with where debugging
// information can come from when the program is stripped).
//
// What this version cannot do yet (whatever prf.Unavailable lists:
// nothing today) is refused with PRF1001 after the checks common to all
// methods.
func BuildPlan(o Options) (*datafile.Plan, error) {
	return buildPlan(o, Unavailable)
}

// buildPlan is BuildPlan with the availability check given: nil plans
// everything PREP knows how to plan, for the tests.
func buildPlan(o Options, unavailable func(Options) error) (*datafile.Plan, error) {
	warn := o.Warn
	if warn == nil {
		warn = func(*prf.Diagnostic) {}
	}
	patterns, start, err := checkRequest(&o, unavailable, warn)
	if err != nil {
		return nil, err
	}

	mods, err := openModules(o.Programs)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, m := range mods {
			m.file.Close()
		}
	}()
	warnModules(mods, o.Method, warn)

	plan := &datafile.Plan{
		Method:      o.Method,
		StartFunc:   start,
		StartIndex:  -1,
		Attribution: o.Attribution,
		StackDepth:  o.Stack,
		Calibration: o.Calibration,
		Uncounted:   o.Uncounted,
	}
	for _, m := range mods {
		plan.Modules = append(plan.Modules, m.module)
	}
	// (A line profile selects line by line: its warnings are planLines'.)
	funcWarn := warn
	if !o.Method.IsFunction() {
		funcWarn = func(*prf.Diagnostic) {}
	}
	sel, left := selectFunctions(mods, patterns, funcWarn)
	plan.LeftOut = left
	for _, s := range sel {
		plan.Funcs = append(plan.Funcs, s.f)
	}
	for mi, m := range mods {
		plan.Modules[mi].CompDirs = unitDirs(m, mi, sel)
	}
	if err := planModuleLines(plan, mods, sel, patterns, warn); err != nil {
		return nil, err
	}
	if o.Method == datafile.FuncSampling && !o.Attribution {
		// (The sampled stacks' inlined frames: /AT takes no stack.)
		if plan.Inlined, err = planInlined(mods, sel); err != nil {
			return nil, err
		}
	}
	if o.NoBranches {
		plan.Branches = nil
	}
	if len(plan.Funcs) == 0 && o.Method.IsFunction() {
		if f := mods[0].file; len(f.Funcs) == 0 && !f.HasDWARF {
			return nil, prf.Stripped(mods[0].module.Path, hex.EncodeToString(f.BuildID))
		}
		return nil, prf.NoFunctions(mods[0].module.Path)
	}
	if start != "" {
		if plan.StartIndex, err = findStart(plan.Funcs, start, warn); err != nil {
			return nil, err
		}
	}
	plan.ID = datafile.PlanID(plan)
	return plan, nil
}

// checkRequest checks the options and parses the selection; it returns
// the patterns and the /SF function, "" when there is none or the profile
// type ignores it. With unavailable, it refuses what this version cannot
// do yet.
func checkRequest(o *Options, unavailable func(Options) error, warn func(*prf.Diagnostic)) ([]pattern, string, error) {
	if err := checkOptions(o); err != nil {
		return nil, "", err
	}
	patterns, err := parseSpecs(o.Specs)
	if err != nil {
		return nil, "", err
	}
	start := o.Start
	if start != "" && (!o.Method.IsFunction() || o.Method == datafile.FuncSampling) {
		warn(prf.StartIgnored())
		start = ""
	}
	if unavailable != nil {
		o.Start = start
		if err := unavailable(*o); err != nil {
			return nil, "", err
		}
	}
	return patterns, start, nil
}

// warnModules gives the warnings of reading the modules' debugging
// information, and for a function profile the warning of a module whose
// functions are its exports alone.
func warnModules(mods []*openModule, method datafile.Method, warn func(*prf.Diagnostic)) {
	for _, m := range mods {
		for _, w := range m.file.Warnings {
			warn(prf.DebugInfo(w))
		}
		if f := m.file; f.ExportsOnly && len(f.Funcs) > 0 && method.IsFunction() {
			// (A line profile of it is PRF1621.)
			warn(prf.ExportsOnly(m.module.Path, hex.EncodeToString(f.BuildID), len(f.Funcs)))
		}
	}
}

// planModuleLines plans the lines: of a line profile, those of the
// selected functions; of a sampling profile, every line of the functions,
// to place each sample.
func planModuleLines(plan *datafile.Plan, mods []*openModule, sel []selected, patterns []pattern, warn func(*prf.Diagnostic)) error {
	if !plan.Method.IsFunction() {
		// Line profiles: the lines of the selected functions.
		if !mods[0].file.HasDWARF {
			return prf.NoDebugInfo(mods[0].module.Path)
		}
		lines, files, branches, err := planLines(mods, patterns, plan.Method, warn)
		if err != nil {
			return debugInfoError(mods[0].module.Path, err)
		}
		if len(lines) == 0 {
			return prf.NoLines(mods[0].module.Path)
		}
		plan.Lines, plan.Branches = lines, branches
		for mi := range plan.Modules {
			plan.Modules[mi].Files = files[mi]
		}
	}
	if plan.Method.IsSampling() {
		// Sampling: every line of the functions, to place each sample.
		lines, files, err := sampledLines(mods, sel)
		if err != nil {
			return debugInfoError(mods[0].module.Path, err)
		}
		plan.Lines = lines
		for mi := range plan.Modules {
			plan.Modules[mi].Files = files[mi]
		}
	}
	return nil
}

// Unavailable returns PRF1001 for the first thing o asks that this version
// cannot do yet (the profile type, then /SF, /AT and /CB, as prf's one list
// says), or nil.
func Unavailable(o Options) error {
	features := map[datafile.Method]prf.Feature{
		datafile.FuncTiming:   prf.FunctionTiming,
		datafile.LineCounting: prf.LineCounting,
		datafile.LineCoverage: prf.LineCoverage,
	}
	if f, ok := features[o.Method]; ok {
		if err := prf.Unavailable(f); err != nil {
			return err
		}
	}
	for _, c := range []struct {
		asked bool
		f     prf.Feature
	}{{o.Start != "", prf.StartFunction}, {o.Attribution, prf.Attribution}, {o.Calibration >= 0, prf.Calibration}} {
		if c.asked {
			if err := prf.Unavailable(c.f); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkOptions refuses options no command line can give.
func checkOptions(o *Options) error {
	switch {
	case !o.Method.Valid():
		return fmt.Errorf("build plan: unknown profile method %d", uint16(o.Method))
	case len(o.Programs) == 0:
		return prf.NoInput()
	case len(o.Programs) > MaxPrograms:
		return prf.TooManyModules(MaxPrograms)
	case o.Stack < 0:
		return fmt.Errorf("build plan: negative stack depth %d", o.Stack)
	case o.Calibration < -1:
		return fmt.Errorf("build plan: negative calibration %d", o.Calibration)
	case o.Uncounted && (o.Method != datafile.FuncSampling || o.Start != "" || o.Attribution):
		return prf.UncountedNeedsSampling()
	}
	return nil
}

func parseSpecs(specs []Spec) ([]pattern, error) {
	patterns := make([]pattern, 0, len(specs))
	for _, s := range specs {
		p, err := parseSpec(s)
		if err != nil {
			return nil, err
		}
		patterns = append(patterns, p)
	}
	return patterns, nil
}

// debugInfoError gives an error of package dwarf, reading the module at
// path, its number: PRF1649 unless it has one.
func debugInfoError(path string, err error) error {
	if prf.Code(err) != 0 {
		return err
	}
	return prf.BadDebugInfo(path, err)
}

// openModule is an opened program.
type openModule struct {
	file   *dwarf.File
	arch   instr.Arch
	module datafile.Module
	// checks are the Go stack checks found (goStackCheck), by entry:
	// both a function's entry and its lines ask for its check, the lines
	// on several CPUs at once (functionSites).
	checksMu sync.Mutex
	checks   map[uint64]stackCheck
}

// openModules opens the programs, in order, and checks that they share one
// architecture. A program named twice is read once, as the original
// accepted it silently.
func openModules(programs []string) ([]*openModule, error) {
	var mods []*openModule
	fail := func(err error) ([]*openModule, error) {
		for _, m := range mods {
			m.file.Close()
		}
		return nil, err
	}
	seen := map[string]bool{}
	for _, name := range programs {
		abs, err := filepath.Abs(name)
		if err != nil {
			return fail(prf.CannotOpen(name, err))
		}
		if seen[abs] {
			continue
		}
		seen[abs] = true
		m, err := openProgram(abs)
		if err != nil {
			return fail(err)
		}
		mods = append(mods, m)
		if m.module.Arch != mods[0].module.Arch {
			return fail(prf.OtherCPU(abs))
		}
		if m.arch, err = instr.ForName(m.module.Arch); err != nil {
			return fail(prf.UnsupportedArch(abs, m.module.Arch))
		}
	}
	return mods, nil
}

// openProgram opens one program and records its identity.
func openProgram(abs string) (*openModule, error) {
	st, err := os.Stat(abs)
	switch {
	case err != nil:
		return nil, prf.CannotOpen(abs, err)
	case st.IsDir():
		return nil, prf.NotELF(abs)
	}
	f, err := dwarf.Open(abs)
	switch {
	case errors.Is(err, dwarf.ErrNotELF), errors.Is(err, dwarf.ErrNotExecutable):
		return nil, prf.NotELF(abs)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		return nil, prf.CannotOpen(abs, err)
	case err != nil:
		return nil, debugInfoError(abs, err)
	}
	return &openModule{file: f, module: datafile.Module{
		Name:     filepath.Base(abs),
		Path:     abs,
		Arch:     f.Arch,
		BuildID:  datafile.Hex(f.BuildID),
		Size:     st.Size(),
		ModTime:  st.ModTime().UnixNano(),
		PIE:      f.PIE,
		LinkBase: f.LinkBase,
	}}, nil
}

// unitDirs returns the directories of the units of module mi's selected
// functions, for PLIST's search of their sources (datafile.Module's
// CompDirs): where each unit was compiled and, when elsewhere, the
// directory of its main source file, where a generated parser's grammar
// named by #line relative to the generator's directory is found. Sorted,
// each once; "." (where PLIST runs, which it tries anyway) left out. Go
// units, named by their package, have none.
func unitDirs(m *openModule, mi int, sel []selected) []string {
	units := map[int]bool{}
	dirs := map[string]bool{}
	for _, s := range sel {
		u := s.fn.Unit
		if s.f.Module != mi || u < 0 || u >= len(m.file.Units) || units[u] {
			continue
		}
		units[u] = true
		unit := &m.file.Units[u]
		if unit.Language == "go" {
			continue
		}
		for _, d := range []string{unit.CompDir, filepath.Dir(unit.Path)} {
			if d = filepath.Clean(d); d != "." {
				dirs[d] = true
			}
		}
	}
	if len(dirs) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(dirs))
}

// findStart returns the index of the /SF function among funcs: the one whose
// stored name, or one of whose demangled forms, is name exactly. None is
// warning PRF4524, with the names near it.
func findStart(funcs []datafile.Func, name string, warn func(*prf.Diagnostic)) (int, error) {
	found := -1
	for i := range funcs {
		if !slices.Contains(matchNames(funcs[i].Name), name) {
			continue
		}
		if found >= 0 {
			return -1, prf.TwoStartFunctions(funcs[found].Name, funcs[i].Name)
		}
		found = i
	}
	if found < 0 {
		warn(prf.StartNotFound(name, nearNames(name, func(yield func(string) bool) {
			for i := range funcs {
				for _, n := range matchNames(funcs[i].Name) {
					if !yield(n) {
						return
					}
				}
			}
		})))
	}
	return found, nil
}
