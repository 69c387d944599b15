// Command branchcheck compares the branch ways of a run of PROFILE with
// the ways valgrind's callgrind saw the same run's conditional jumps go.
// A line coverage plan (prep /LV) lists the conditional branches of the
// program's code; its run's .pbo says, for each, whether it ever went to
// its target and whether it ever went on to the next instruction.
// callgrind, run with --collect-jumps=yes --dump-instr=yes, writes how
// many times each conditional jump went to its target (jcnd=TAKEN/EXECUTED
// lines) and how many times each instruction ran (Ir). Used by
// e2e.TestBranchesRealPrograms; any deterministic program will do.
//
//	branchcheck PROG.pbi PROG.pbo callgrind.out
//
// For each branch of the program's own module (the plan's first), by
// callgrind a way went when: to the target, some jcnd= line from the
// branch to the plan's target has TAKEN above 0; on, the instruction ran
// (its Ir, or the jcnd= lines' EXECUTED if more) more times than it went
// to the target. A branch callgrind does not show never ran. It prints
//
//	N branches of PROG: W ways went by callgrind, profile agrees on A; M differ (C by callgrind only, P by the profile only)
//
// where A is the ways that went by both and M those that went by one
// only, then the first branches that differ. Ways that went by neither
// (mostly code that never ran) are not counted: A/(A+M) is the share of
// agreement. Its exit status is 0 whether or not they agree (the caller
// judges); 1 on input it cannot read, 2 on a usage error.
//
// # Addresses
//
// callgrind writes an object's addresses less its text bias (valgrind
// 3.19's callgrind/dump.c subtracts obj->offset), which are link-time
// addresses, but older versions wrote run-time ones. For a
// position-independent program (Module.PIE) the bias is therefore found,
// not assumed: every jump callgrind saw go that matches a plan's branch
// by its displacement (Target-Addr) and its address within a 4 KiB page
// (a load bias is a multiple of the page size) votes for the difference
// of their addresses, and so does every function of the plan callgrind
// saw run, its lowest address there less its entry (which runs whenever
// the function does: the way bench/linecheck finds it). Jumps vote even
// where callgrind's demangled names do not match the plan's linkage
// names (C++). The bias most votes agree on wins. A program that is not
// position-independent is where it was linked: its bias is 0.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/sourceprofiler/sprof/bench/internal/callgrind"
	"github.com/sourceprofiler/sprof/datafile"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: branchcheck PROG.pbi PROG.pbo callgrind.out")
		os.Exit(2)
	}
	if err := run(os.Stdout, os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "branchcheck:", err)
		os.Exit(1)
	}
}

// run compares the branch ways of the run pbo of the plan pbi with those
// of the callgrind output cg, and writes what it found to w.
func run(w io.Writer, pbi, pbo, cg string) error {
	plan, err := datafile.OpenPlan(pbi)
	if err != nil {
		return err
	}
	counts, err := datafile.OpenCounts(pbo)
	if err != nil {
		return err
	}
	if counts.PlanID != plan.ID || len(counts.Stats.Branches) != 2*len(plan.Branches) {
		return fmt.Errorf("%s is not a run of the plan %s", pbo, pbi)
	}
	if len(plan.Modules) == 0 || len(plan.Branches) == 0 {
		return fmt.Errorf("%s has no branch: not a line coverage plan (prep /LV)", pbi)
	}
	f, err := os.Open(cg)
	if err != nil {
		return err
	}
	defer f.Close()
	prof, err := callgrind.Read(f, callgrind.SameFile(plan.Modules[0].Path))
	if err != nil {
		return fmt.Errorf("read %s: %w", cg, err)
	}
	var bias uint64
	if plan.Modules[0].PIE {
		if bias, err = loadBias(plan, prof); err != nil {
			return fmt.Errorf("%s: %w", cg, err)
		}
	}
	c := compare(plan, counts.Stats.Branches, counts.Stats.Unprobed, prof, bias)
	fmt.Fprintf(w, "%d branches of %s: %d ways went by callgrind, profile agrees on %d; %d differ (%d by callgrind only, %d by the profile only)\n",
		c.branches, plan.Modules[0].Name, c.went, c.agree, c.onlyCallgrind+c.onlyProfile, c.onlyCallgrind, c.onlyProfile)
	if c.uncounted > 0 {
		fmt.Fprintf(w, "%d more branches the run did not count (PRF4687), left out\n", c.uncounted)
	}
	if c.elsewhere > 0 {
		fmt.Fprintf(w, "%d branches went elsewhere than their targets by callgrind (bias %#x)\n", c.elsewhere, bias)
	}
	for _, d := range c.differ {
		fmt.Fprintln(w, "  ", d)
	}
	return nil
}

