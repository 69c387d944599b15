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
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

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
	if cover != "" {
		cp, err := datafile.OpenPlan(cover)
		if err != nil {
			return err
		}
		if len(cp.Modules) == 0 || !bytes.Equal(cp.Modules[0].BuildID, plan.Modules[0].BuildID) || !cp.Method.IsCoverage() {
			return fmt.Errorf("%s is not a line coverage plan of %s", cover, plan.Modules[0].Path)
		}
		ran := map[srcLine]uint64{}
		m := cp.Modules[0]
		for _, l := range cp.Lines {
			if l.Module == 0 && l.File >= 0 && l.File < len(m.Files) {
				for _, a := range l.Addrs {
					ran[srcLine{m.Files[l.File], l.Line}] += prof.ir[a+bias]
				}
			}
		}
		printUnseen(w, "ran, a statement row of theirs", plan, counts.Stats.Hits, prof.ir, bias, ran)
	}
	if len(prof.lines) > 0 {
		printUnseen(w, "ran, any instruction of theirs", plan, counts.Stats.Hits, prof.ir, bias, prof.lines)
	}
	return nil
}

// printUnseen prints how many lines of the plan's first module ran, by
// ran (the executions of their instructions, by source line), how many
// of them no site of which ran under callgrind (sites that miss a line
// that ran), and how many read 0 in hits (the first of each). A line
// whose sites ran under callgrind and that read 0 ran otherwise in
// PROFILE's run (a program whose hash tables follow its addresses).
func printUnseen(w io.Writer, which string, plan *datafile.Plan, hits []uint64, ir map[uint64]uint64, bias uint64, ran map[srcLine]uint64) {
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
func unseen(plan *datafile.Plan, hits []uint64, ir map[uint64]uint64, bias uint64, lines map[srcLine]uint64) (ran int, unsited, zero []string) {
	m := plan.Modules[0]
	for i, l := range plan.Lines {
		if l.Module != 0 || l.File < 0 || l.File >= len(m.Files) {
			continue
		}
		n := lines[srcLine{m.Files[l.File], l.Line}]
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

// srcLine is a line of a source file, as callgrind names it.
type srcLine struct {
	file string
	line int
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
// executions of each instruction of one object, by run-time address, the
// lowest address seen in each of its functions, and when the output has
// lines (--dump-line=yes), the executions of each source line's
// instructions.
type profile struct {
	ir    map[uint64]uint64
	first map[string]uint64
	lines map[srcLine]uint64
}

// readCallgrind reads a callgrind output written with --dump-instr=yes
// (the format of valgrind's docs/callgrind-format), keeping the
// instructions of the object at path: their Ir, which is how many times
// each ran. A call's cost line (after calls=) is the callee's inclusive
// cost, not the instruction's: it moves the position and is not counted.
func readCallgrind(r io.Reader, path string) (*profile, error) {
	rd := &cgReader{
		p:     &profile{ir: map[uint64]uint64{}, first: map[string]uint64{}, lines: map[srcLine]uint64{}},
		path:  path,
		names: map[string]string{}, lineColumn: -1, irColumn: -1, afterCall: ^uint64(0),
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if err := rd.line(sc.Text()); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rd.p.ir) == 0 {
		return nil, fmt.Errorf("no instruction of %s", path)
	}
	return rd.p, nil
}

// cgReader is the state of readCallgrind.
type cgReader struct {
	p     *profile
	path  string
	names map[string]string // "(n)" compressed names, by kind and id
	// afterCall is the position of the last call's cost line. A cost
	// line right after it at the same position is not the call
	// instruction's: it is the cost of the PLT stub the call went
	// through, which callgrind charges to the caller (--skip-plt=yes,
	// its default; dump.c's fprint_bbcc writes it after the call). With a
	// stub of one jmp it equals the calls' count (seen with valgrind
	// 3.19: 40 calls of __ctype_b_loc, the call's lines 40 and 40). It is
	// not counted.
	afterCall    uint64
	positions    int // how many position columns: "instr" and maybe "line"
	lineColumn   int // which is the line's, or -1
	irColumn     int
	ours         bool
	fn, file     string  // of the cost lines that follow
	last         []int64 // the previous line's positions
	skipCallCost bool
}

// line reads one line of the output.
func (rd *cgReader) line(line string) error {
	switch {
	case strings.HasPrefix(line, "positions:"):
		cols := strings.Fields(strings.TrimPrefix(line, "positions:"))
		if len(cols) == 0 || cols[0] != "instr" {
			return errors.New("not dumped with --dump-instr=yes")
		}
		rd.positions, rd.last = len(cols), make([]int64, len(cols))
		rd.lineColumn = slices.Index(cols, "line")
	case strings.HasPrefix(line, "events:"):
		for i, e := range strings.Fields(strings.TrimPrefix(line, "events:")) {
			if e == "Ir" {
				rd.irColumn = i
			}
		}
	case strings.HasPrefix(line, "calls="):
		rd.skipCallCost = true
	case rd.name(line):
	case line == "" || line[0] == '#' || !isPosition(line[0]):
	default:
		return rd.cost(line)
	}
	return nil
}

// name reads a line that names an object, a function or a file, and
// reports whether it was one.
func (rd *cgReader) name(line string) bool {
	key, val, ok := strings.Cut(line, "=")
	if !ok {
		return false
	}
	switch key {
	case "ob":
		rd.ours = name(rd.names, "ob", val) == rd.path
		rd.afterCall = ^uint64(0)
	case "fn":
		rd.fn = name(rd.names, "fn", val)
		rd.afterCall = ^uint64(0)
	case "jfn", "cfn":
		name(rd.names, "fn", val)
	case "cob":
		name(rd.names, "ob", val)
	case "jfi", "cfi", "cfl":
		name(rd.names, "fl", val)
	case "fl", "fi", "fe":
		// The file of the cost lines that follow (fi and fe: of inlined
		// code).
		rd.file = name(rd.names, "fl", val)
	default:
		return false
	}
	return true
}

// cost reads a cost line.
func (rd *cgReader) cost(line string) error {
	if rd.positions == 0 || rd.irColumn < 0 {
		return errors.New("a cost line before the positions: and events: lines")
	}
	fields := strings.Fields(line)
	if len(fields) < rd.positions {
		return fmt.Errorf("cost line %q: too few positions", line)
	}
	for i := range rd.positions {
		v, err := position(fields[i], rd.last[i])
		if err != nil {
			return fmt.Errorf("cost line %q: %w", line, err)
		}
		rd.last[i] = v
	}
	if rd.skipCallCost {
		rd.skipCallCost, rd.afterCall = false, uint64(rd.last[0])
		return nil
	}
	again := uint64(rd.last[0]) == rd.afterCall
	rd.afterCall = ^uint64(0)
	if again || !rd.ours || len(fields) <= rd.positions+rd.irColumn {
		return nil
	}
	ir, err := strconv.ParseUint(fields[rd.positions+rd.irColumn], 10, 64)
	if err != nil {
		return fmt.Errorf("cost line %q: %w", line, err)
	}
	addr := uint64(rd.last[0])
	rd.p.ir[addr] += ir
	if rd.lineColumn > 0 && rd.last[rd.lineColumn] > 0 {
		rd.p.lines[srcLine{rd.file, int(rd.last[rd.lineColumn])}] += ir
	}
	if f, ok := rd.p.first[rd.fn]; !ok || addr < f {
		rd.p.first[rd.fn] = addr
	}
	return nil
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
