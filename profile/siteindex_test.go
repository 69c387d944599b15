package profile

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
)

// at is siteIndex.get's counter alone (0 for a site not known).
func (x *siteIndex) at(mi int, addr uint64) int {
	n, _ := x.get(mi, addr)
	return n
}

// TestNumberSites: every site of a plan, shared by lines or not, in any
// module, has a counter of its own, whose lines are those that have the
// site, in plan order; a site moved at planting counts into the counter
// given, and an unknown one has none.
func TestNumberSites(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 1))
	var lines []datafile.Line
	has := map[siteKey][]int{}
	for i := range 3000 {
		l := datafile.Line{Module: rng.IntN(3), Line: i}
		for range 1 + rng.IntN(3) {
			a := 0x1000 + uint64(rng.IntN(2000))*4
			if slices.Contains(l.Addrs, a) {
				continue
			}
			l.Addrs = append(l.Addrs, a)
			k := siteKey{l.Module, a}
			has[k] = append(has[k], i)
		}
		lines = append(lines, l)
	}
	x, counters := numberSites(lines)
	if len(counters) != len(has) || x.len() != len(has) {
		t.Fatalf("%d counters, %d sites; want %d", len(counters), x.len(), len(has))
	}
	seen := map[int]bool{}
	for k, want := range has {
		n, ok := x.get(k.mi, k.addr)
		if !ok || seen[n] {
			t.Fatalf("site %v: counter %d, %v (seen before: %v)", k, n, ok, seen[n])
		}
		seen[n] = true
		if !slices.Equal(counters[n], want) {
			t.Errorf("site %v: lines %v, want %v", k, counters[n], want)
		}
	}
	if _, ok := x.get(1, 0x999); ok {
		t.Error("a site no line has was found")
	}
	x.move(2, 0x999, 7)
	if n, ok := x.get(2, 0x999); !ok || n != 7 || x.len() != len(has)+1 {
		t.Errorf("a moved site: counter %d, %v; want 7", n, ok)
	}
}

// TestNumberSitesOrder: counters are numbered in the order the sites
// first appear in the plan's lines, the order of a map filled line by
// line, address by address (profile --explain tells first hits so).
func TestNumberSitesOrder(t *testing.T) {
	lines := []datafile.Line{
		{Module: 0, Addrs: []uint64{0x500, 0x100}},
		{Module: 1, Addrs: []uint64{0x100}},
		{Module: 0, Addrs: []uint64{0x100, 0x300}},
		{Module: 0, Addrs: []uint64{0x200}},
	}
	x, counters := numberSites(lines)
	for _, c := range []struct {
		mi   int
		addr uint64
		n    int
	}{{0, 0x500, 0}, {0, 0x100, 1}, {1, 0x100, 2}, {0, 0x300, 3}, {0, 0x200, 4}} {
		if n, ok := x.get(c.mi, c.addr); !ok || n != c.n {
			t.Errorf("site %#x of module %d: counter %d, %v; want %d", c.addr, c.mi, n, ok, c.n)
		}
	}
	if want := [][]int{{0}, {0, 2}, {1}, {2}, {3}}; !reflect.DeepEqual(counters, want) {
		t.Errorf("counters' lines %v, want %v", counters, want)
	}
}
