// Command gocgo is a Go fixture for function timing across cgo: Go calls
// C, which calls Go back, which calls C.
//
//	gocgo [N [UNIT]]
//
// main calls run() once; run() calls C's c_outer(N) (default N 10); for
// each i, c_outer() calls c_work() (a unit of busy waiting in C), then
// the exported Go function goCallback(i), which calls goWork() (a unit
// in Go) and C's c_leaf(), which calls c_work(). A unit is UNIT
// microseconds (default 1000). The call tree, by construction:
//
//	main.main
//	  main.run                                  1
//	    (main._Cfunc_c_outer, cgo's wrapper)
//	      c_outer                               1
//	        c_work                              N
//	        (goCallback, cgo's exported wrapper in C; _cgoexp_..._goCallback)
//	          main.goCallback                   N
//	            main.goWork                     N
//	            (main._Cfunc_c_leaf)
//	              c_leaf                        N
//	                c_work                      N
//
// so c_work runs 2N times, and every function but the two works is made
// of its calls: their function time is next to nothing. The program
// measures its calls of run, c_outer, goCallback, goWork, c_leaf and
// c_work itself, on the monotonic clock, and prints at exit one line a
// function, "own NAME calls C in I out O kin KI kout KO desc D", as
// testdata/progs/c/timing.c does (see there), then "gocgo done".
package main

/*
#include "own.h"
*/
import "C"

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

var epoch = time.Now()

// now is the monotonic clock's time, in nanoseconds since the start.
func now() int64 { return int64(time.Since(epoch)) }

// span is a call being measured, as C's struct span (work.c).
type span struct{ begun, kin, kout, desc int64 }

// mine is the Go half's measure of its calls, a total a function; C's
// is in C.own. A call's measure made in one language, and the call's in
// the other, add up at the end.
var mine [C.N_OWN]struct{ calls, in, out, kin, kout, desc int64 }

// lastIn and lastDesc are what the measured Go call that returned last
// took: its in, and the gaps below it (C's are in C.last).
var lastIn, lastDesc int64

// end books the call s of function f, which ends at t. (It, the called
// functions and now are inlined: no function of the program's measure is
// profiled.)
func (s *span) end(f int, t int64) {
	in := t - s.begun
	m := &mine[f]
	m.calls++
	m.in += in
	m.kin += s.kin
	m.kout += s.kout
	m.desc += s.desc
	lastIn, lastDesc = in, s.desc
}

// called books, for the call s, its call of Go function f, which took
// out where it was made.
func (s *span) called(f int, out int64) {
	mine[f].out += out
	s.kin += lastIn
	s.kout += out
	s.desc += out - lastIn + lastDesc
}

// calledC is called for a call of C function f.
func (s *span) calledC(f int, out int64) {
	mine[f].out += out
	l := C.last
	s.kin += int64(l.in)
	s.kout += out
	s.desc += out - int64(l.in) + int64(l.desc)
}

var sink uint64

//go:noinline
func goWork() {
	s := span{begun: now()}
	for until := s.begun + int64(C.unit_ns); now() < until; {
		sink++
	}
	s.end(C.O_GO_WORK, now())
}

//export goCallback
func goCallback(i C.int) {
	s := span{begun: now()}
	at := now()
	goWork()
	s.called(C.O_GO_WORK, now()-at)
	at = now()
	C.c_leaf()
	s.calledC(C.O_C_LEAF, now()-at)
	s.end(C.O_GO_CALLBACK, now())
	C.last = C.struct_last{C.long(lastIn), C.long(lastDesc)} // (for c_outer)
}

//go:noinline
func run(n int) {
	s := span{begun: now()}
	at := now()
	C.c_outer(C.int(n))
	s.calledC(C.O_C_OUTER, now()-at)
	s.end(C.O_RUN, now())
}

func main() {
	n := 10
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	if len(os.Args) > 2 {
		u, _ := strconv.Atoi(os.Args[2])
		C.unit_ns = C.long(u) * 1000
	}
	at := now()
	run(n)
	mine[C.O_RUN].out += now() - at
	for f, name := range []string{"main.run", "c_outer", "main.goCallback", "main.goWork", "c_leaf", "c_work"} {
		m, c := mine[f], C.own[f]
		fmt.Printf("own %s calls %d in %d out %d kin %d kout %d desc %d\n", name, m.calls+int64(c.calls), m.in+int64(c.in),
			m.out+int64(c.out), m.kin+int64(c.kin), m.kout+int64(c.kout), m.desc+int64(c.desc))
	}
	fmt.Println("gocgo done")
}
