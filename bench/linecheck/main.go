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
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: linecheck PROG.pbi PROG.pbo callgrind.out")
		os.Exit(2)
	}
	if err := run(os.Stdout, os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "linecheck:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, pbi, pbo, cg string) error {
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
	prof, err := readCallgrind(f, plan.Modules[0].Path)
	if err != nil {
		return fmt.Errorf("%s: %w", cg, err)
	}
	bias, err := loadBias(plan, prof)
	if err != nil {
		return fmt.Errorf("%s: %w", cg, err)
	}
	c := compare(plan, counts.Stats.Hits, prof.ir, bias)
	fmt.Fprintf(w, "%d of %d lines of %s counted as callgrind ran their sites", c.same, c.lines, plan.Modules[0].Name)
	if c.ran > 0 {
		fmt.Fprintf(w, " (%d of them ran)", c.ran)
	}
	fmt.Fprintln(w)
	for _, d := range c.differ {
		fmt.Fprintln(w, "  ", d)
	}
	return nil
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

// profile is what readCallgrind keeps of a callgrind output: the
// executions of each instruction of one object, by run-time address, and
// the lowest address seen in each of its functions.
type profile struct {
	ir    map[uint64]uint64
	first map[string]uint64
}

// readCallgrind reads a callgrind output written with --dump-instr=yes
// (the format of valgrind's docs/callgrind-format), keeping the
// instructions of the object at path: their Ir, which is how many times
// each ran. A call's cost line (after calls=) is the callee's inclusive
// cost, not the instruction's: it moves the position and is not counted.
func readCallgrind(r io.Reader, path string) (*profile, error) {
	p := &profile{ir: map[uint64]uint64{}, first: map[string]uint64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	names := map[string]string{} // "(n)" compressed names, by kind and id
	// afterCall is the position of the last call's cost line. A cost
	// line right after it at the same position is not the call
	// instruction's: it is the cost of the PLT stub the call went
	// through, which callgrind charges to the caller (--skip-plt=yes,
	// its default; dump.c's fprint_bbcc writes it after the call). With a
	// stub of one jmp it equals the calls' count (seen with valgrind
	// 3.19: 40 calls of __ctype_b_loc, the call's lines 40 and 40). It is
	// not counted.
	afterCall := ^uint64(0)
	var (
		positions    = 0 // how many position columns: "instr" and maybe "line"
		irColumn     = -1
		ours         bool
		fn           string
		last         []int64 // the previous line's positions
		skipCallCost bool
	)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "positions:"):
			cols := strings.Fields(strings.TrimPrefix(line, "positions:"))
			if len(cols) == 0 || cols[0] != "instr" {
				return nil, errors.New("not dumped with --dump-instr=yes")
			}
			positions, last = len(cols), make([]int64, len(cols))
		case strings.HasPrefix(line, "events:"):
			for i, e := range strings.Fields(strings.TrimPrefix(line, "events:")) {
				if e == "Ir" {
					irColumn = i
				}
			}
		case strings.HasPrefix(line, "ob="):
			ours = name(names, "ob", line[3:]) == path
			afterCall = ^uint64(0)
		case strings.HasPrefix(line, "fn="):
			fn = name(names, "fn", line[3:])
			afterCall = ^uint64(0)
		case strings.HasPrefix(line, "jfn="):
			name(names, "fn", line[4:])
		case strings.HasPrefix(line, "jfi="):
			name(names, "fl", line[4:])
		case strings.HasPrefix(line, "cob="):
			name(names, "ob", line[4:])
		case strings.HasPrefix(line, "cfn="):
			name(names, "fn", line[4:])
		case strings.HasPrefix(line, "cfi="), strings.HasPrefix(line, "cfl="):
			name(names, "fl", line[4:])
		case strings.HasPrefix(line, "fl="), strings.HasPrefix(line, "fi="), strings.HasPrefix(line, "fe="):
			name(names, "fl", line[3:])
		case strings.HasPrefix(line, "calls="):
			skipCallCost = true
		case line == "" || line[0] == '#' || !isPosition(line[0]):
			continue
		default:
			if positions == 0 || irColumn < 0 {
				return nil, errors.New("a cost line before the positions: and events: lines")
			}
			fields := strings.Fields(line)
			if len(fields) < positions {
				return nil, fmt.Errorf("cost line %q: too few positions", line)
			}
			for i := range positions {
				v, err := position(fields[i], last[i])
				if err != nil {
					return nil, fmt.Errorf("cost line %q: %w", line, err)
				}
				last[i] = v
			}
			if skipCallCost {
				skipCallCost, afterCall = false, uint64(last[0])
				continue
			}
			again := uint64(last[0]) == afterCall
			afterCall = ^uint64(0)
			if again || !ours || len(fields) <= positions+irColumn {
				continue
			}
			ir, err := strconv.ParseUint(fields[positions+irColumn], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("cost line %q: %w", line, err)
			}
			addr := uint64(last[0])
			p.ir[addr] += ir
			if f, ok := p.first[fn]; !ok || addr < f {
				p.first[fn] = addr
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(p.ir) == 0 {
		return nil, fmt.Errorf("no instruction of %s", path)
	}
	return p, nil
}

// isPosition reports whether a line starting with b is a cost line.
func isPosition(b byte) bool {
	return b == '+' || b == '-' || b == '*' || b == '0' || (b >= '1' && b <= '9')
}

// position reads one position of a cost line: absolute (decimal or 0x
// hexadecimal), relative to the last (+n, -n), or the same (*).
func position(s string, last int64) (int64, error) {
	switch {
	case s == "*":
		return last, nil
	case s[0] == '+' || s[0] == '-':
		d, err := strconv.ParseInt(s, 0, 64)
		return last + d, err
	default:
		v, err := strconv.ParseUint(s, 0, 64)
		return int64(v), err
	}
}

// name resolves a name of kind that may be compressed: "(n) name" defines
// n, "(n)" refers to it. Objects (ob, cob), functions (fn, cfn, jfn) and
// files (fl, fi, fe, cfi, cfl, jfi) each share one set of numbers.
func name(names map[string]string, kind, s string) string {
	if !strings.HasPrefix(s, "(") {
		return s
	}
	end := strings.IndexByte(s, ')')
	if end < 0 {
		return s
	}
	id := kind + s[:end+1]
	if rest := strings.TrimSpace(s[end+1:]); rest != "" {
		names[id] = rest
		return rest
	}
	return names[id]
}

// loadBias finds where the program was loaded under valgrind: for each
// function of the plan that callgrind saw run, its lowest address less
// its entry (the entry runs whenever the function does); the bias most
// of them agree on.
func loadBias(plan *datafile.Plan, p *profile) (uint64, error) {
	votes := map[uint64]int{}
	for _, f := range plan.Funcs {
		if a, ok := p.first[f.Name]; ok && f.Module == 0 && a >= f.Entry {
			votes[a-f.Entry]++
		}
	}
	if len(votes) == 0 {
		return 0, errors.New("no function of the plan ran under callgrind")
	}
	biases := make([]uint64, 0, len(votes))
	for b := range votes {
		biases = append(biases, b)
	}
	sort.Slice(biases, func(i, j int) bool {
		if votes[biases[i]] != votes[biases[j]] {
			return votes[biases[i]] > votes[biases[j]]
		}
		return biases[i] < biases[j] // (a tie: the lowest, every time)
	})
	return biases[0], nil
}
