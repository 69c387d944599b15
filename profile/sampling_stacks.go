package profile

// The call stacks of function sampling (sampling.go) without /AT: with
// each sample the kernel gives the thread's registers and a copy of the
// top of its stack (ptrace.SamplerOptions.Stack; the ptrace sampler
// reads them at its stops, stopSample), which PROFILE unwinds
// through the call frame information of the program and its libraries
// (package unwind, framemodules.go). The profiled functions on the stack,
// outermost first, are the sample's chain, each frame with the profiled
// functions inlined where it is inside it (sampling_inlined.go): a function's time with its
// children is the samples with it on the stack, each once, and each
// chain is a caller stack (records 8 to 10, the flame graph), keyed as
// /AT keys the calls' (books.StackFor), with time and no hits.
//
// An unwind that stops before the stack's end (no call frame information
// for a frame, the stack copy too short) ends the chain at the last frame
// it vouches for: the chain's outermost function stands at the stack
// base, and the stack is counted as cut (SamplingStats.StacksCut, and a
// warning by reason). Nothing is guessed.

import (
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/procmaps"
	"github.com/sourceprofiler/sprof/profile/ptrace"
	"github.com/sourceprofiler/sprof/profile/unwind"
)

// stackCopy is the stack the kernel copies with each sample, from the
// stack pointer up: perf's default for DWARF unwinding (perf record
// --call-graph dwarf), which reaches main from most C programs' leaves.
const stackCopy = 8 << 10

// maxFrames is the most frames a stack is unwound to.
const maxFrames = 512

// stackSampling is the stacks' part of a sampler: whether the run wants
// them (function sampling without /AT), and once start opened the memory
// map they need, their tally (nil where none are taken); the threads
// sampled without their stacks, the kernel having refused their rings,
// and its first refusal.
type stackSampling struct {
	want      bool
	tally     *stackTally
	stackless int
	refused   error
	// framePointers is set for a program that keeps frame pointers in
	// all its code (Go): with each sample the kernel follows them too,
	// for the frames deeper than the copy of the stack (continued).
	framePointers bool
	// mem is the program's memory, where the ptrace sampler copies a
	// stopped thread's stack (stopSample) into stopped; nil where it
	// could not be opened. pac is the pointer-authentication mask, read
	// at the first stop (pacRead).
	mem     taskMem
	maps    *keptMap // (nil where the map could not be opened)
	stopped ptrace.Sample
	buf     []byte
	pac     uint64
	pacRead bool
}

// stackTally is what the unwound stacks found: the samples of each chain
// of profiled functions, by the chain (its functions as uvarints,
// outermost first); how many stacks were unwound, and cut, by reason.
type stackTally struct {
	frames *frameModules
	chains map[string]*sampledChain
	taken  uint64
	cut    uint64
	cutBy  map[unwind.Stop]uint64
	// (Buffers of the unwinding, kept between samples.)
	key []byte
	fns []int
}

// sampledChain is one chain of profiled functions, outermost first, and
// its samples: those in its last function itself (self), and all whose
// profiled functions were the chain (self, and those in code no profiled
// function holds that the chain's last function called).
type sampledChain struct {
	funcs     []int
	self, all uint64
	kernel    uint64 // (of all, those taken in the kernel)
}

// newStackTally returns the tally of a process whose memory map read
// reads.
func newStackTally(frames *frameModules) *stackTally {
	return &stackTally{frames: frames, chains: map[string]*sampledChain{}, cutBy: map[unwind.Stop]uint64{}}
}

// take unwinds the stack of sample sm, whose program counter is in
// profiled function fn (-1: none; the innermost function inlined there,
// if any), and counts its chain n times (the ptrace sampler's samples
// weigh the intervals the thread ran).
func (t *stackTally) take(places *placeTable, sm *ptrace.Sample, fn int, n uint64) {
	t.taken += n
	pc := places.origin(sm.PC)
	fns := t.fns[:0]
	if fn >= 0 {
		fns = places.frames(fns, pc)
	}
	if len(fns) == 0 {
		fns = append(fns, fn)
	}
	if !sm.Regs {
		t.cutAt(unwind.StopBadRegs, n)
		t.count(fn, fns, n, sm.Kernel)
		return
	}
	regs := unwind.Regs{Arch: t.frames.arch, PC: pc, SP: sm.SP, FP: sm.FP, LR: sm.LR, PACMask: sm.PACMask}
	pcs, stop := unwind.Unwind(regs, unwind.Stack{Addr: sm.SP, Data: sm.Stack}, t.frames.find, maxFrames)
	if stop != unwind.StopMaxFrames {
		pcs, stop = continued(pcs, stop, sm.Callchain)
	}
	if stop != unwind.StopEnd {
		t.cutAt(stop, n)
	}
	for _, pc := range pcs[1:] {
		// (A return address is looked up in its call, which may be the
		// last instruction of a function that does not return.)
		fns = places.frames(fns, pc-1)
	}
	t.count(fn, fns, n, sm.Kernel)
}

