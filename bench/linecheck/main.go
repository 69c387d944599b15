// Command linecheck compares the line counts of a run of PROFILE with the
// counts valgrind's callgrind gives of the same run, instruction by
// instruction: a line's count is the number of times its sites ran (a hit
// at any of the line's sites counts it, docs/linux.md), and callgrind's
// Ir of an instruction, dumped with --dump-instr=yes, is the number of
// times it ran. Used by bench/lines; any deterministic program will do.
//
//	linecheck PROG.pbi PROG.pbo callgrind.out
//
// It prints how many lines of the program's own module agree, and the
// first that do not. Instructions that run more than once per execution
// in callgrind's count (a rep-prefixed string instruction counts each
// iteration) are the known way for a correct count to differ.
//
// A line that ran must never read 0 (docs/linux.md, "Debugging
// information"). Given a line coverage plan of the same program
// (COVER.pbi, prep /LV: every statement row of every line), linecheck
// also prints how many of the lines ran, an instruction at one of their
// statement rows executed, and which of them the run counted 0. With
// --dump-line=yes as well, callgrind names each instruction's source
// line, and linecheck prints the same of the lines any instruction of
// which executed: with optimisation that takes in instructions the
// compiler moved ahead of their statement, which ran while the statement
// did not.
//
//	linecheck PROG.pbi PROG.pbo callgrind.out [COVER.pbi]
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sourceprofiler/sprof/bench/internal/callgrind"
	"github.com/sourceprofiler/sprof/datafile"
)

