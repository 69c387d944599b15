// Command goknown is a Go fixture for function timing with known work:
// each piece of work spins on the thread's CPU clock for a unit, so that
// the work is known whatever the machine is doing, and the program
// measures how long each function's calls took, so that their shares of
// the run are known in the same run.
//
//	goknown [UNIT]   the unit in microseconds (default 2000)
//
// A goroutine runs c, which calls a (one unit, in work), b (two units, in
// work) and work itself (one unit), ten times, and a ten times more; a
// and b do nothing but call work, so that their own time is about 0.
// Then the kinds of Go control flow a timed call must survive, each
// around units of work:
//
//   - moved: work in a goroutine that sleeps in a system call between
//     its units, while another goroutine takes its processor, and goes
//     on in another thread;
//   - blocked: a function that sleeps two units (elapsed time: it is
//     charged its sleep);
//   - grow: a function whose goroutine's stack grows, and is copied,
//     inside it (big, a frame of 64 KiB), around a unit of work;
//   - rescue: a panic in thrower2, after a unit of work, recovered two
//     frames up (rescue -> thrower1 -> thrower2).
//
// At exit it prints, for each function, its calls and the time inside
// them (from its first statement to its last: a call's time less what
// making it took), summed over the calls, on the monotonic clock; the
// number of threads moved's goroutine ran on; the run's own elapsed
// time, from main's start to its end; and the times of the other
// goroutines, each from its first statement to its last, added up (the
// goroutines live side by side: what they lived together is E plus G):
//
//	own NAME calls C in I
//	moved threads N
//	elapsed E
//	goroutines G
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

var unit = 2 * time.Millisecond

// goroutines adds up the lives of the goroutines main starts.
var goroutines atomic.Int64

// lived books the life of a goroutine begun at begun.
func lived(begun time.Time) { goroutines.Add(int64(time.Since(begun))) }

// own is the program's measure of a function's calls.
type own struct{ calls, in atomic.Int64 }

var owns = map[string]*own{}

func init() {
	for _, name := range names {
		owns[name] = &own{}
	}
}

var names = []string{"main.a", "main.b", "main.c", "main.work", "main.moved", "main.blocked", "main.grow", "main.rescue"}

// spanEnd books a call of o begun at begun. (Small, so that it is inlined:
// no function of the program's own measure is one PREP would profile.)
func spanEnd(o *own, begun time.Time) {
	o.in.Add(int64(time.Since(begun)))
	o.calls.Add(1)
}

// cpuNow is the thread's CPU time.
func cpuNow() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

var sink uint64

// work spins n units of the thread's CPU time.
//
//go:noinline
func work(n int) {
	begun := time.Now()
	end := cpuNow() + time.Duration(n)*unit
	x := sink
	for cpuNow() < end {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink = x
	spanEnd(owns["main.work"], begun)
}

//go:noinline
func a() {
	begun := time.Now()
	work(1)
	spanEnd(owns["main.a"], begun)
}

//go:noinline
func b() {
	begun := time.Now()
	work(2)
	spanEnd(owns["main.b"], begun)
}

//go:noinline
func c() {
	begun := time.Now()
	a()
	b()
	work(1)
	spanEnd(owns["main.c"], begun)
}

// threads are the threads moved's goroutine ran on.
var threads = map[int]bool{}

// moved does n units of work, each on the thread it finds. After each
// unit it wakes spinner, on its own processor (GOMAXPROCS 1), and sleeps
// six units in a system call: the runtime hands the processor to another
// thread (sysmon, within 10 ms), which runs spinner for eight units; when
// the system call returns, moved waits for the processor, and goes on in
// the thread that has it.
//
//go:noinline
func moved(n int, spin chan bool) {
	begun := time.Now()
	for i := 0; i < n; i++ {
		threads[syscall.Gettid()] = true
		work(1)
		spin <- true
		ts := syscall.NsecToTimespec(int64(6 * unit))
		syscall.Nanosleep(&ts, nil)
	}
	spanEnd(owns["main.moved"], begun)
}

// spinner spins eight units of CPU time each time it is woken, until
// spin is closed.
func spinner(spin chan bool, done *sync.WaitGroup) {
	begun := time.Now()
	defer done.Done()
	for range spin {
		end := cpuNow() + 8*unit
		for cpuNow() < end {
		}
	}
	lived(begun)
}

// blocked sleeps n units.
//
//go:noinline
func blocked(n int) {
	begun := time.Now()
	time.Sleep(time.Duration(n) * unit)
	spanEnd(owns["main.blocked"], begun)
}

// big has a frame of 64 KiB: entered from grow, it grows the goroutine's
// stack, which is copied, grow's frame with it; then it works.
//
//go:noinline
func big(n int) int {
	var pad [64 << 10]byte
	pad[n%len(pad)] = byte(n)
	work(1)
	return int(pad[(n+1)%len(pad)])
}

// grow grows its goroutine's stack inside itself.
//
//go:noinline
func grow() int {
	begun := time.Now()
	n := big(64)
	spanEnd(owns["main.grow"], begun)
	return n
}

//go:noinline
func thrower2() {
	work(1)
	panic("thrown")
}

//go:noinline
func thrower1() { thrower2() }

// rescue recovers the panic of thrower2, two frames below.
//
//go:noinline
func rescue() (got any) {
	begun := time.Now()
	defer func() {
		got = recover()
		spanEnd(owns["main.rescue"], begun)
	}()
	thrower1()
	return nil
}

func main() {
	begun := time.Now()
	if len(os.Args) > 1 {
		us, err := strconv.Atoi(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "goknown: bad unit:", err)
			os.Exit(2)
		}
		unit = time.Duration(us) * time.Microsecond
	}
	runtime.GOMAXPROCS(4)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		begun := time.Now()
		defer wg.Done()
		for i := 0; i < 10; i++ {
			c()
			a()
		}
		lived(begun)
	}()
	wg.Wait()
	procs := runtime.GOMAXPROCS(1)
	spin := make(chan bool)
	var spun sync.WaitGroup
	spun.Add(1)
	go spinner(spin, &spun)
	wg.Add(1)
	go func() {
		begun := time.Now()
		defer wg.Done()
		moved(6, spin)
		lived(begun)
	}()
	wg.Wait()
	close(spin)
	spun.Wait()
	runtime.GOMAXPROCS(procs)
	for i := 0; i < 5; i++ {
		blocked(2)
		grow()
		if rescue() != "thrown" {
			panic("not recovered")
		}
	}
	for _, name := range names {
		o := owns[name]
		fmt.Printf("own %s calls %d in %d\n", name, o.calls.Load(), o.in.Load())
	}
	fmt.Printf("moved threads %d\n", len(threads))
	fmt.Printf("elapsed %d\n", int64(time.Since(begun)))
	fmt.Printf("goroutines %d\n", goroutines.Load())
	fmt.Println("goknown done")
}
