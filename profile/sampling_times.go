// The times of function sampling (sampling.go) that the samples give
// through the calls: each function's time with its children, and each
// attribution stack's share.

package profile

import (
	"maps"
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
)

// childTimes returns each function's time with its children, from self,
// the time in each function itself, as gprof propagates it along the
// exact arcs of the call graph: a function's time with children is its
// own plus, for each function it calls, that callee's time with children
// in the share of the callee's calls from other functions that came from
// it (a function's calls of itself are no share of anyone's). The arcs are the
// nearest profiled callers of the attribution stacks (/AT); without them
// a function's time with children is its own. A call that closes a cycle
// of calls (recursion) passes no time back up the cycle: gprof would
// merge the cycle into one entry instead.
func childTimes(self []int64, hits []uint64, stacks []datafile.Stack) []int64 {
	all := slices.Clone(self)
	if len(stacks) == 0 {
		return all
	}
	calls := make([]map[int]uint64, len(self)) // caller -> callee -> calls
	for i := range stacks {
		k := &stacks[i]
		caller := k.Callers[len(k.Callers)-1]
		if caller < 0 || caller >= len(self) || k.Func < 0 || k.Func >= len(self) {
			continue
		}
		if calls[caller] == nil {
			calls[caller] = map[int]uint64{}
		}
		calls[caller][k.Func] += k.Hits
	}
	const (
		unseen = iota
		open
		done
	)
	state := make([]uint8, len(self))
	total := make([]float64, len(self))
	var visit func(f int) float64
	visit = func(f int) float64 {
		switch state[f] {
		case open:
			return 0 // a cycle
		case done:
			return total[f]
		}
		state[f] = open
		t := float64(self[f])
		for _, g := range slices.Sorted(maps.Keys(calls[f])) {
			// (Of g's calls, those from g itself are not shares.)
			outer := hits[g] - min(calls[g][g], hits[g])
			if g == f || outer == 0 {
				continue
			}
			share := float64(calls[f][g]) / float64(outer)
			t += visit(g) * min(share, 1)
		}
		state[f] = done
		total[f] = t
		return t
	}
	for f := range self {
		all[f] = int64(visit(f) + 0.5)
	}
	return all
}

// stackTimes gives each attribution stack of st its share of its
// function's times, in proportion to its calls.
func stackTimes(st *datafile.Stats) {
	for i := range st.Stacks {
		k := &st.Stacks[i]
		if k.Func < 0 || k.Func >= len(st.FuncTime) || st.Hits[k.Func] == 0 {
			continue
		}
		share := float64(k.Hits) / float64(st.Hits[k.Func])
		k.Time = int64(float64(st.FuncTime[k.Func])*share + 0.5)
		k.ChildTime = int64(float64(st.ChildTime[k.Func])*share + 0.5)
	}
}
