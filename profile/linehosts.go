// A line site whose own instruction no jump fits may have its count
// kept by an instruction after it: one its code always runs on to, with
// nothing landing between (the same proof as a shared count's,
// shareBlocks). The probe goes there, over that instruction alone, and
// counts the site's counter; the site's own instruction stays as it is.
// Go's "test %dl,%dl; je; mov $1,%eax" (strings.HasPrefix inlined, a
// quarter of a million hits listing Go's sources with gofmt) has its
// test's count kept by its je, whose jump fits where the test's did not.

package profile

import (
	"fmt"

	"github.com/sourceprofiler/sprof/instr"
)

// hostsTried is how many instructions after a site are tried as its
// count's host.
const hostsTried = 3

// host plants the count of the line site addrs[n] of planting p, which
// its own instruction could not take (lay), at an instruction after it
// that it always runs on to: not a site, before the next site, nothing
// landing on it or between (targets), in a function whose landings are
// known. It reports whether one took it.
func (lt *lineTrampolines) host(p *planting, lay *instr.Layout, addrs []uint64, n int, targets landings) bool {
	e := &lt.env
	site, next := addrs[n], p.text.start+uint64(len(p.text.b))
	if n+1 < len(addrs) {
		next = addrs[n+1]
	}
	if e.plant.scan.code.inIndirect(site) {
		return false
	}
	at := site
	for range hostsTried {
		in, err := e.arch.Decode(p.text.b[at-p.text.start:], at)
		if err != nil || in.Len <= 0 {
			return false
		}
		x := at + uint64(in.Len)
		if x >= next || targets.has(x) || targets.inside(site, x) ||
			!instr.StraightTo(e.arch, p.text.b[site-p.text.start:], site, x) {
			return false
		}
		if pl, err := lay.Plan(x, lt.buildHost(p, site, x)); err == nil {
			lt.putHost(p, site, x, pl)
			return true
		}
		at = x
	}
	return false
}

// buildHost is build for the count of the line site at site kept by the
// instruction at x.
func (lt *lineTrampolines) buildHost(p *planting, site, x uint64) instr.Build {
	arch := lt.env.arch
	code, ok := lt.hostCode(p, site, x)
	return func(pt *instr.Patch, at uint64) (instr.Trampoline, error) {
		if !ok {
			return instr.Trampoline{}, fmt.Errorf("no count code: %w", instr.ErrNoCounting)
		}
		q := *pt
		q.Before = [][]byte{code.Code}
		return arch.Trampoline(&q, at, nil)
	}
}

// hostCode is lineCode for the count of the line site at site, run
// before the instruction at x: the flags as they are at x.
func (lt *lineTrampolines) hostCode(p *planting, site, x uint64) (instr.DepthCode, bool) {
	e := &lt.env
	s := e.counters.layout.Site(p.lineSites.counter[p.lineSites.find(site)])
	s.Save, s.Cover = lt.save, lt.cover
	s.GoStack, s.GoAsm = lt.isGo(p.mi), lt.goAsm(p, site)
	s.NoFlags = !lt.cover && e.arch.FlagsDead(p.text.b, p.text.start, x)
	return e.arch.LineCode(e.counters.layout.Kind, s)
}

// putHost is put for the patch pl at x that keeps the count of the line
// site at site.
func (lt *lineTrampolines) putHost(p *planting, site, x uint64, pl *instr.Planned) {
	code, _ := lt.hostCode(p, site, x)
	tramps := lt.env.plant.putPlanned(p, pl, func(q *instr.Planned) []region {
		if q != pl || len(code.Rollback) == 0 {
			return nil
		}
		return []region{{at: 0, rollback: code.Rollback}}
	}, code.Count)
	if lt.sweep != nil {
		for i, tp := range tramps {
			var counters []int
			if i == len(tramps)-1 {
				counters = lt.siteCounters(p, []uint64{site})
			}
			lt.sweep.add(tp, counters, leansOf(pl, tp.patch.Site))
		}
	}
	p.lineSites.take(site)
	lt.hosted++
	lt.patched++
}