// continued continues frames pcs, found through the call frame
// information and stopped for reason stop, with the return addresses the
// kernel found following the frame pointers (chain, innermost first; nil
// where the sampler took none: the program does not keep them in all its
// code, as Go does). From the first return address the unwinding found
// that the chain has too (the sampled function's caller; its caller's,
// where the sampled function keeps no frame of its own), the chain's
// frames are the stack when they are more: past the copy of the
// stack (a Go stack deeper than it), and past a switch of stacks the
// call frame information ends at (Go's runtime.systemstack, whose frame
// pointers lead back to the goroutine's stack). The frame pointers are
// then vouched for from that frame on; the first frame's are not (a
// function that keeps no frame of its own, a leaf, is not in the chain:
// its caller would be lost). A chain the kernel cut at its limit ends
// the stack early. And where the unwinding went past the chain's end to
// a return address in no module (Go's call frame information of the
// outermost frame of a thread's own stack, runtime.mstart's, gives none
// as undefined), the chain's end is the stack's.
func continued(pcs []uint64, stop unwind.Stop, chain []uint64) ([]uint64, unwind.Stop) {
	if len(chain) == 0 {
		return pcs, stop
	}
	if n := len(pcs); stop == unwind.StopNoModule && n >= 3 && chain[len(chain)-1] == pcs[n-2] && len(chain)+1 < ptrace.MaxCallchain {
		return pcs[:n-1], unwind.StopEnd
	}
	k, j := 1, -1
	for ; k < min(len(pcs), 3) && j < 0; k++ { // (the caller, or its caller)
		j = slices.Index(chain, pcs[k])
	}
	// (pcs[:k] and chain[j+1:] are the stack.)
	if n := k + len(chain) - j - 1; j < 0 || n < len(pcs) || n == len(pcs) && stop == unwind.StopEnd {
		return pcs, stop
	}
	pcs = append(pcs[:k], chain[j+1:]...)
	if len(chain)+1 >= ptrace.MaxCallchain {
		return pcs, unwind.StopMaxFrames
	}
	return pcs, unwind.StopEnd
}

// cutAt counts n stacks cut short for reason stop.
func (t *stackTally) cutAt(stop unwind.Stop, n uint64) {
	t.cut += n
	t.cutBy[stop] += n
}

// count adds n samples to the chain of fns, the profiled functions of
// their stack innermost first, the first being the samples' own function
// fn or a function inlined in its code (fn -1 where no profiled function
// holds their program counter, left out), taken in the kernel when
// kernel is set.
func (t *stackTally) count(fn int, fns []int, n uint64, kernel bool) {
	if fns[0] < 0 {
		fns = fns[1:]
	}
	t.fns = fns[:0]
	if len(fns) == 0 {
		return // (outside, called from no profiled function)
	}
	slices.Reverse(fns)
	t.key = t.key[:0]
	for _, f := range fns {
		t.key = binary.AppendUvarint(t.key, uint64(f))
	}
	c := t.chains[string(t.key)]
	if c == nil {
		c = &sampledChain{funcs: slices.Clone(fns)}
		t.chains[string(t.key)] = c
	}
	c.all += n
	if fn >= 0 {
		c.self += n
	}
	if kernel {
		c.kernel += n
	}
}

// figures gives st the stacks' figures, each sample weighing interval
// nanoseconds: the caller stacks of the chains, with their functions'
// own time and their time with children, and each function's time with
// children (ChildTime), the samples with it on the stack, and where the
// kernel was sampled (its list in st), those of them taken in the
// kernel; and the numbers of stacks unwound and cut.
func (t *stackTally) figures(st *datafile.Stats, plan *datafile.Plan, interval int64) {
	bk := books.New(plan)
	all := make([]uint64, len(plan.Funcs))
	kernel := st.Sampling.KernelChildSamples
	seen := make([]int, len(plan.Funcs)) // the last chain each function was counted in, plus one
	keys := slices.Sorted(maps.Keys(t.chains))
	for ci, k := range keys {
		c := t.chains[k]
		for i, f := range c.funcs {
			if seen[f] != ci+1 {
				seen[f] = ci + 1
				all[f] += c.all
				if kernel != nil {
					kernel[f] += c.kernel
				}
			}
			var self int64
			if i == len(c.funcs)-1 {
				self = int64(c.self) * interval
			}
			bk.AddStack(bk.StackFor(c.funcs[:i+1]), 0, self, int64(c.all)*interval)
		}
	}
	st.Stacks = bk.Stacks()
	st.ChildTime = make([]int64, len(all))
	for f, n := range all {
		st.ChildTime[f] = int64(n) * interval
	}
	st.Sampling.Stacks, st.Sampling.StacksCut = t.taken, t.cut
}

