// The Go fixture of the plan tests: the default selections leave main's
// own functions.
package main

import "fmt"

type T struct{ n int }

//go:noinline
func (t *T) M() int { return t.n * 2 }

func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

func main() {
	t := &T{3}
	fmt.Println(fib(10), t.M())
}
