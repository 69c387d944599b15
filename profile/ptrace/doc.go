// Package ptrace is the thin Linux layer under the tracer: starting a program
// under ptrace, waiting for its threads, resuming and single-stepping them,
// their registers and the process memory through /proc/pid/mem, and the
// kernel's per-thread clock events that sample their program counters
// (perf_event_open: sampler_linux.go, for function sampling). It is the
// only package of the project that imports golang.org/x/sys/unix, and the
// only one with build tags: its _linux.go files build on Linux for amd64
// and arm64 (ptrace_linux.go starts a program and runs and stops its
// threads, wait_linux.go waits for them, attach_linux.go seizes a running
// process, mem_linux.go reads its memory and map, regs_linux_*.go its
// registers, the others one job each); unsupported.go makes every other
// platform compile, answering errors.ErrUnsupported.
//
// Every request must come from the OS thread that started the program (the
// kernel ties a tracee to the thread that traced it): the caller locks its
// goroutine to its thread with runtime.LockOSThread before Start and makes all
// further calls from it. (A Sampler is the exception: its ring is memory
// any goroutine may read.)
package ptrace
