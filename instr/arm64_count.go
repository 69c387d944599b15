package instr

import "encoding/binary"

// The counting code of arm64's trampolines: an entry's count and a line
// site's. With the LSE atomics of ARMv8.1 every thread adds to one
// counter, STADD (CountShared). Without them (ARMv8.0: the Cortex-A53,
// A57 and A72) each thread counts in its own area of the stack table,
// found from the stack pointer as the books' areas are (locate), with a
// plain load, add and store (CountInArea): no other thread writes the
// area. The other way, an exclusive load and store (LDXR, STXR) looping
// on the shared counter, was set aside:
//
//   - it needs a third register, which even an entry would push first;
//   - a thread cannot be single-stepped through it, as PROFILE steps a
//     thread out of its code before a signal (profile's signals.go):
//     each step is an exception, whose entry or return clears the
//     exclusive monitor (ARMv8-A Programmer's Guide, DEN0024A, 6.3.11),
//     and the store fails again and again;
//   - threads contend for the counter's cache line;
//   - it measured 22-25 ns a count in the Cortex-A57 VM, the area's count
//     8-10 ns (docs/performance.md, "ARMv8.0 counts in-process (issue 34,
//     part 4)").

// hwcapAtomics is HWCAP_ATOMICS, bit 8 of AT_HWCAP on arm64: the LSE
// atomic instructions of ARMv8.1, STADD among them (Linux
// arch/arm64/include/uapi/asm/hwcap.h).
const hwcapAtomics = 1 << 8

// Counting returns CountShared when hwcap has HWCAP_ATOMICS, else
// CountInArea.
func (arm64) Counting(hwcap uint64) (CountKind, error) {
	if hwcap&hwcapAtomics == 0 {
		return CountInArea, nil
	}
	return CountShared, nil
}

// CountCode returns, for CountShared, the code adding one to the 8-byte
// counter at address counter (which must be 8-byte aligned, as atomics
// require): MOVZ/MOVK x16, counter; MOVZ x17, #1; STADD x17, [x16]. STADD
// is LDADD with Rt = xzr (C6.2 "STADD", "LDADD": size 11 111 0 00 A 0 R 1
// Rs 0 000 00 Rn Rt, 0xf8200000; C4.1 "Atomic memory operations"). It
// writes x16 and x17 only, no flags, no stack. Other kinds: nil (a count
// in the thread's area needs the stack table: EntryCount).
func (arm64) CountCode(kind CountKind, counter uint64) []byte {
	if kind != CountShared {
		return nil
	}
	words := append(a64MovImm(a64X16, counter), 0xd2800000|1<<5|a64X17)
	words = append(words, 0xf8200000|a64X17<<16|a64X16<<5|31)
	code := make([]byte, 0, len(words)*a64InstLen)
	for _, w := range words {
		code = binary.LittleEndian.AppendUint32(code, w)
	}
	return code
}

// EntryCount returns the count of a function's entry, where x16 and x17
// are free (AAPCS64's IP0 and IP1, Go's linker's scratch registers: a
// call may change them): CountCode's, or for CountInArea the count in the
// thread's area (areaCount), which a thread stopped between its load and
// its store starts again (Rollback). Nothing else changes: no flag, no
// stack. False without a table, and for a Go function's entry (s.GoStack:
// its goroutine's stack is in no table) but where the thread pointer
// holds the area (s.ThreadPointer).
func (a arm64) EntryCount(kind CountKind, s LineSite) (DepthCode, bool) {
	if kind == CountShared {
		code := a.CountCode(kind, s.Counter)
		return DepthCode{Code: code}, code != nil
	}
	if kind != CountInArea || !s.inArea() {
		return DepthCode{}, false
	}
	var as a64Asm
	from, to := as.areaCount(s)
	return DepthCode{Code: as.code(), Rollback: []Rollback{{From: from, To: to}}}, true
}