// pageMask keeps an address's place within a 4 KiB page, which a load
// bias leaves as it is.
const pageMask = 0xfff

// loadBias finds where callgrind's addresses of the plan's first module
// are, less its link-time addresses (see the package comment): the
// difference most of its jumps and functions agree on.
func loadBias(plan *datafile.Plan, p *callgrind.Profile) (uint64, error) {
	type key struct{ page, disp uint64 }
	byKey := map[key][]uint64{}
	for _, b := range plan.Branches {
		if mod := plan.Lines[b.Line].Module; mod == 0 {
			k := key{b.Addr & pageMask, b.Target - b.Addr}
			byKey[k] = append(byKey[k], b.Addr)
		}
	}
	votes := callgrind.Votes{}
	for a, n := range p.Taken {
		if n == 0 {
			continue
		}
		for _, addr := range byKey[key{a.From & pageMask, a.To - a.From}] {
			votes[a.From-addr]++
		}
	}
	for _, f := range plan.Funcs {
		if f.Module == 0 {
			votes.Entry(p, f.Name, f.Entry)
		}
	}
	bias, ok := votes.Bias()
	if !ok {
		return 0, fmt.Errorf("no jump or function of %s ran under callgrind", plan.Modules[0].Name)
	}
	return bias, nil
}

// comparison is what compare found, in ways: each branch has two, to
// its target and on.
type comparison struct {
	branches      int // of the first module
	went          int // ways that went by callgrind
	agree         int // of those, the ways that went by the profile too
	onlyCallgrind int // ways that went by callgrind and not by the profile
	onlyProfile   int // ways that went by the profile and not by callgrind
	elsewhere     int // branches callgrind saw jump to another target
	uncounted     int // branches the run did not count (Stats.Unprobed)
	differ        []string
}

// maxDiffer is how many differing branches compare describes.
const maxDiffer = 20

// compare compares the ways of the branches of the plan's first module
// in ways (the run's Stats.Branches) with what callgrind saw of them in
// p, at their addresses plus bias; a branch the run did not count
// (unprobed, its Stats.Unprobed: a breakpoint taken out before both its
// ways went) is left out, counted apart.
func compare(plan *datafile.Plan, ways, unprobed []uint64, p *callgrind.Profile, bias uint64) comparison {
	elsewhere := map[uint64]bool{}
	for a, n := range p.Taken {
		if n > 0 {
			elsewhere[a.From] = true // (until a branch claims it below)
		}
	}
	var c comparison
	for i, b := range plan.Branches {
		l := plan.Lines[b.Line]
		if l.Module != 0 {
			continue
		}
		if i < len(unprobed) && unprobed[i] > 0 {
			c.uncounted++
			delete(elsewhere, b.Addr+bias)
			continue
		}
		c.branches++
		from := b.Addr + bias
		taken := p.Taken[callgrind.Arc{From: from, To: b.Target + bias}]
		execs := max(p.Ir[from], p.Execs[from])
		if taken > 0 {
			delete(elsewhere, from)
		}
		cg := [2]bool{taken > 0, execs > taken}
		prof := [2]bool{ways[2*i] > 0, ways[2*i+1] > 0}
		for k := range cg {
			switch {
			case cg[k] && prof[k]:
				c.went++
				c.agree++
			case cg[k]:
				c.went++
				c.onlyCallgrind++
			case prof[k]:
				c.onlyProfile++
			}
		}
		if cg != prof && len(c.differ) < maxDiffer {
			c.differ = append(c.differ, fmt.Sprintf("%#x %s:%d: callgrind taken %d/%d; profile target %d, on %d",
				b.Addr, fileName(plan, l), l.Line, taken, execs, ways[2*i], ways[2*i+1]))
		}
	}
	c.elsewhere = countElsewhere(plan, elsewhere, bias)
	return c
}

// countElsewhere counts the branches of the plan's first module among
// the jumps' addresses in from (plus bias): jumps from a branch that
// callgrind saw go to other targets than the plan's, and not to its.
func countElsewhere(plan *datafile.Plan, from map[uint64]bool, bias uint64) int {
	n := 0
	for _, b := range plan.Branches {
		if plan.Lines[b.Line].Module == 0 && from[b.Addr+bias] {
			n++
		}
	}
	return n
}

// fileName is the name of the source file of l, or "?".
func fileName(plan *datafile.Plan, l datafile.Line) string {
	if m := plan.Modules[l.Module]; l.File >= 0 && l.File < len(m.Files) {
		return m.Files[l.File]
	}
	return "?"
}
