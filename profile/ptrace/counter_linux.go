//go:build linux && (amd64 || arm64)

package ptrace

// Counter reads the CPU's counter, the clock of the trampolines that time
// functions in-process: the time-stamp counter on amd64 (rdtsc), the
// virtual counter on arm64 (CNTVCT_EL0). Its frequency is PROFILE's to
// measure against its own clock. The reading is made after every
// instruction before it (lfence on amd64, isb on arm64): no earlier than
// a lock or a clock reading it follows.
func Counter() uint64
