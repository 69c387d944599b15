package plist

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// callStack is one distinct chain of profiled calls of a profile made
// with /AT: the functions from the outermost caller the profile tells to
// the called function, with the figures of that function's calls made
// through the chain.
type callStack struct {
	// funcs are indexes of Plan.Funcs, outermost first, the called
	// function last; a recursive function appears as often as it nests.
	funcs []int
	// whole is set when the chain begins at the stack base (main, a
	// thread's start, the /SF function): nothing was cut at /STACK's
	// depth.
	whole bool
	// hits are the calls of the last function through the chain; time
	// and childTime its own time and its time with children in them
	// (timing and sampling; 0 otherwise).
	hits            uint64
	time, childTime int64
}

// recursive reports whether the called function is already on the chain
// below its call: its time is then inside that outer call's.
func (c *callStack) recursive() bool {
	n := len(c.funcs)
	return slices.Contains(c.funcs[:n-1], c.funcs[n-1])
}

// callStacks returns the attribution stacks of the profile as whole
// chains of calls (stackCallers), in the order of Stats.Stacks, each
// distinct chain once: stacks whose chains are the same (which a profile
// of format version 5 or older has when its stacks differ beyond the two
// callers it kept) are added up. Function profiles without /AT have none.
// The exports that draw stacks (folded, pprof, callgrind's inclusive
// costs) and the flame graph read them.
func (r *report) callStacks() []callStack {
	stacks := r.m.Stats.Stacks
	var out []callStack
	index := map[string]int{}
	var key []byte
	for si := range stacks {
		s := &stacks[si]
		if s.Func < 0 || s.Func >= len(r.plan.Funcs) {
			continue
		}
		callers, whole := r.stackCallers(si)
		funcs := append(callers, s.Func)
		key = append(key[:0], 0)
		if whole {
			key[0] = 1
		}
		for _, f := range funcs {
			key = binary.AppendUvarint(key, uint64(f))
		}
		if i, ok := index[string(key)]; ok {
			c := &out[i]
			c.hits += s.Hits
			c.time += s.Time
			c.childTime += s.ChildTime
			continue
		}
		index[string(key)] = len(out)
		out = append(out, callStack{funcs: funcs, whole: whole, hits: s.Hits, time: s.Time, childTime: s.ChildTime})
	}
	return out
}

// stackCallers returns the callers of stack si, outermost first, as far
// as the profile tells them, and whether they go back to the stack base.
// Each stack keeps the key of its caller's stack (datafile.Stack's
// CallerKey), whose own nearest caller is the next one out: the chain is
// followed from stack to stack up to /STACK callers (the depth to which
// stacks are told apart, and so the chain the same for every call of the
// stack), or to the stack base when /STACK is unlimited. A stack that has
// no caller stack (a profile of format version 5 or older) ends the chain
// with the callers it shows: two at most.
func (r *report) stackCallers(si int) (callers []int, whole bool) {
	stacks := r.m.Stats.Stacks
	limit, unlimited := r.plan.StackDepth, r.plan.StackDepth <= 0
	if unlimited {
		limit = len(stacks) // a stack per level
	}
	// Unlimited, a stack's key tells its whole chain apart, and a chain
	// passes each stack once: a damaged link that leads back ends it
	// (r.visited holds the chain's number, r.chain, for each stack it
	// passed). With /STACK n a recursion deeper than n links a stack to
	// itself: the limit ends it.
	if len(r.visited) != len(stacks) {
		r.visited = make([]int, len(stacks))
	}
	r.chain++
	r.visited[si] = r.chain
	s := &stacks[si]
	for {
		n := len(s.Callers)
		if n == 0 {
			break
		}
		c := s.Callers[n-1]
		if c < 0 {
			whole = true
			break
		}
		if len(callers) == limit || c >= len(r.plan.Funcs) {
			break
		}
		callers = append(callers, c)
		next, ok := r.callerStack(c, s.CallerKey)
		if !ok {
			if n >= 2 && len(callers) < limit {
				switch c2 := s.Callers[n-2]; {
				case c2 < 0:
					whole = true
				case c2 < len(r.plan.Funcs):
					callers = append(callers, c2)
				}
			}
			break
		}
		if unlimited && r.visited[next] == r.chain {
			break
		}
		r.visited[next] = r.chain
		s = &stacks[next]
	}
	slices.Reverse(callers)
	return callers, whole
}

// callerStack returns the index of the stack of function fn whose key is
// key: the stack a call was made from. Key 0 is no stack (none recorded).
func (r *report) callerStack(fn int, key uint64) (int, bool) {
	if key == 0 {
		return 0, false
	}
	if r.stackIndex == nil {
		r.stackIndex = map[stackID]int{}
		for i, s := range r.m.Stats.Stacks {
			id := stackID{s.Func, s.Key}
			if _, dup := r.stackIndex[id]; !dup {
				r.stackIndex[id] = i
			}
		}
	}
	i, ok := r.stackIndex[stackID{fn, key}]
	return i, ok
}

// stackID names a stack by its function and key, which PROFILE keeps
// apart (the callers they tell apart are hashed into the key).
type stackID struct {
	fn  int
	key uint64
}

// stacksByFunc returns, per function, the indices of its stacks in
// Stats.Stacks, ordered by hits (counting, coverage) or function time
// (timing), highest first, recorded order among equals.
func (r *report) stacksByFunc() [][]int {
	all := r.m.Stats.Stacks
	byFunc := make([][]int, len(r.plan.Funcs))
	for k, s := range all {
		if s.Func >= 0 && s.Func < len(byFunc) {
			byFunc[s.Func] = append(byFunc[s.Func], k)
		}
	}
	timing := r.hasTimes()
	for _, ks := range byFunc {
		slices.SortStableFunc(ks, func(a, b int) int {
			if timing {
				return cmp.Compare(all[b].Time, all[a].Time)
			}
			return cmp.Compare(all[b].Hits, all[a].Hits)
		})
	}
	return byFunc
}