func main() {
	if len(os.Args) != 4 && len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: linecheck PROG.pbi PROG.pbo callgrind.out [COVER.pbi]")
		os.Exit(2)
	}
	cover := ""
	if len(os.Args) == 5 {
		cover = os.Args[4]
	}
	if err := run(os.Stdout, os.Args[1], os.Args[2], os.Args[3], cover); err != nil {
		fmt.Fprintln(os.Stderr, "linecheck:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, pbi, pbo, cg, cover string) error {
	plan, err := datafile.OpenPlan(pbi)
	if err != nil {
		return err
	}
	counts, err := datafile.OpenCounts(pbo)
	if err != nil {
		return err
	}
	if counts.PlanID != plan.ID || len(counts.Stats.Hits) != len(plan.Lines) {
		return fmt.Errorf("%s is not a line profile of the plan %s", pbo, pbi)
	}
	f, err := os.Open(cg)
	if err != nil {
		return err
	}
	defer f.Close()
	prof, err := callgrind.Read(f, callgrind.SameFile(plan.Modules[0].Path))
	if err != nil {
		return fmt.Errorf("%s: %w", cg, err)
	}
	bias, err := loadBias(plan, prof)
	if err != nil {
		return fmt.Errorf("%s: %w", cg, err)
	}
	c := compare(plan, counts.Stats.Hits, prof.Ir, bias)
	fmt.Fprintf(w, "%d of %d lines of %s counted as callgrind ran their sites", c.same, c.lines, plan.Modules[0].Name)
	if c.ran > 0 {
		fmt.Fprintf(w, " (%d of them ran)", c.ran)
	}
	fmt.Fprintln(w)
	for _, d := range c.differ {
		fmt.Fprintln(w, "  ", d)
	}
	if cover != "" {
		cp, err := datafile.OpenPlan(cover)
		if err != nil {
			return err
		}
		if len(cp.Modules) == 0 || !bytes.Equal(cp.Modules[0].BuildID, plan.Modules[0].BuildID) || !cp.Method.IsCoverage() {
			return fmt.Errorf("%s is not a line coverage plan of %s", cover, plan.Modules[0].Path)
		}
		ran := map[callgrind.Line]uint64{}
		m := cp.Modules[0]
		for _, l := range cp.Lines {
			if l.Module == 0 && l.File >= 0 && l.File < len(m.Files) {
				for _, a := range l.Addrs {
					ran[callgrind.Line{File: m.Files[l.File], Line: l.Line}] += prof.Ir[a+bias]
				}
			}
		}
		printUnseen(w, "ran, a statement row of theirs", plan, counts.Stats.Hits, prof.Ir, bias, ran)
	}
	if len(prof.Lines) > 0 {
		printUnseen(w, "ran, any instruction of theirs", plan, counts.Stats.Hits, prof.Ir, bias, prof.Lines)
	}
	return nil
}

// printUnseen prints how many lines of the plan's first module ran, by
// ran (the executions of their instructions, by source line), how many
// of them no site of which ran under callgrind (sites that miss a line
// that ran), and how many read 0 in hits (the first of each). A line
// whose sites ran under callgrind and that read 0 ran otherwise in
// PROFILE's run (a program whose hash tables follow its addresses).
func printUnseen(w io.Writer, which string, plan *datafile.Plan, hits []uint64, ir map[uint64]uint64, bias uint64, ran map[callgrind.Line]uint64) {
	n, unsited, zero := unseen(plan, hits, ir, bias, ran)
	fmt.Fprintf(w, "%d lines of %s %s: %d with no site that ran, %d read 0\n", n, plan.Modules[0].Name, which, len(unsited), len(zero))
	for _, list := range [][]string{unsited, zero} {
		for i, z := range list {
			if i == 20 {
				break
			}
			fmt.Fprintln(w, "  ", z)
		}
	}
}

// unseen returns how many lines of the plan's first module ran, some
// instruction of theirs executed in lines (the instructions' executions by
// source line), those of them none of whose sites ran in ir (at their
// addresses plus bias), and those that hits counts 0.
func unseen(plan *datafile.Plan, hits []uint64, ir map[uint64]uint64, bias uint64, lines map[callgrind.Line]uint64) (ran int, unsited, zero []string) {
	m := plan.Modules[0]
	for i, l := range plan.Lines {
		if l.Module != 0 || l.File < 0 || l.File >= len(m.Files) {
			continue
		}
		n := lines[callgrind.Line{File: m.Files[l.File], Line: l.Line}]
		if n == 0 {
			continue
		}
		ran++
		var sites uint64
		for _, a := range l.Addrs {
			sites += ir[a+bias]
		}
		if sites == 0 {
			unsited = append(unsited, fmt.Sprintf("%s:%d: no site ran, its instructions ran %d times (sites %#x)", m.Files[l.File], l.Line, n, l.Addrs))
		}
		if hits[i] == 0 {
			zero = append(zero, fmt.Sprintf("%s:%d: counted 0, its instructions ran %d times, its sites %d (sites %#x)", m.Files[l.File], l.Line, n, sites, l.Addrs))
		}
	}
	return ran, unsited, zero
}

// comparison is what compare found.
type comparison struct {
	lines, same, ran int
	differ           []string // the first few that differ
}

// compare compares the hits of the lines of the plan's first module with
// the executions of their sites, at their addresses plus bias, in ir.
func compare(plan *datafile.Plan, hits []uint64, ir map[uint64]uint64, bias uint64) comparison {
	var c comparison
	for i, l := range plan.Lines {
		if l.Module != 0 {
			continue
		}
		c.lines++
		var want uint64
		for _, a := range l.Addrs {
			want += ir[a+bias]
		}
		if want > 0 {
			c.ran++
		}
		if hits[i] == want {
			c.same++
		} else if len(c.differ) < 20 {
			file := "?"
			if m := plan.Modules[l.Module]; l.File >= 0 && l.File < len(m.Files) {
				file = m.Files[l.File]
			}
			c.differ = append(c.differ, fmt.Sprintf("%s:%d: counted %d, its sites ran %d times (%#x)", file, l.Line, hits[i], want, l.Addrs))
		}
	}
	return c
}

// loadBias finds where the program was loaded under valgrind: for each
// function of the plan that callgrind saw run, its lowest address less
// its entry (the entry runs whenever the function does); the bias most
// of them agree on.
func loadBias(plan *datafile.Plan, p *callgrind.Profile) (uint64, error) {
	votes := callgrind.Votes{}
	for _, f := range plan.Funcs {
		if f.Module == 0 {
			votes.Entry(p, f.Name, f.Entry)
		}
	}
	bias, ok := votes.Bias()
	if !ok {
		return 0, errors.New("no function of the plan ran under callgrind")
	}
	return bias, nil
}
