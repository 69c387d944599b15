// A line site whose own instruction no jump fits may have its count
// kept by an instruction after it: one its code always runs on to, with
// nothing landing between (the same proof as a shared count's,
// shareBlocks). The probe goes there, over that instruction alone, and
// counts the site's counter; the site's own instruction stays as it is.
// Go's "test %dl,%dl; je; mov $1,%eax" (strings.HasPrefix inlined, a
// quarter of a million hits listing Go's sources with gofmt) has its
// test's count kept by its je, whose jump fits where the test's did not.

package profile

import "github.com/sourceprofiler/sprof/instr"

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
		if pl, err := lay.Plan(x, lt.build(p, site, x)); err == nil {
			lt.put(p, site, x, pl)
			p.lineSites.take(site)
			lt.hosted++
			lt.patched++
			return true
		}
		at = x
	}
	return false
}
