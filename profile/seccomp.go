package profile

import (
	"errors"
	"fmt"

	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// Seccomp. A thread may run under a seccomp filter that kills the whole
// program for a system call it does not allow (SECCOMP_RET_KILL_PROCESS:
// the default action of many allow-lists): the mmap or memfd_create
// PROFILE has the thread run for it (inject.go) would kill the program.
// So before each of them PROFILE looks at the thread's seccomp state
// (/proc/TID/status). The filters PROFILE runs under itself (a
// container's), which a program PROFILE starts inherits, let through what
// PROFILE does: they are taken to allow its calls. A filter of the
// thread's own, or strict mode, is suspended for the call
// (PTRACE_O_SUSPEND_SECCOMP); where the kernel does not allow that (the
// tracer needs CAP_SYS_ADMIN, and no filter of its own), the call is not
// made, and what needs it is not profiled, with a warning (PRF4659). An
// attach refuses such a process before anything is planted
// (checkSeccomp): its set-up needs the calls.

// seccompState is what a run knows of seccomp.
type seccompState struct {
	// own is PROFILE's own state, read once (known).
	own   ptrace.Seccomp
	known bool
	// warned and told are set once PROFILE warned of a filter it cannot
	// suspend, and once it narrated one it suspends.
	warned, told bool
}

// errFiltered is the error of a system call PROFILE did not make: the
// thread's seccomp filter might kill the program for it, and PROFILE
// cannot suspend the filter.
var errFiltered = errors.New("not made: a seccomp filter PROFILE cannot suspend might kill the program for it")

// ownFilter reports whether thread tid runs under a seccomp filter of its
// own, or in strict mode (beyondOwn), and returns its state.
func (j *injector) ownFilter(tid int) (bool, ptrace.Seccomp) {
	s := &j.seccomp
	st, err := (*j.proc).seccomp(tid)
	if err != nil || st.Mode == 0 {
		// (A thread whose status cannot be read is gone: the call fails
		// on its own.)
		return false, st
	}
	if !s.known {
		s.own, _ = (*j.proc).seccomp(0)
		s.known = true
	}
	return beyondOwn(st, s.own), st
}

// beyondOwn reports whether a thread in seccomp state st has a filter
// beyond those PROFILE, in state own, runs under, or strict mode. A
// kernel that does not count the filters (before Linux 5.9) leaves only
// the modes to compare: a thread under filters while PROFILE is under
// none has one of its own; both under filters, they are taken to be
// PROFILE's.
func beyondOwn(st, own ptrace.Seccomp) bool {
	switch {
	case st.Mode == 0:
		return false
	case st.Mode != 2 || own.Mode != 2:
		return true
	case st.Filters < 0 || own.Filters < 0:
		return false
	}
	return st.Filters > own.Filters
}

// unfiltered readies stopped thread tid for a system call of PROFILE's.
// Where the thread has a seccomp filter of its own, the filter is
// suspended until the function returned is called. Where the kernel does
// not allow that, the call must not be made: unfiltered returns
// errFiltered, and warns once, with the kernel's reason (PRF4659).
func (j *injector) unfiltered(tid int) (func(), error) {
	own, st := j.ownFilter(tid)
	if !own {
		return func() {}, nil
	}
	attached := j.attached()
	if err := (*j.proc).suspendSeccomp(tid, attached, true); err != nil {
		if !j.seccomp.warned {
			j.seccomp.warned = true
			j.warn(prf.SeccompFiltered(tid, fmt.Errorf("PTRACE_O_SUSPEND_SECCOMP: %w", err)))
		}
		return nil, fmt.Errorf("system call in thread %d: %w", tid, errFiltered)
	}
	if !j.seccomp.told {
		j.seccomp.told = true
		j.told.note(seccompEvent{tid, st})
	}
	return func() { (*j.proc).suspendSeccomp(tid, attached, false) }, nil
}

// checkSeccomp refuses, before anything is planted, a process PROFILE
// attached to whose main thread, which runs the set-up's system calls, has
// a seccomp filter of its own that PROFILE cannot suspend. (The filter is
// suspended and let act again at once: nothing of the process changes.)
func (j *injector) checkSeccomp() error {
	own, st := j.ownFilter(*j.pid)
	if !own {
		return nil
	}
	err := (*j.proc).suspendSeccomp(*j.pid, true, true)
	if err == nil {
		return (*j.proc).suspendSeccomp(*j.pid, true, false)
	}
	what := "runs under a seccomp filter of its own"
	if st.Mode == 1 {
		what = "runs in seccomp's strict mode"
	}
	return fmt.Errorf("its main thread %s, which may kill it for the system calls PROFILE makes in it, and PROFILE cannot suspend it (PTRACE_O_SUSPEND_SECCOMP: %w)", what, err)
}
