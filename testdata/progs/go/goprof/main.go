// Command goprof is a Go fixture for signals that arrive in PROFILE's
// code: it profiles itself with runtime/pprof, whose SIGPROF handler
// reads the program counter the signal interrupted and walks the stack
// from there, while it calls small functions many times, where PROFILE's
// entry, exit and line probes are.
//
//	goprof FILE [N [MS]]
//
// main calls mid() N times (default 10,000,000), and again N times until
// the process has used MS milliseconds of CPU time (default 0; at most
// 10,000 rounds): some 100 samples a second of it. mid() calls leaf() 4
// times: counts main.main 1, main.mid C, main.leaf 4C, where C is the
// calls printed (N times the rounds). The CPU profile
// goes to FILE. A sample whose program counter is in PROFILE's code has
// no function in the profile (<unknown> in go tool pprof): PROFILE
// delivers a signal that comes there where the thread is back in the
// program's code, so that every sample is of a function, as natively.
// It prints "goprof calls C".
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"
)

var sink uint64

//go:noinline
func leaf(x uint64) uint64 { return x*0x9E3779B97F4A7C15 ^ x>>7 }

//go:noinline
func mid(x uint64) uint64 {
	for i := 0; i < 4; i++ {
		x = leaf(x)
	}
	return x
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: goprof FILE [N]")
		os.Exit(2)
	}
	n, ms := 10000000, 0
	var err error
	if len(os.Args) > 2 {
		n, err = strconv.Atoi(os.Args[2])
	}
	if err == nil && len(os.Args) > 3 {
		ms, err = strconv.Atoi(os.Args[3])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "goprof:", err)
		os.Exit(2)
	}
	f, err := os.Create(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "goprof:", err)
		os.Exit(1)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "goprof:", err)
		os.Exit(1)
	}
	x, calls := uint64(1), 0
	for round := 0; round == 0 || (cpu() < time.Duration(ms)*time.Millisecond && round < 10000); round++ {
		for i := 0; i < n; i++ {
			x = mid(x)
		}
		calls += n
	}
	sink = x
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "goprof:", err)
		os.Exit(1)
	}
	fmt.Println("goprof calls", calls)
}

// cpu is the CPU time the process has used.
func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
