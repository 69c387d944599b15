// Command gocounts is a Go fixture with counts known by construction:
//
//	main.work   20,000 calls (4 goroutines x 5,000)
//	main.fib     1,973 calls (fib(15)), deep enough to grow the stack
//	main.unused  0 (reachable, never called)
//	main.main    1
package main

import (
	"fmt"
	"os"
	"sync"
)

//go:noinline
func work(x int) int { return x*3 + 1 }

//go:noinline
func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

//go:noinline
func unused(x int) int { return x - 1 }

func main() {
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := 0
			for i := 0; i < 5000; i++ {
				s += work(i)
			}
			mu.Lock()
			total += s
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(os.Args) > 5 { // never in the tests: keeps unused linked in
		total = unused(total)
	}
	fmt.Println("gocounts", total, fib(15))
}
