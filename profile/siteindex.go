package profile

import (
	"cmp"
	"slices"
	"sort"

	"github.com/sourceprofiler/sprof/datafile"
)

// siteIndex gives each line site of a plan its counter: the sites of
// every module in one table, by module and address, and the sites moved
// at planting (planter.afterRestarts), which
// count into the counter of the place they were moved from. A map of a
// million sites took most of a second to fill and to read, cache miss
// after cache miss; the table is filled by one sort and read in order.
type siteIndex struct {
	sites []numberedSite
	moved map[siteKey]int
}

// numberedSite is a site and its counter.
type numberedSite struct {
	key siteKey
	n   int
}

// numberSites returns the index of the sites of a plan's lines and each
// counter's lines (indexes of lines), in order. The counters are
// numbered in the order the sites first appear in the plan's lines, as
// they always were (profile --explain tells first hits in that order).
func numberSites(planLines []datafile.Line) (*siteIndex, [][]int) {
	type siteLine struct {
		key     siteKey
		line, j int // the line, and the site's place among its addresses
	}
	var pairs []siteLine
	for i, l := range planLines {
		for j, a := range l.Addrs {
			pairs = append(pairs, siteLine{siteKey{l.Module, a}, i, j})
		}
	}
	byKey := func(a, b siteKey) int { return cmp.Or(cmp.Compare(a.mi, b.mi), cmp.Compare(a.addr, b.addr)) }
	slices.SortFunc(pairs, func(a, b siteLine) int { return cmp.Or(byKey(a.key, b.key), cmp.Compare(a.line, b.line)) })
	// The sites, each with its first appearance (its first pair, of the
	// lowest line) and its lines.
	firsts, lines := runsOfLines(len(pairs), func(k int) int { return pairs[k].line },
		func(k int) bool { return pairs[k].key == pairs[k-1].key })
	x := &siteIndex{sites: make([]numberedSite, len(firsts)), moved: map[siteKey]int{}}
	first := make([]siteLine, len(firsts))
	for i, k := range firsts {
		x.sites[i].key, first[i] = pairs[k].key, pairs[k]
	}
	order := make([]int, len(x.sites))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(first[a].line, first[b].line), cmp.Compare(first[a].j, first[b].j))
	})
	byCounter := make([][]int, len(lines))
	for n, i := range order {
		x.sites[i].n = n
		byCounter[n] = lines[i]
	}
	return x, byCounter
}

// get returns the counter of the site at addr (a link-time address) of
// module mi.
func (x *siteIndex) get(mi int, addr uint64) (int, bool) {
	k := siteKey{mi, addr}
	if n, ok := x.moved[k]; ok {
		return n, true
	}
	i := sort.Search(len(x.sites), func(i int) bool {
		s := x.sites[i].key
		return s.mi > mi || s.mi == mi && s.addr >= addr
	})
	if i < len(x.sites) && x.sites[i].key == k {
		return x.sites[i].n, true
	}
	return 0, false
}

// move notes that the site at addr of module mi counts into counter n.
func (x *siteIndex) move(mi int, addr uint64, n int) { x.moved[siteKey{mi, addr}] = n }

// len returns the number of sites known.
func (x *siteIndex) len() int { return len(x.sites) + len(x.moved) }

// runsOfLines returns, of n pairs of a site and a line sorted so that a
// site's pairs are in a row (same(k): pair k is of the site of pair k-1),
// the first pair of each site's run and the run's lines, in their order:
// parts of one array, not a slice made for each site.
func runsOfLines(n int, line func(k int) int, same func(k int) bool) (firsts []int, lines [][]int) {
	all := make([]int, n)
	for k := range n {
		all[k] = line(k)
		if k > 0 && same(k) {
			lines[len(lines)-1] = all[firsts[len(firsts)-1] : k+1 : k+1]
			continue
		}
		firsts = append(firsts, k)
		lines = append(lines, all[k:k+1:k+1])
	}
	return firsts, lines
}
