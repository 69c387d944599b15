package plist

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
)

// goldenRoot is the directory of the original's outputs, set by
// TestOriginalGoldens for the profiles fromTab builds.
var goldenRoot string

// fromTab returns the pbt whose /T output is the original's file: its
// runs (records 4), start function (5), call depth (2), functions with
// their hits and times (6) and attribution stacks (8 to 10). p gives the
// functions' order in the image, which the records do not: the original
// wrote the k-th attribution group after the k-th record 6 in name order
// while the groups were in image order (original.md §6.4), and the
// functions of the profile are p's that have a record 6, in p's order.
// The file must list every function (no /C). The profile is nil, and
// fromTabErr says why, when the file cannot be read so.
func fromTab(p program, file string) func(string) *datafile.Merged {
	return func(string) *datafile.Merged {
		m, err := parseOriginalTab(p, file)
		if err != nil {
			fromTabErr = err
			return nil
		}
		return m
	}
}

// fromTabErr is why the last fromTab failed.
var fromTabErr error

// listingRuns are runs the original printed only as a listing, with no /T
// output: each is read from the /T output of another run of the same
// program, which names the same functions with the same hits and depth,
// and takes the listing's times (listingTimes).
var listingRuns = map[string]string{
	"fcount/default-noom-plist.out": "fcount/default-plist-t.out",
}

func parseOriginalTab(p program, file string) (*datafile.Merged, error) {
	src := file
	if s, ok := listingRuns[file]; ok {
		src = s
	}
	data, err := os.ReadFile(filepath.Join(goldenRoot, src))
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	type rec6 struct {
		module, source, name string
		hits                 uint64
		time, child          int64
	}
	var (
		m       = &datafile.Merged{Plan: datafile.Plan{StartIndex: -1, Calibration: -1}}
		records []rec6
		groups  [][]datafile.Stack
		names   [][][]string // per group, per stack, its caller names
		start   string
	)
	ns := func(ms string) int64 {
		v, _ := strconv.ParseFloat(ms, 64)
		return int64(v*1e6 + 0.5)
	}
	for _, l := range lines {
		f := strings.Split(l, "\t")
		switch f[0] {
		case "1":
			code, _ := strconv.Atoi(f[1])
			m.Plan.Method = datafile.Method(code)
		case "2":
			m.Stats.TotalTime, m.Stats.OutsideTime = ns(f[1]), ns(f[2])
			m.Stats.CallDepth, _ = strconv.Atoi(f[3])
		case "4":
			date := strings.Fields(f[1])
			m.Runs = append(m.Runs, run(date[len(date)-1], f[2]))
			m.Overheads = append(m.Overheads, 1)
		case "5":
			start = f[1]
		case "6":
			hits, _ := strconv.ParseUint(f[3], 10, 64)
			records = append(records, rec6{f[1], f[2], f[6], hits, ns(f[4]), ns(f[5])})
		case "8":
			groups, names = append(groups, nil), append(names, nil)
		case "9":
			hits, _ := strconv.ParseUint(f[2], 10, 64)
			k := len(groups) - 1
			groups[k] = append(groups[k], datafile.Stack{Hits: hits, Time: ns(f[3]), ChildTime: ns(f[4])})
			names[k] = append(names[k], nil)
		case "10":
			k := len(groups) - 1
			names[k][len(names[k])-1] = append(names[k][len(names[k])-1], f[1])
		}
	}
	// The functions in image order, and their modules in order of first
	// appearance.
	index := map[[2]string]int{}
	modIndex := map[string]int{}
	for _, f := range p.funcs {
		mod := p.modules[f.module]
		for _, r := range records {
			if (r.name != f.name && r.name != msvcDemangle(f.name)) || r.module != mod {
				continue
			}
			if _, ok := modIndex[mod]; !ok {
				modIndex[mod] = len(m.Plan.Modules)
				m.Plan.Modules = append(m.Plan.Modules, datafile.Module{Name: mod, Arch: "386"})
			}
			index[[2]string{mod, f.name}] = len(m.Plan.Funcs)
			m.Plan.Funcs = append(m.Plan.Funcs, datafile.Func{Module: modIndex[mod], Name: f.name, Source: r.source})
			m.Stats.Hits = append(m.Stats.Hits, r.hits)
			if m.Plan.Method.IsTiming() {
				m.Stats.FuncTime = append(m.Stats.FuncTime, r.time)
				m.Stats.ChildTime = append(m.Stats.ChildTime, r.child)
			}
			index[[2]string{mod, r.name}] = len(m.Plan.Funcs) - 1 // callers are named as the records name them
			if f.name == start {
				m.Plan.StartFunc, m.Plan.StartIndex = start, len(m.Plan.Funcs)-1
			}
		}
	}
	if len(m.Plan.Funcs) != len(records) {
		return nil, fmt.Errorf("%s: %d records 6, %d of them functions of the program", file, len(records), len(m.Plan.Funcs))
	}
	if len(groups) > 0 {
		m.Plan.Attribution = true
		if len(groups) != len(m.Plan.Funcs) {
			return nil, fmt.Errorf("%s: %d attribution groups for %d functions", file, len(groups), len(m.Plan.Funcs))
		}
	}
	// The k-th group is the k-th function's in image order. A caller is
	// named as the original named it: the nearest function of that name,
	// in the function's own module first.
	callerIndex := func(fn int, name string) int {
		if name == stackBase {
			return -1
		}
		own := m.Plan.Modules[m.Plan.Funcs[fn].Module].Name
		if i, ok := index[[2]string{own, name}]; ok {
			return i
		}
		for i, f := range m.Plan.Funcs {
			if f.Name == name || msvcDemangle(f.Name) == name {
				return i
			}
		}
		return -2
	}
	for fn, g := range groups {
		for k, s := range g {
			s.Func, s.Key = fn, uint64(len(m.Stats.Stacks))
			for _, name := range names[fn][k] {
				c := callerIndex(fn, name)
				if c == -2 {
					return nil, fmt.Errorf("%s: caller %s of %s is no function", file, name, m.Plan.Funcs[fn].Name)
				}
				s.Callers = append(s.Callers, c)
			}
			m.Stats.Stacks = append(m.Stats.Stacks, s)
		}
	}
	if m.Plan.Method.IsTiming() {
		listing := strings.TrimSuffix(file, "-t.out") + ".out"
		if src != file {
			listing = file
			if err := listingTimes(m, file); err != nil {
				return nil, err
			}
		}
		if err := originalOverheads(m, listing); err != nil {
			return nil, err
		}
		if tt, ok := solvedTimes[file]; ok && !*solve {
			tt.apply(m)
		}
	}
	m.Plan.ID = datafile.PlanID(&m.Plan)
	return m, nil
}

