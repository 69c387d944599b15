// Command gostacks is a Go fixture for what in-process counting must
// survive in Go: goroutine stacks that grow (and so are copied) while
// profiled functions run, and panics recovered across profiled frames.
//
//	main.deep      16 goroutines x 1,001 calls (deep(1000) recurses with a
//	               512-byte frame: each goroutine's stack grows from 8 KiB
//	               to over 512 KiB, copied several times)
//	main.guard     100 calls, each recovering what mayPanic raised
//	main.mayPanic  100 calls, 50 of which panic
//	main.main      1
package main

import (
	"fmt"
	"sync"
)

//go:noinline
func deep(n int) int {
	var pad [64]int // a 512-byte frame
	pad[n%64] = n
	if n == 0 {
		return pad[0]
	}
	return deep(n-1) + pad[n%64]
}

//go:noinline
func mayPanic(i int) int {
	if i%2 == 0 {
		panic(fmt.Sprintf("even %d", i))
	}
	return i
}

//go:noinline
func guard(i int) (r int) {
	defer func() {
		if recover() != nil {
			r = -1
		}
	}()
	return mayPanic(i)
}

func main() {
	var wg sync.WaitGroup
	sums := make([]int, 16)
	for g := range sums {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[g] = deep(1000)
		}()
	}
	wg.Wait()
	recovered := 0
	for i := 0; i < 100; i++ {
		if guard(i) < 0 {
			recovered++
		}
	}
	fmt.Println("gostacks", sums[0], recovered)
}
