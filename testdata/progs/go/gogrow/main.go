// Command gogrow is a Go fixture whose recursion grows its goroutines'
// stacks many times, with line counts known by construction (N, the first
// argument, 20 by default; D, the second, 5,000): N goroutines, one after
// the other, each calling down(D), which recurses to down(0) with a frame
// of some 200 bytes: a goroutine's stack grows from its first size to a
// megabyte (D 5,000), a growth at a time, each at down's entry (the stack
// check calls runtime.morestack and starts down again from its first
// instruction).
//
//	down's first line, and "if n == 0"   (D+1) N (D+1 calls a goroutine)
//	"return pad[0]"                      N
//	"pad[n%16] += n" and "return down"   D N
package main

import (
	"fmt"
	"os"
	"strconv"
)

//go:noinline
func down(n int, pad [16]int64) int64 {
	if n == 0 {
		return pad[0]
	}
	pad[n%16] += int64(n)
	return down(n-1, pad) + pad[n%16]
}

func main() {
	n, depth := 20, 5000
	if len(os.Args) > 2 {
		n, _ = strconv.Atoi(os.Args[1])
		depth, _ = strconv.Atoi(os.Args[2])
	}
	var sum int64
	for i := 0; i < n; i++ {
		done := make(chan int64)
		go func() { done <- down(depth, [16]int64{}) }()
		sum += <-done
	}
	fmt.Println("gogrow", n, sum)
}
