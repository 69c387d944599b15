// Command gosampling is the Go fixture of function sampling: it spends
// known shares of its CPU time in known functions, over several
// goroutines, each locked to a thread of its own: spinA, spinB and spinC
// each spin until their thread has used 5, 3 and 2 ms of CPU time (the
// thread's own clock) since they were called, so 50 %, 30 % and 20 % of
// the work is theirs whatever else the machine runs. Three goroutines,
// the third started late (after the first's 20th round), each run ROUNDS
// rounds of one call of each; spinC is reached through middle.
//
//	gosampling [ROUNDS [CPUPROFILE]]
//
// ROUNDS defaults to 100. With CPUPROFILE the program profiles itself
// with runtime/pprof into that file meanwhile, as a program being
// sampled may. At its end it prints what its functions used, summed over
// the goroutines, as measured inside them (as testdata/progs/c/shares.c
// does):
//
//	shares calls=N a=NS b=NS c=NS total=NS
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// threadCPU returns the calling thread's CPU time in nanoseconds.
func threadCPU() int64 {
	const clockThreadCPUTime = 3
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

var sink uint64

//go:noinline
func spinA() int64 {
	start := threadCPU()
	for {
		for i := range 20000 {
			sink += uint64(i)
		}
		if t := threadCPU(); t-start >= 5000000 {
			return t - start
		}
	}
}

//go:noinline
func spinB() int64 {
	start := threadCPU()
	for {
		for i := range 20000 {
			sink += uint64(i)
		}
		if t := threadCPU(); t-start >= 3000000 {
			return t - start
		}
	}
}

//go:noinline
func spinC() int64 {
	start := threadCPU()
	for {
		for i := range 20000 {
			sink += uint64(i)
		}
		if t := threadCPU(); t-start >= 2000000 {
			return t - start
		}
	}
}

//go:noinline
func middle() int64 { return spinC() }

func main() {
	rounds := 100
	if len(os.Args) > 1 {
		rounds, _ = strconv.Atoi(os.Args[1])
	}
	if len(os.Args) > 2 {
		f, err := os.Create(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	var used [3][3]int64
	var wg sync.WaitGroup
	started := make(chan bool)
	work := func(g int) {
		defer wg.Done()
		runtime.LockOSThread()
		for r := range rounds {
			used[g][0] += spinA()
			used[g][1] += spinB()
			used[g][2] += middle()
			if g == 0 && r == min(20, rounds-1) {
				close(started)
			}
		}
	}
	wg.Add(3)
	go work(0)
	go work(1)
	<-started
	go work(2)
	wg.Wait()
	var a, b, c int64
	for g := range used {
		a, b, c = a+used[g][0], b+used[g][1], c+used[g][2]
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	total := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	fmt.Printf("shares calls=%d a=%d b=%d c=%d total=%d\n", 3*rounds, a, b, c, total.Nanoseconds())
}