// listingTimes sets the times of m to the ones the timing listing prints,
// in milliseconds: the total, the time outside of functions, and each
// function's time and function+child time; the functions' hits must be
// the listing's.
func listingTimes(m *datafile.Merged, listing string) error {
	data, err := os.ReadFile(filepath.Join(goldenRoot, listing))
	if err != nil {
		return err
	}
	ns := func(ms string) int64 {
		v, _ := strconv.ParseFloat(ms, 64)
		return int64(v*1e6 + 0.5)
	}
	found := 0
	for _, l := range strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(l)
		if v, ok := strings.CutPrefix(t, "Total time: "); ok {
			m.Stats.TotalTime = ns(strings.TrimSuffix(v, " millisecond"))
		}
		if v, ok := strings.CutPrefix(t, "Time outside of functions: "); ok {
			m.Stats.OutsideTime = ns(strings.TrimSuffix(v, " millisecond"))
		}
		f := strings.Fields(t)
		if len(f) < 6 {
			continue
		}
		hits, err := strconv.ParseUint(f[4], 10, 64)
		if err != nil {
			continue
		}
		name := strings.Join(f[5:], " ")
		for i, fn := range m.Plan.Funcs {
			if msvcDemangle(fn.Name)+" ("+fn.Source+")" != name && fn.Name+" ("+fn.Source+")" != name {
				continue
			}
			if m.Stats.Hits[i] != hits {
				return fmt.Errorf("%s: %s hit %d times, its run's /T output %d", listing, name, hits, m.Stats.Hits[i])
			}
			m.Stats.FuncTime[i], m.Stats.ChildTime[i] = ns(f[0]), ns(f[2])
			found++
		}
	}
	if found == 0 {
		return fmt.Errorf("%s: no function's times", listing)
	}
	return nil
}

// originalOverheads sets the runs' overheads to what the text listing of
// the same run prints (the /T output has none): the last run's
// "Overhead Calculated", and the others such that their average, in
// integers as the original's, is its "Overhead Average".
func originalOverheads(m *datafile.Merged, listing string) error {
	data, err := os.ReadFile(filepath.Join(goldenRoot, listing))
	if err != nil {
		return err
	}
	var last, avg int64
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if v, ok := strings.CutPrefix(l, "Overhead Calculated "); ok {
			last, _ = strconv.ParseInt(v, 10, 64)
		}
		if v, ok := strings.CutPrefix(l, "Overhead Average "); ok {
			avg, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	n := int64(len(m.Runs))
	if n == 0 {
		return nil
	}
	rest := last
	if n > 1 {
		rest = (avg*n - last) / (n - 1)
	}
	for i := range m.Overheads {
		m.Overheads[i] = rest
	}
	m.Overheads[n-1] = last
	return nil
}
