package books

import (
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
)

// Attribution (/AT): each call's caller stack, up to /STACK levels,
// found from its caller's in a step most of the time.

// callerStack returns the index of the caller stack of a call of fn made
// from l's current frames (stackOf), in a time that does not depend on
// how many there are: the caller stack of a call is a function of its
// caller frame's and of fn, and once found it is kept in b.steps.
//
// That holds because a frame's stack key covers one frame more than its
// callees need: the key of a frame at depth d is its function and its
// nearest min(d, levels) callers (all of them when levels is 0), min(d+1,
// levels+1) frames in all; a call from it needs min(d+1, levels) of them,
// its caller and the nearest below, and the shown callers are the nearest
// two. Two frames whose stacks are one have the same chain of callers for
// what their callees' keys need, up to a collision of the 64-bit hash,
// which would already make their own stacks one.
func (b *Books) callerStack(l *Ledger, fn int) int {
	from := -1
	if n := len(l.frames); n > 0 {
		from = l.frames[n-1].stack
	}
	if from+1 < len(b.lastStep) {
		if c := b.lastStep[from+1]; c.fn == fn && c.from == from {
			return c.to
		}
	}
	s := step{from, fn}
	i, ok := b.steps[s]
	if !ok {
		i = b.stackOf(l, fn)
		b.steps[s] = i
	}
	for len(b.lastStep) <= from+1 {
		b.lastStep = append(b.lastStep, cachedStep{from: -2})
	}
	b.lastStep[from+1] = cachedStep{from: from, fn: fn, to: i}
	return i
}

// cachedStep is the last step taken from a caller stack: a call of fn
// from stack from was booked to stack to.
type cachedStep struct{ from, fn, to int }

// stackOf returns the index of the caller stack of a call of fn made from
// l's current frames, adding it when new. Stacks are told apart by up to
// b.levels callers (all of them when 0) and show the nearest two, outermost
// first, -1 standing for the stack base (no profiled caller); a new stack
// keeps its caller frame's stack's key (CallerKey), which links it to
// the rest of its chain. It takes a
// time in proportion to the callers it tells apart: callerStack calls it
// once for each new step.
func (b *Books) stackOf(l *Ledger, fn int) int {
	n := len(l.frames)
	return b.stackIn(n, fn, func(i int) int { return l.frames[i].fn }, func() int {
		if n > 0 {
			return l.frames[n-1].stack
		}
		return -1
	})
}

// StackFor returns the index of the caller stack of the call of path's
// last function made from the calls of the others, outermost first, as
// stackOf finds it from a thread's frames, adding it (and its callers'
// stacks) when new: the stacks of the books kept in the program, whose
// nodes are paths (ProgramBook.TakeNodesInto).
func (b *Books) StackFor(path []int) int {
	n := len(path) - 1
	return b.stackIn(n, path[n], func(i int) int { return path[i] }, func() int {
		if n > 0 {
			return b.StackFor(path[:n])
		}
		return -1
	})
}

// AddStack books figures kept elsewhere (ProgramBook.TakeNodesInto) for
// caller stack i (StackFor): its calls, its function time and its
// function+child time, in nanoseconds.
func (b *Books) AddStack(i int, calls uint64, self, all int64) {
	st := &b.stacks[i]
	st.Hits += calls
	st.Time += self
	st.ChildTime += all
}

// Stacks returns a copy of the caller stacks booked, those of StackFor
// and AddStack included, whether or not the books attribute their calls:
// the stacks of function sampling's unwound samples are booked so.
func (b *Books) Stacks() []datafile.Stack { return slices.Clone(b.stacks) }

// stackIn is stackOf for a call of fn made from n frames, the function
// of frame i being frame(i), and the caller stack of the call's caller
// frame given by callerStack (-1: none), where the stack is new.
func (b *Books) stackIn(n, fn int, frame func(i int) int, callerStack func() int) int {
	levels := n
	if b.levels > 0 {
		levels = min(n, b.levels)
	}
	h := fnvWord(fnvOffset, levels)
	b.hashed += levels
	for i := n - 1; i >= n-levels; i-- {
		h = fnvWord(h, frame(i))
	}
	key := stackKey{fn, h}
	if i, ok := b.stackIndex[key]; ok {
		return i
	}
	shown := 2 // at most two caller names, one with /STACK 1
	if b.levels == 1 {
		shown = 1
	}
	var callers []int
	for i := n - shown; i < n; i++ {
		if i < 0 {
			if len(callers) == 0 {
				callers = append(callers, -1)
			}
			continue
		}
		callers = append(callers, frame(i))
	}
	st := datafile.Stack{Func: fn, Callers: callers, Key: key.hash}
	if c := callerStack(); c >= 0 {
		// The caller's stack, for the whole chain (datafile.Stack).
		st.CallerKey = b.stacks[c].Key
	}
	b.stacks = append(b.stacks, st)
	b.stackIndex[key] = len(b.stacks) - 1
	return len(b.stacks) - 1
}

// The stack keys are the 64-bit FNV-1a hash (hash/fnv) of the number of
// callers told apart, then of each caller's function, innermost first,
// each a little-endian 64-bit word. They are written in the .pbo, where
// runs merge by them, and order the stacks whose shown callers are the
// same: they must not change.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fnvWord returns hash h continued with the eight bytes of v.
func fnvWord(h uint64, v int) uint64 {
	for i := range 8 {
		h ^= uint64(v) >> (8 * i) & 0xff
		h *= fnvPrime
	}
	return h
}
