// Package unwind walks a sampled thread's user stack through the call
// frame information (CFI) of the program and its libraries: the
// .eh_frame and .debug_frame sections that say, for every instruction of
// a function, where its caller's frame begins (the canonical frame
// address, CFA) and where the return address and the callee-saved
// registers were saved (DWARF 5, section 6.4, "Call Frame Information";
// the .eh_frame variant in the LSB, "Exception Frames").
//
// A [Module] is loaded once per mapped ELF file with [Load] and reused for
// every sample; [Unwind] takes the registers and a copy of the top of the
// stack the kernel gave with a sample (perf_event_open(2),
// PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER) and returns the PCs of
// the frames, innermost first, with the reason the walk stopped. It never
// guesses a frame: where the CFI or the copy of the stack does not say,
// the walk stops and says why (no frame-pointer fallback).
//
// Both architectures, x86-64 and arm64, are in the same code, so that
// every host tests both. The package is pure: it reads ELF files and
// bytes, never a live process. It parses the CFI with delve's frame
// package (github.com/go-delve/delve/pkg/dwarf/frame) and evaluates DWARF
// expressions with its op package, working around their traps
// (docs/design/libraries.md, "Stack unwinding: delve's frame and op
// packages"): FDEs are sorted, CFA
// programs are rewritten once at load so that delve runs them right
// (DW_CFA_restore, DW_CFA_val_offset, arm64's
// DW_CFA_AARCH64_negate_ra_state), and every call into them recovers from
// a panic on bad input.
//
// It imports nothing of the project.
package unwind
