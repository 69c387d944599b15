// Command gotiming is a Go fixture for function timing: four goroutines
// each call one() 3 times and two() 3 times; one() calls wait(1), two()
// wait(2), and wait(n) sleeps n units. A goroutine that wakes up is run by
// whichever thread is free, so that calls begin on one thread and end on
// another; the goroutines sleep side by side, so that none waits for a
// CPU on a machine that runs nothing else. A goroutine's function time is
// its own whichever thread runs it (elapsed time, as the original
// measured it: a function that sleeps is charged its sleep): two's time
// is twice one's, and each sleep's wake-up.
//
//	gotiming [UNIT]          the unit in microseconds (default 5000)
//	gotiming goexit [UNIT]   a goroutine calls exiter(), which calls
//	                         one() and then runtime.Goexit: exiter never
//	                         returns; main sleeps one unit more after the
//	                         goroutine has ended, and ends
//
// Timing tests take their truth from the run they check: at exit the
// program prints, on the monotonic clock PROFILE's times are on, what its
// calls of one, two, wait and exiter took, summed over every call, one
// line a function (as testdata/progs/c/timing.c does; see there):
//
//	own NAME calls C in I out O kin KI kout KO desc D
//
// in is the time inside a function (from its first statement to its
// last), out the time of its calls where they were made, kin and kout the
// in and out of the calls it made of those functions, desc the gaps (out
// less in) of every such call below it. exiter's in and out end when
// one() has returned to it: its frame closes at its goroutine's last
// event, one's exit.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
)

var unit = 5 * time.Millisecond

// own is the program's own measure of a function's calls, in nanoseconds.
type own struct {
	calls, in, out, kin, kout, desc int64
}

// owns is the measure of the measured functions, a goroutine's until it
// ends and adds it to all's. (Kept plain and small so that every helper
// is inlined: none is a function PREP would profile.)
type owns struct {
	one, two, wait, exiter own
}

var (
	mu  sync.Mutex
	all owns
)

func (o *owns) add(p *owns) {
	for _, f := range []struct{ to, from *own }{{&o.one, &p.one}, {&o.two, &p.two}, {&o.wait, &p.wait}, {&o.exiter, &p.exiter}} {
		f.to.calls += f.from.calls
		f.to.in += f.from.in
		f.to.out += f.from.out
		f.to.kin += f.from.kin
		f.to.kout += f.from.kout
		f.to.desc += f.from.desc
	}
}

// span is a call of a function being measured: when it began, and the
// gaps of every measured call below it.
type span struct {
	own   *own
	begun time.Time
	desc  int64
}

// measured is what a call measured of itself: its in and its desc.
type measured struct{ in, desc int64 }

// end books s, which ends here.
func (s *span) end() measured {
	in := int64(time.Since(s.begun))
	s.own.in += in
	return measured{in, s.desc}
}

// called books, for s, its call of o, which measured m and took out where
// it was made.
func (s *span) called(o *own, m measured, out time.Duration) {
	o.calls++
	o.out += int64(out)
	gap := int64(out) - m.in + m.desc
	s.own.kin += m.in
	s.own.kout += int64(out)
	s.own.desc += gap
	s.desc += gap
}

// wait sleeps n units.
//
//go:noinline
func wait(o *owns, n int) measured {
	s := span{own: &o.wait, begun: time.Now()}
	time.Sleep(time.Duration(n) * unit)
	return s.end()
}

//go:noinline
func one(o *owns) measured {
	s := span{own: &o.one, begun: time.Now()}
	at := time.Now()
	m := wait(o, 1)
	s.called(&o.wait, m, time.Since(at))
	return s.end()
}

//go:noinline
func two(o *owns) measured {
	s := span{own: &o.two, begun: time.Now()}
	at := time.Now()
	m := wait(o, 2)
	s.called(&o.wait, m, time.Since(at))
	return s.end()
}

// exiter ends its goroutine inside itself; it was called at called.
// Its in ends where one returns: its last event, where PROFILE closes
// it (what runs after, the goroutine's end, PROFILE does not see).
//
//go:noinline
func exiter(o *owns, called time.Time) {
	s := span{own: &o.exiter, begun: time.Now()}
	at := time.Now()
	m := one(o)
	back := time.Now()
	s.called(&o.one, m, back.Sub(at))
	s.own.in += int64(back.Sub(s.begun))
	o.exiter.calls++
	o.exiter.out += int64(back.Sub(called))
	close(exited)
	runtime.Goexit()
}

// exited is closed when exiter is about to call runtime.Goexit.
var exited = make(chan struct{})

func report() {
	for _, f := range []struct {
		name string
		o    *own
	}{{"main.one", &all.one}, {"main.two", &all.two}, {"main.wait", &all.wait}, {"main.exiter", &all.exiter}} {
		if f.o.calls > 0 {
			fmt.Printf("own %s calls %d in %d out %d kin %d kout %d desc %d\n", f.name, f.o.calls, f.o.in,
				f.o.out, f.o.kin, f.o.kout, f.o.desc)
		}
	}
}

func main() {
	args := os.Args[1:]
	goexit := len(args) > 0 && args[0] == "goexit"
	if goexit {
		args = args[1:]
	}
	if len(args) > 0 {
		us, err := strconv.Atoi(args[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, "gotiming: bad unit:", err)
			os.Exit(2)
		}
		unit = time.Duration(us) * time.Microsecond
	}
	if goexit {
		// The goroutine defers nothing: its last event is one's exit,
		// where exiter measures its in and out, and where its frame
		// closes. (exiter books into all: it is the only goroutine.)
		go exiter(&all, time.Now())
		<-exited
		time.Sleep(unit)
		report()
		fmt.Println("gotiming goexit done")
		return
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine owns
			for i := 0; i < 3; i++ {
				at := time.Now()
				one(&mine)
				mine.one.calls++
				mine.one.out += int64(time.Since(at))
				at = time.Now()
				two(&mine)
				mine.two.calls++
				mine.two.out += int64(time.Since(at))
			}
			mu.Lock()
			all.add(&mine)
			mu.Unlock()
		}()
	}
	wg.Wait()
	report()
	fmt.Println("gotiming done")
}
