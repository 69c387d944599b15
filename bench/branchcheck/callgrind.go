package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// arc is a conditional jump that went to its target: from the branch
// instruction's address to the target's, as callgrind writes them.
type arc struct{ from, to uint64 }

// profile is what readCallgrind keeps of a callgrind output, of one
// object's code, by the addresses callgrind writes: how many times each
// instruction ran (its Ir), how many times each conditional jump went to
// its target and how many times callgrind says it ran where it did
// (jcnd=TAKEN/EXECUTED lines, summed over the contexts callgrind keeps
// apart), and the lowest address seen of each function.
type profile struct {
	ir    map[uint64]uint64
	taken map[arc]uint64
	execs map[uint64]uint64
	first map[string]uint64
}

// The kinds of line that say what the next cost line is (pending): a
// call's (its position is the call's, its cost the callee's inclusive
// cost), a jump's or a conditional jump's (its position is the jump
// instruction's, with no cost of its own).
const (
	noneLine = iota
	callLine
	jumpLine
	jcndLine
)

// cgReader is the state of readCallgrind.
type cgReader struct {
	p        *profile
	ours     func(object string) bool
	names    map[string]string // "(n)" compressed names, by kind and id
	cols     int               // how many position columns ("instr" first)
	irColumn int               // which event is Ir, or -1
	last     []int64           // the previous cost line's positions
	inObject bool              // whether the cost lines that follow are ours
	fn       string            // the function of the cost lines that follow
	pending  int               // what the next cost line is: a *Line constant
	jTaken   uint64            // of a jcnd= line: how many times it went
	jExecs   uint64            // how many times it ran
	jTarget  uint64            // and where it went
}

// readCallgrind reads a callgrind output written with --dump-instr=yes
// and --collect-jumps=yes (the format of valgrind's
// docs/callgrind-format, as callgrind/dump.c writes it), keeping the
// code of the object that ours accepts.
//
// Positions are the instruction's address and, with --dump-line=yes
// (the default), its line; each may be absolute (decimal or 0x
// hexadecimal), relative to the previous cost line's ("+n", "-n") or
// the same ("*"). A jcnd= line, "jcnd=TAKEN/EXECUTED TARGET", follows
// the cost line of its jump instruction and precedes a line holding that
// instruction's position again with no cost: dump.c's fprint_jcc writes
// both positions relative to the cost line before them and moves the
// position to neither, so the target is read without moving it. A jump
// that ran and never went to its target has no jcnd= line: how many
// times it ran is its Ir. Names may be compressed: "fn=(7) name" defines
// 7, "fn=(7)" refers to it.
//
// The input is untrusted: a malformed line is an error that quotes it,
// never a panic.
func readCallgrind(r io.Reader, ours func(string) bool) (*profile, error) {
	rd := &cgReader{
		p: &profile{ir: map[uint64]uint64{}, taken: map[arc]uint64{},
			execs: map[uint64]uint64{}, first: map[string]uint64{}},
		ours: ours, names: map[string]string{}, irColumn: -1,
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
	if len(rd.p.ir) == 0 {
		return nil, errors.New("no instruction of the program ran")
	}
	return rd.p, nil
}

// line reads one line of the output.
func (rd *cgReader) line(line string) error {
	switch {
	case strings.HasPrefix(line, "positions:"):
		cols := strings.Fields(strings.TrimPrefix(line, "positions:"))
		if len(cols) == 0 || cols[0] != "instr" {
			return errors.New("positions are not instructions: not dumped with --dump-instr=yes")
		}
		rd.cols, rd.last = len(cols), make([]int64, len(cols))
	case strings.HasPrefix(line, "events:"):
		rd.irColumn = -1
		for i, e := range strings.Fields(strings.TrimPrefix(line, "events:")) {
			if e == "Ir" {
				rd.irColumn = i
			}
		}
	case strings.HasPrefix(line, "calls="):
		rd.pending = callLine
	case strings.HasPrefix(line, "jump="):
		rd.pending = jumpLine
	case strings.HasPrefix(line, "jcnd="):
		return rd.jcnd(strings.TrimPrefix(line, "jcnd="))
	case rd.name(line):
	case line == "" || line[0] == '#' || !isPosition(line[0]):
	default:
		return rd.cost(line)
	}
	return nil
}

// jcnd reads a conditional jump's line, after its "jcnd=": the times it
// went to its target, a slash, the times it ran, and the target's
// position.
func (rd *cgReader) jcnd(s string) error {
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
	taken, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		return fmt.Errorf("jcnd=%s: %w", s, err)
	}
	execs, err := strconv.ParseUint(e, 10, 64)
	if err != nil {
		return fmt.Errorf("jcnd=%s: %w", s, err)
	}
	to, err := position(fields[1], rd.last[0])
	if err != nil {
		return fmt.Errorf("jcnd=%s: %w", s, err)
	}
	rd.pending, rd.jTaken, rd.jExecs, rd.jTarget = jcndLine, taken, execs, uint64(to)
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
		obj := name(rd.names, "ob", val)
		rd.inObject = rd.ours(obj)
	case "fn":
		rd.fn = name(rd.names, "fn", val)
	case "jfn", "cfn":
		name(rd.names, "fn", val)
	case "cob":
		name(rd.names, "ob", val)
	case "fl", "fi", "fe", "jfi", "cfi", "cfl":
		name(rd.names, "fl", val)
	default:
		return false
	}
	return true
}

// cost reads a cost line: positions, then costs in the order of the
// events: line. The line after a calls=, jump= or jcnd= line gives the
// position of the call or jump instruction; its cost, if any, is not
// the instruction's.
func (rd *cgReader) cost(line string) error {
	if rd.cols == 0 || rd.irColumn < 0 {
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
	pending := rd.pending
	rd.pending = noneLine
	switch {
	case !rd.inObject:
		return nil
	case pending == jcndLine:
		rd.p.taken[arc{addr, rd.jTarget}] += rd.jTaken
		rd.p.execs[addr] += rd.jExecs
		return nil
	case pending != noneLine || len(fields) <= rd.cols+rd.irColumn:
		return nil
	}
	ir, err := strconv.ParseUint(fields[rd.cols+rd.irColumn], 10, 64)
	if err != nil {
		return fmt.Errorf("cost line %q: %w", line, err)
	}
	rd.p.ir[addr] += ir
	if f, ok := rd.p.first[rd.fn]; !ok || addr < f {
		rd.p.first[rd.fn] = addr
	}
	return nil
}

// isPosition reports whether a line starting with b is a cost line.
func isPosition(b byte) bool {
	return b == '+' || b == '-' || b == '*' || (b >= '0' && b <= '9')
}

// position reads one position: absolute (decimal, or hexadecimal after
// "0x"), relative to the last (+n, -n, decimal), or the same (*).
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