// warn warns of the stacks cut short, by reason (PRF4680).
func (t *stackTally) warn(warn func(*prf.Diagnostic)) {
	if t.cut == 0 {
		return
	}
	var reasons []string
	var counts []uint64
	for _, stop := range slices.Sorted(maps.Keys(t.cutBy)) {
		reasons = append(reasons, stop.String())
		counts = append(counts, t.cutBy[stop])
	}
	warn(prf.StacksCut(t.cut, t.taken, reasons, counts))
}

// startStacks prepares the unwinding of process pid's stacks: its memory
// map, opened for the goroutine that reads the rings. Where it cannot be
// opened, the samples take no stack.
func (s *sampler) startStacks(pid int) {
	if s.env.proc == nil {
		return // (a unit test's sampler, of no process)
	}
	mm, err := s.env.proc.openMaps(pid)
	if err != nil {
		return
	}
	s.stacks.maps = &keptMap{mm: mm}
	frames := newFrameModules(s.stacks.maps.read, s.env.arch)
	frames.closeMap = mm.Close
	// (The map known from the start, and kept: a run that ends before
	// its samples are read, its map gone, unwinds them.)
	mapped, _ := s.stacks.maps.read()
	frames.use(mapped)
	if mem, err := s.env.proc.openMem(pid); err == nil {
		s.stacks.mem = mem
		frames.loadVDSO(mapped, mem.ReadMem)
	}
	s.stacks.tally = newStackTally(frames)
}

// keptMap reads a process's memory map, and keeps the last it read: once
// the process is gone, its last map stands, taken at the exit stop of
// its last thread (sampler.lastMap) where the run was too short for its
// samples to be read before. The goroutine that reads the rings and the
// tracer's may read it.
type keptMap struct {
	mu   sync.Mutex
	mm   memoryMap
	last []procmaps.Mapping
}

// read reads the map, or returns the last one read where it cannot be
// read any more (a process that is gone has none).
func (k *keptMap) read() ([]procmaps.Mapping, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	data, err := k.mm.Read()
	var maps []procmaps.Mapping
	if err == nil {
		maps, err = procmaps.Parse(data)
	}
	if err == nil && len(maps) > 0 {
		k.last = maps
		return maps, nil
	}
	if k.last != nil {
		return k.last, nil
	}
	if err == nil {
		err = errors.New("an empty memory map")
	}
	return nil, err
}

// stopSample returns the sample of thread tid, stopped by the ptrace
// sampler with registers regs: its registers, and a copy of its stack
// from the stack pointer up, of stackCopy bytes or as far as the
// stack's memory goes (read in pieces that cross no page where the
// whole cannot be read), as the kernel copies it with perf's samples.
// The sample and its stack are the sampler's own, until the next.
func (k *stackSampling) stopSample(proc process, tid int, regs *ptrace.Regs) *ptrace.Sample {
	if !k.pacRead {
		k.pac, k.pacRead = proc.pacMask(tid), true
	}
	sp, fp, lr := regs.Frame()
	k.stopped = ptrace.Sample{PC: regs.PC(), Regs: true, SP: sp, FP: fp, LR: lr, PACMask: k.pac}
	if k.mem == nil {
		return &k.stopped
	}
	if len(k.buf) != stackCopy {
		k.buf = make([]byte, stackCopy)
	}
	if k.mem.ReadMem(sp, k.buf) == nil {
		k.stopped.Stack = k.buf
		return &k.stopped
	}
	const piece = 512 // (a page is a whole number of pieces)
	n := 0
	for n < len(k.buf) {
		end := min(len(k.buf), n+piece-int((sp+uint64(n))%piece))
		if k.mem.ReadMem(sp+uint64(n), k.buf[n:end]) != nil {
			break
		}
		n = end
	}
	k.stopped.Stack = k.buf[:n]
	return &k.stopped
}

// close closes the program's memory.
func (k *stackSampling) close() {
	if k.mem != nil {
		k.mem.Close()
		k.mem = nil
	}
}

// options are what the samplers of the run take: the interval, the
// kernel's ticks unless the kernel refused them (a timing run's sampler
// does not ask: its figure is PROFILE's share of user time), and the
// stack where the run unwinds stacks.
func (s *sampler) options() ptrace.SamplerOptions {
	o := ptrace.SamplerOptions{Period: s.interval, Kernel: !s.timing && s.kernel.asks()}
	if s.stacks.tally != nil {
		o.Stack, o.Callchain = stackCopy, s.stacks.framePointers
	}
	return o
}
