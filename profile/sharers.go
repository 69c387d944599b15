package profile

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// Processes that share the memory of a process PROFILE attaches to: a
// child of clone(CLONE_VM) without CLONE_THREAD, or the process that made
// the one attached to, is a process of its own that runs the same code in
// the same memory. Once PROFILE patches that code, it runs the
// trampolines too: on x86-64 a count through a GS base PROFILE never gave
// it faults (SIGSEGV), and its calls, made in the window, are the
// program's. In a run PROFILE starts, such a child is reported at its
// clone and traced like a thread (tasks.go, sharing); at an attach
// PROFILE finds them itself, before anything is planted, and seizes their
// threads with the process's: they are counted like its threads, have
// their thread bases put back and are let go with them.

// attachChecks makes ready, or refuses, a process PROFILE has just
// attached to, before anything is planted: the processes that share its
// memory are seized with it (attachSharers), and a seccomp filter its
// set-up could not get past refuses it (checkSeccomp). It returns PRF1651
// on refusal; the caller lets every thread go.
func (a *attachment) attachChecks() error {
	t := a.t
	if err := a.attachSharers(); err != nil {
		return prf.CannotAttach(t.pid, err)
	}
	if err := t.parts.calls.checkSeccomp(); err != nil {
		return prf.AttachFiltered(t.pid, err)
	}
	return nil
}

// attachSharers seizes the processes that share the memory of the
// process PROFILE attached to, found by kcmp(2) (KCMP_VM) over the
// processes of /proc, and adds their threads to the run's. It looks again
// until it finds none new: a process is stopped once seized, and a
// process sharing the memory is made by one that shares it. A process
// PROFILE may not compare (another user's, when PROFILE is not root) is
// one it could not trace either; a kernel without kcmp
// (CONFIG_CHECKPOINT_RESTORE off) shows none. One that cannot be seized,
// or is stopped (SIGSTOP), refuses the attach.
func (a *attachment) attachSharers() error {
	t := a.t
	seen := map[int]bool{t.pid: true}
	var found []int
	for fresh := true; fresh; {
		fresh = false
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return fmt.Errorf("list the processes to find those sharing its memory: %w", err)
		}
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || seen[pid] {
				continue
			}
			same, err := t.proc.sameMemory(t.pid, pid)
			if errors.Is(err, syscall.ENOSYS) {
				return nil
			}
			if err != nil || !same {
				continue
			}
			seen[pid], fresh = true, true
			tids, group, err := t.proc.attach(pid)
			if err != nil {
				return fmt.Errorf("process %d shares its memory (clone with CLONE_VM), and cannot be traced with it: %w", pid, err)
			}
			for _, tid := range tids {
				t.threads[tid] = &thread{tid: tid, tgid: pid}
			}
			if len(group) > 0 {
				return fmt.Errorf("process %d, which shares its memory, is stopped (SIGSTOP or SIGTSTP): continue it first (kill -CONT)", pid)
			}
			found = append(found, pid)
		}
	}
	t.told.note(sharersEvent{found})
	return nil
}
