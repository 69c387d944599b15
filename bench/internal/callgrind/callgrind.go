// Package callgrind reads the output of valgrind's callgrind, the
// independent count the checks in bench/ hold PROFILE's figures to:
// bench/linecheck (each instruction's and each source line's
// executions) and bench/branchcheck (each conditional jump's ways).
//
// The output must have been written with --dump-instr=yes (positions are
// instructions) and, for the jumps, --collect-jumps=yes. Its format is
// valgrind's docs/callgrind-format, as callgrind/dump.c writes it:
//
//   - Positions are the instruction's address and, with --dump-line=yes
//     (the default), its line; each is absolute (decimal, or hexadecimal
//     after "0x"), relative to the previous cost line's ("+n", "-n",
//     decimal) or the same ("*").
//   - Names may be compressed: "fn=(7) name" defines 7, "fn=(7)" refers
//     to it. Objects (ob, cob), functions (fn, cfn, jfn) and files (fl,
//     fi, fe, cfi, cfl, jfi) each share one set of numbers.
//   - A calls= line says that the next cost line is a call's: its
//     position is the call instruction's, its cost the callee's
//     inclusive cost, which is not the instruction's. A cost line right
//     after it at the same position is not the call's either: it is the
//     cost of the PLT stub the call went through, which callgrind charges
//     to the caller (--skip-plt=yes, its default; dump.c's fprint_bbcc
//     writes it after the call). With a stub of one jmp it equals the
//     calls' count (seen with valgrind 3.19: 40 calls of __ctype_b_loc,
//     the call's lines 40 and 40).
//   - A jump= line, and a jcnd= line ("jcnd=TAKEN/EXECUTED TARGET"), say
//     that the next line holds the jump instruction's position, with no
//     cost. dump.c's fprint_jcc writes both positions relative to the cost
//     line before them and moves the position to neither, so the target
//     is read without moving it. A conditional jump that ran and never
//     went to its target has no jcnd= line: how many times it ran is its
//     Ir.
//
// The input is untrusted: a malformed line is an error that gives its
// number and quotes it, never a panic.
package callgrind

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Profile is what Read keeps of a callgrind output, of the code of the
// objects it was asked for, by the addresses callgrind writes.
type Profile struct {
	// Ir is how many times each instruction ran.
	Ir map[uint64]uint64
	// Lines is how many times each source line's instructions ran, with
	// --dump-line=yes.
	Lines map[Line]uint64
	// Taken is how many times each conditional jump went to its target,
	// and Execs how many times callgrind says it ran where it did (the
	// jcnd= lines, summed over the contexts callgrind keeps apart).
	Taken map[Arc]uint64
	Execs map[uint64]uint64
	// First is the lowest address seen of each function.
	First map[string]uint64
}

// Line is a source line: its file, as callgrind names it, and its number.
type Line struct {
	File string
	Line int
}

// Arc is a conditional jump that went to its target: from the branch
// instruction's address to the target's.
type Arc struct{ From, To uint64 }

// What the next cost line is (reader.pending): an instruction's, a
// call's, a jump's or a conditional jump's.
const (
	costLine = iota
	callLine
	jumpLine
	jcndLine
)

// reader is the state of Read.
type reader struct {
	p        *Profile
	ours     func(object string) bool
	names    map[string]string // "(n)" compressed names, by kind and id
	cols     int               // how many position columns ("instr" first)
	lineCol  int               // which is the line's, or -1
	irCol    int               // which event is Ir, or -1
	last     []int64           // the previous cost line's positions
	inObject bool              // whether the cost lines that follow are ours
	fn, file string            // the function and file of the cost lines that follow
	pending  int               // what the next cost line is: a *Line constant
	// afterCall is the position of the last call's cost line, for the
	// PLT stub's cost after it; ^0 where the line before was no call's.
	afterCall uint64
	jcnd      struct{ taken, execs, target uint64 } // of the last jcnd= line
}

