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
	// lowest line) and its lines: parts of one array, the pairs' lines
	// in their order.
	x := &siteIndex{moved: map[siteKey]int{}}
	all := make([]int, len(pairs))
	var first []siteLine
	var lines [][]int
	for k, p := range pairs {
		all[k] = p.line
		if n := len(x.sites); n > 0 && x.sites[n-1].key == p.key {
			lines[n-1] = all[k-len(lines[n-1]) : k+1 : k+1]
			continue
		}
		x.sites = append(x.sites, numberedSite{key: p.key})
		first = append(first, p)
		lines = append(lines, all[k:k+1:k+1])
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
