package plist

import (
	"cmp"
	"fmt"
	"slices"
)

// The kernel's share of a sampling profile, where its runs sampled the
// kernel's code too (SamplingStats.KernelSamples): a line in the
// program's statistics, and after each module's table the functions
// whose samples the kernel took, with the time it spent for their own
// code (the system calls and faults of their instructions) and for them
// with children (those of the code they called: the C library's
// wrappers), each with its share of the function's time.

// The kernel table's heading: the figures are "%8.3f %5.1f %8.3f %5.1f".
const (
	kernelTitle   = " Kernel Time of Functions"
	kernelHeading = "  Kernel  % of   Kernel  % of"
	kernelColumns = "    Time  Func   +Child  Func+Child"
)

// kernelLine is the program statistics' line of the samples taken in the
// kernel, of all the samples taken (those in PROFILE's code too), or ""
// where the runs did not sample the kernel.
func (r funcListing) kernelLine(all uint64) string {
	if !r.m.Stats.Sampling.KernelSampled() {
		return ""
	}
	k := r.m.Stats.Sampling.Kernel
	return fmt.Sprintf("    Samples in the kernel: %d, %s%% of all", k, fixed(percent(float64(k), float64(all)), 1))
}

// kernelTable writes the kernel table of module mod: its functions with
// samples in the kernel, most kernel time with children first. It
// writes nothing where there are none.
func (r funcListing) kernelTable(p *printer, mod int) {
	if !r.m.Stats.Sampling.KernelSampled() {
		return
	}
	sm := &r.m.Stats.Sampling
	var funcs []int
	for _, i := range r.funcs[mod] {
		if at(sm.KernelChildSamples, i) > 0 || at(sm.KernelSamples, i) > 0 {
			funcs = append(funcs, i)
		}
	}
	if len(funcs) == 0 {
		return
	}
	slices.SortStableFunc(funcs, func(a, b int) int {
		return cmp.Or(cmp.Compare(at(sm.KernelChildSamples, b), at(sm.KernelChildSamples, a)),
			cmp.Compare(at(sm.KernelSamples, b), at(sm.KernelSamples, a)))
	})
	c := r.twoColumns()
	p.blank()
	p.text(c.row("", kernelHeading))
	p.text(c.row(kernelTitle, kernelColumns))
	p.blank()
	for _, i := range funcs {
		own := int64(at(sm.KernelSamples, i)) * sm.Interval
		kids := int64(at(sm.KernelChildSamples, i)) * sm.Interval
		p.text(c.row(r.names[i]+r.source(i), fmt.Sprintf("%s %s %s %s",
			fixedWidth(millis(own), 8, 3), fixedWidth(percent(float64(own), float64(r.funcTime(i))), 5, 1),
			fixedWidth(millis(kids), 8, 3), fixedWidth(percent(float64(kids), float64(r.childTime(i))), 5, 1))))
	}
}