// Read reads a callgrind output from r, keeping the code of the objects
// that ours accepts (by the name callgrind gives them). It is an error if
// none of their instructions ran.
func Read(r io.Reader, ours func(object string) bool) (*Profile, error) {
	rd := &reader{
		p: &Profile{Ir: map[uint64]uint64{}, Lines: map[Line]uint64{}, Taken: map[Arc]uint64{},
			Execs: map[uint64]uint64{}, First: map[string]uint64{}},
		ours: ours, names: map[string]string{}, lineCol: -1, irCol: -1, afterCall: ^uint64(0),
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		if err := rd.line(sc.Text()); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if rd.cols == 0 {
		return nil, errors.New("not a callgrind output: no positions: line")
	}
	if len(rd.p.Ir) == 0 {
		return nil, errors.New("no instruction of the program ran")
	}
	return rd.p, nil
}

// line reads one line of the output.
func (rd *reader) line(line string) error {
	switch {
	case strings.HasPrefix(line, "positions:"):
		cols := strings.Fields(strings.TrimPrefix(line, "positions:"))
		if len(cols) == 0 || cols[0] != "instr" {
			return errors.New("positions are not instructions: not dumped with --dump-instr=yes")
		}
		rd.cols, rd.last, rd.lineCol = len(cols), make([]int64, len(cols)), slices.Index(cols, "line")
	case strings.HasPrefix(line, "events:"):
		rd.irCol = slices.Index(strings.Fields(strings.TrimPrefix(line, "events:")), "Ir")
	case strings.HasPrefix(line, "calls="):
		rd.pending = callLine
	case strings.HasPrefix(line, "jump="):
		rd.pending = jumpLine
	case strings.HasPrefix(line, "jcnd="):
		return rd.readJcnd(strings.TrimPrefix(line, "jcnd="))
	case rd.name(line):
	case line == "" || line[0] == '#' || !isPosition(line[0]):
	default:
		return rd.cost(line)
	}
	return nil
}

// readJcnd reads a conditional jump's line, after its "jcnd=": the
// times it went to its target, a slash, the times it ran, and the
// target's position.
func (rd *reader) readJcnd(s string) error {
	if rd.cols == 0 {
		return errors.New("a jcnd= line before the positions: line")
	}
	fields := strings.Fields(s)
	if len(fields) < 1+rd.cols {
		return fmt.Errorf("jcnd=%s: want TAKEN/EXECUTED and %d positions", s, rd.cols)
	}
	t, e, ok := strings.Cut(fields[0], "/")
	if !ok {
		return fmt.Errorf("jcnd=%s: no slash in %q", s, fields[0])
	}
	taken, err1 := strconv.ParseUint(t, 10, 64)
	execs, err2 := strconv.ParseUint(e, 10, 64)
	to, err3 := position(fields[1], rd.last[0])
	if err := errors.Join(err1, err2, err3); err != nil {
		return fmt.Errorf("jcnd=%s: %w", s, err)
	}
	rd.pending = jcndLine
	rd.jcnd.taken, rd.jcnd.execs, rd.jcnd.target = taken, execs, uint64(to)
	return nil
}

// name reads a line that names an object, a function or a file, and
// reports whether it was one.
func (rd *reader) name(line string) bool {
	key, val, ok := strings.Cut(line, "=")
	if !ok {
		return false
	}
	switch key {
	case "ob":
		rd.inObject = rd.ours(name(rd.names, "ob", val))
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

// cost reads a cost line: positions, then costs in the order of the
// events: line.
func (rd *reader) cost(line string) error {
	if rd.cols == 0 || rd.irCol < 0 {
		return errors.New("a cost line before the positions: and events: lines (or no Ir event)")
	}
	fields := strings.Fields(line)
	if len(fields) < rd.cols {
		return fmt.Errorf("cost line %q: too few positions", line)
	}
	for i := range rd.cols {
		v, err := position(fields[i], rd.last[i])
		if err != nil {
			return fmt.Errorf("cost line %q: %w", line, err)
		}
		rd.last[i] = v
	}
	addr := uint64(rd.last[0])
	pending, stub := rd.pending, addr == rd.afterCall
	rd.pending, rd.afterCall = costLine, ^uint64(0)
	switch {
	case pending == callLine:
		rd.afterCall = addr
		return nil
	case !rd.inObject:
		return nil
	case pending == jcndLine:
		rd.p.Taken[Arc{addr, rd.jcnd.target}] += rd.jcnd.taken
		rd.p.Execs[addr] += rd.jcnd.execs
		return nil
	case pending == jumpLine || stub || len(fields) <= rd.cols+rd.irCol:
		return nil
	}
	ir, err := strconv.ParseUint(fields[rd.cols+rd.irCol], 10, 64)
	if err != nil {
		return fmt.Errorf("cost line %q: %w", line, err)
	}
	rd.p.Ir[addr] += ir
	if rd.lineCol > 0 && rd.last[rd.lineCol] > 0 {
		rd.p.Lines[Line{rd.file, int(rd.last[rd.lineCol])}] += ir
	}
	if f, ok := rd.p.First[rd.fn]; !ok || addr < f {
		rd.p.First[rd.fn] = addr
	}
	return nil
}

// isPosition reports whether a line starting with b is a cost line.
func isPosition(b byte) bool {
	return b == '+' || b == '-' || b == '*' || (b >= '0' && b <= '9')
}

// position reads one position, given the last.
func position(s string, last int64) (int64, error) {
	switch {
	case s == "*":
		return last, nil
	case s[0] == '+' || s[0] == '-':
		d, err := strconv.ParseInt(s, 10, 64)
		return last + d, err
	case strings.HasPrefix(s, "0x"):
		v, err := strconv.ParseUint(s[2:], 16, 64)
		return int64(v), err
	default:
		v, err := strconv.ParseUint(s, 10, 64)
		return int64(v), err
	}
}

// name resolves a name of kind that may be compressed.
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

// Votes counts, for each load bias a check finds evidence of, how many
// pieces of evidence agree on it (callgrind writes an object's
// addresses less its text bias in valgrind 3.19, run-time ones before:
// the checks find the bias, not assume it).
type Votes map[uint64]int

// Entry votes, where callgrind saw function fn run, for the bias of its
// lowest address there less entry, its link-time entry, which runs
// whenever the function does.
func (v Votes) Entry(p *Profile, fn string, entry uint64) {
	if a, ok := p.First[fn]; ok && a >= entry {
		v[a-entry]++
	}
}

// Bias returns the bias most votes agree on, the lowest of a tie; false
// where there is none.
func (v Votes) Bias() (uint64, bool) {
	var bias uint64
	most := 0
	for b, n := range v {
		if n > most || n == most && b < bias {
			bias, most = b, n
		}
	}
	return bias, most > 0
}

// SameFile returns a test of callgrind's object names, for Read: whether
// one is path, by name or, for a name that differs (a symbolic link on
// the way), by identity on disk. Each name is looked at once.
func SameFile(path string) func(object string) bool {
	want, err := os.Stat(path)
	seen := map[string]bool{}
	return func(obj string) bool {
		if obj == path {
			return true
		}
		if err != nil {
			return false
		}
		same, ok := seen[obj]
		if !ok {
			fi, err := os.Stat(obj)
			same = err == nil && os.SameFile(fi, want)
			seen[obj] = same
		}
		return same
	}
}
