package profile

// The kernel's share of function sampling (sampling.go). A thread's CPU
// clock ticks in its system calls and page faults as in its own code, and
// where the kernel allows it (CAP_PERFMON, or a perf_event_paranoid of 1
// or less) PROFILE asks for those ticks too: each such sample comes with
// the user registers the thread will return to, and is charged to the
// user code at them as a sample there (its function's, its line's, its
// stack's): the instruction after the system call's, which the function
// that made the call holds (its line may be the next one), or the one
// that faulted.
// The run counts them apart, in all and per function, so that the report
// can give each function's kernel share: of its own time (the system
// calls its own code makes) and of its time with children (those of
// the library functions it called, through the stacks).
//
// Where the kernel refuses, the samples are user space's alone, and the
// run records instead the kernel time no sample saw (/proc/PID/stat).

import (
	"errors"
	"slices"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// kernelSampling says whether the samplers take the kernel's ticks: not
// asked for with userOnly (profile --user-only), refused once the kernel
// refused an event that asked for them (no later thread asks), sampled
// once an event takes them; and time is the CPU time the program spent in
// the kernel, read at its threads' exits (noteTimes), which the run
// records where no sample saw it.
type kernelSampling struct {
	userOnly, refused, sampled bool
	time                       time.Duration
}

// asks reports whether the samplers ask for the kernel's ticks.
func (k *kernelSampling) asks() bool { return !k.userOnly && !k.refused }

// openKernel opens the kernel's sampler of thread tid with o, and where
// the kernel refuses the event the samples of its own code (EACCES,
// EPERM; not its limit on the rings' memory, a ptrace.RingError), one of
// user space alone, and no later thread asks for them. Once a thread's
// kernel time is sampled, a refusal is that thread's: it is not sampled
// (warned at the end, PRF4678), as the run's figures then hold every
// sampled thread's kernel time and no kernel time apart.
func (s *sampler) openKernel(tid int, o ptrace.SamplerOptions) (sampleRing, error) {
	ps, err := s.open(tid, o)
	if err != nil && o.Kernel && !s.kernel.sampled && !ptrace.IsRingError(err) &&
		(errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)) {
		o.Kernel = false
		if ps, err = s.open(tid, o); err == nil {
			s.kernel.refused = true
		}
	}
	if err == nil && o.Kernel {
		s.kernel.sampled = true
	}
	return ps, err
}

// kernelFigures gives sm the kernel's figures where its ticks were
// sampled: the samples taken in it, in all and in each function, and
// each function's with children, its own where no stack was unwound
// (stackTally.figures adds them up otherwise); and no kernel time apart,
// which every sample sees.
func (s *sampler) kernelFigures(sm *datafile.SamplingStats) {
	if !s.kernel.sampled {
		return
	}
	f := &s.tally
	sm.Kernel, sm.KernelSamples, sm.KernelTime = f.kernel, f.kernelSamples, 0
	if s.stacks.tally != nil {
		sm.KernelChildSamples = make([]uint64, len(f.kernelSamples))
	} else {
		sm.KernelChildSamples = slices.Clone(f.kernelSamples)
	}
}
