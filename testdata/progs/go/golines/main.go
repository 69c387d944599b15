// Command golines is a Go fixture for what line probes in-process must
// survive in Go: nil-pointer faults recovered as panics, the faulting load
// the first instruction of its line (so that it runs in PROFILE's
// trampoline, and its fault must be delivered as if at its own address),
// panics recovered across counted lines, and goroutines that migrate
// between threads (runtime.Gosched) under any GOMAXPROCS.
//
//	golines N P
//
// sets GOMAXPROCS to P (default 1) and runs 8 goroutines of N rounds
// (default 1,000) each. A round calls safe(b), with b nil in every other
// round: safe's load faults, and safe's deferred function recovers.
// Line counts, by construction (G = 8 goroutines, R = N rounds):
//
//	load's "return b.v + 1"          G R
//	safe's "if recover() != nil"     G R
//	safe's "r = -1"                  G R / 2 (rounded up)
//	safe's "return load(b)"          G R
//	worker's "s += safe(b)"          G R
//	worker's "runtime.Gosched()"     G ceil(R / 16)
//
// It prints "golines S F", S the sum of the rounds' results and F the
// faults recovered.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
)

type box struct{ v int }

//go:noinline
func load(b *box) int {
	return b.v + 1
}

//go:noinline
func safe(b *box) (r int) {
	defer func() {
		if recover() != nil {
			r = -1
		}
	}()
	return load(b)
}

//go:noinline
func worker(n int, out *int) {
	s := 0
	for i := 0; i < n; i++ {
		var b *box
		if i%2 == 1 {
			b = &box{i}
		}
		s += safe(b)
		if i%16 == 0 {
			runtime.Gosched()
		}
	}
	*out = s
}

func main() {
	n, p := 1000, 1
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	if len(os.Args) > 2 {
		p, _ = strconv.Atoi(os.Args[2])
	}
	runtime.GOMAXPROCS(p)
	sums := make([]int, 8)
	var wg sync.WaitGroup
	for g := range sums {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker(n, &sums[g])
		}()
	}
	wg.Wait()
	s := 0
	for _, v := range sums {
		s += v
	}
	// Each goroutine: the odd rounds give i+1, the even ones -1.
	faults := len(sums) * ((n + 1) / 2)
	fmt.Println("golines", s, faults)
}