// inArea reports whether s can be counted in the thread's area: a table,
// an aligned counter in reach, not on a goroutine's stack unless through
// the thread pointer.
func (s LineSite) inArea() bool {
	return s.Table != 0 && s.Table%4 == 0 && s.Areas != 0 && s.Counter%8 == 0 && s.Areas+s.Counter >= s.Areas &&
		(!s.GoStack || s.ThreadPointer)
}

// areaCount appends the count of s's counter in the thread's area: the
// counter's address into x16 (the area's offset from the stack table, and
// the address of the counter in area 0: Areas plus Counter; or, through
// the thread pointer, mrs x16, tpidr_el0; mov x17, #Counter; add x16,
// x16, x17), then
//
//	ldr x17, [x16]; add x17, x17, #1; str x17, [x16]
//
// or for a cover mov x17, #1; str x17, [x16]. It returns the offsets
// from the load's next instruction to the store's: where a thread has
// read the counter and not written it back. A signal's handler that
// counts on the same stack, in the same area, would lose its count to the
// store: the thread starts again from before the load (empty for a
// cover, whose store is the same whenever it comes).
func (a *a64Asm) areaCount(s LineSite) (from, to int) {
	if s.ThreadPointer {
		a.goLocate()
		a.emit(a64MovImm(a64X17, s.Counter)...)
		a.emit(a64AddReg(a64X16, a64X16, a64X17))
	} else {
		a.locate(s.Table, s.Areas+s.Counter)
	}
	if s.Cover {
		a.emit(a64MovImm(a64X17, 1)...)
		a.emit(a64Str(a64X17, a64X16, 0))
		return 0, 0
	}
	a.emit(a64Ldr(a64X17, a64X16, 0))
	from = a.at()
	a.emit(a64AddImm(a64X17, a64X17, 1), a64Str(a64X17, a64X16, 0))
	return from, a.at()
}

// The push and the pop of x16 and x17 around a line site's count.
const (
	a64PushIP = 0xa9bf47f0 // stp x16, x17, [sp, #-16]! (C6.2 "STP", pre-index)
	a64PopIP  = 0xa8c147f0 // ldp x16, x17, [sp], #16 ("LDP", post-index)
)

// LineCode returns the count of a line site: CountCode (CountShared) or
// areaCount (CountInArea) between a push and a pop of x16 and x17, which
// a body may use as it likes (AAPCS64 frees them only at calls):
//
//	stp x16, x17, [sp, #-16]!
//	the count
//	ldp x16, x17, [sp], #16
//
// The stack pointer moves before anything is written below it, so a
// signal frame lands below the saved pair, and Linux arm64 has no red
// zone for the push to spoil; the flags are not changed. Coverage counts
// the same way with STADD (any count is a cover), and stores one in the
// thread's area. The atomic count has nothing to roll back: it keeps
// nothing in memory a signal handler's own count could change; the
// area's count is started again, after the push, by a thread stopped
// between its load and its store. It is not fit for Go code (goStack),
// whose goroutine stack may end right below the stack pointer (a nosplit
// function may use all of the stack guard), and is in no stack table:
// Go's code has a count of its own (goLineCode).
func (a arm64) LineCode(kind CountKind, s LineSite) (DepthCode, bool) {
	if s.GoStack {
		return a.goLineCode(kind, s)
	}
	if s.Counter%8 != 0 {
		return DepthCode{}, false
	}
	var as a64Asm
	as.emit(a64PushIP)
	var rollback []Rollback
	switch {
	case kind == CountShared:
		count := a.CountCode(kind, s.Counter)
		for off := 0; off < len(count); off += a64InstLen {
			as.emit(binary.LittleEndian.Uint32(count[off:]))
		}
	case kind == CountInArea && s.inArea():
		if from, to := as.areaCount(s); from < to {
			rollback = []Rollback{{From: from, To: to, Resume: a64InstLen}}
		}
	default:
		return DepthCode{}, false
	}
	as.emit(a64PopIP)
	return DepthCode{Code: as.code(), Count: a64InstLen, Rollback: rollback}, true
}
