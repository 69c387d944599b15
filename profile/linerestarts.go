package profile

// A line of Go's code on arm64 may begin with a sequence Go's
// asynchronous preemption starts again (instr.Instrumenter.GoRestartEnd):
// a goroutine preempted inside it resumes at its first instruction, and
// a count there, a breakpoint's or a trampoline's, counts the line
// twice. Such a site is moved, for every mechanism, to the instruction
// after the sequence, which the line always runs on to: nothing lands
// inside or on it, and no other site is before it.

import (
	"strings"

	"github.com/sourceprofiler/sprof/internal/elfid"
)

// afterRestarts moves the sites of planting p, in a Go module, that begin
// a restartable sequence, after it; a site of Go assembly stays (Go's
// assembly functions are never preempted asynchronously), as does one in
// a function whose landings are not all known. With lt, the counter's
// index is found at the new place too (explain).
func (pl *planter) afterRestarts(p *planting, lt *lineTrampolines) {
	ls := p.lineSites
	if ls == nil || !elfid.ReadIsGo(pl.modulePath(p)) {
		return
	}
	var targets landings
	for n, site := range ls.addrs {
		if ls.siteBranch(n) >= 0 || pl.goAsmSite(ls.lines[n]) {
			continue
		}
		end := pl.arch.GoRestartEnd(p.text.b, p.text.start, site)
		if end == site || (n+1 < len(ls.addrs) && end >= ls.addrs[n+1]) || pl.scan.code.inIndirect(site) {
			continue
		}
		if targets == nil {
			targets = append(pl.indirectTargets(p), 0) // (not nil: found once)
		}
		if targets.has(end) || targets.inside(site, end) {
			continue
		}
		ls.addrs[n] = end
		if lt != nil {
			lt.index.move(p.mi, end-p.bias, ls.counter[n])
		}
	}
}

// goAsmSite reports whether the lines of a site are Go assembly.
func (pl *planter) goAsmSite(lines []int) bool {
	return strings.HasSuffix(lineFile(pl.plan, &pl.plan.Lines[lines[0]]), ".s")
}
