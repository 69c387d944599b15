package profile

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// sharedName is the name of the memory PROFILE shares with the program,
// as its maps show it ("/memfd:sprof-counters (deleted)").
const sharedName = "sprof-counters"

// shareMemory makes size bytes of memory shared by the stopped program
// and PROFILE, and returns PROFILE's view of it and its address in the
// program. The program makes it, by system calls its setup thread runs
// for PROFILE: memfd_create (named at nameAt, where the name is written
// first), ftruncate and mmap(MAP_SHARED). PROFILE maps the same memfd
// through the program's /proc/PID/fd/N, which the right to trace the
// program lets it open, and the program closes its descriptor: its
// mapping keeps the memory. (The other way round, the program opening
// PROFILE's /proc/PID/fd/N, takes the right to trace PROFILE, which a
// process of another user that root attaches to has not: every entry
// then kept a breakpoint.) What fails on the way is undone.
func (j *injector) shareMemory(nameAt, size uint64) (*ptrace.Shared, uint64, error) {
	const (
		mfdCloexec    = 0x1
		mfdNoexecSeal = 0x8 // Linux 6.3
	)
	tid := j.setupThread()
	if err := (*j.mem).WriteMem(nameAt, append([]byte(sharedName), 0)); err != nil {
		return nil, 0, fmt.Errorf("write the memory's name into the program: %w", err)
	}
	// Counters are never code: sealed so (which a system set to refuse
	// memfds that may be made executable, vm.memfd_noexec 2, requires),
	// where the kernel knows the flag.
	fd, err := j.inject(tid, instr.SysMemfdCreate, nameAt, mfdCloexec|mfdNoexecSeal)
	if errors.Is(err, syscall.EINVAL) {
		fd, err = j.inject(tid, instr.SysMemfdCreate, nameAt, mfdCloexec)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("create the memory in the program (memfd_create): %w", err)
	}
	var shared *ptrace.Shared
	addr := uint64(0)
	if _, err = j.inject(tid, instr.SysFtruncate, fd, size); err != nil {
		err = fmt.Errorf("size the memory in the program (ftruncate): %w", err)
	}
	if err == nil {
		// (The descriptor is the thread's: a process sharing the memory
		// may have a table of descriptors of its own.)
		shared, err = (*j.proc).mapShared(tid, int(fd), int(size))
	}
	if err == nil {
		if addr, err = j.inject(tid, instr.SysMmap, 0, size, protRW, mapShared, fd, 0); err != nil {
			err = fmt.Errorf("map the memory in the program: %w", err)
		}
	}
	if _, cerr := j.inject(tid, instr.SysClose, fd); err == nil && cerr != nil {
		j.inject(tid, instr.SysMunmap, addr, size)
		err = fmt.Errorf("close the memory's descriptor in the program: %w", cerr)
	}
	if err != nil {
		if shared != nil {
			shared.Close()
		}
		return nil, 0, err
	}
	return shared, addr, nil
}
