// Command gotiming is a Go fixture for function timing, with times known
// by construction: four goroutines each call one() 3 times and two() 3
// times; one() sleeps one unit, two() two units. A goroutine that wakes
// up is run by whichever thread is free, so that calls begin on one
// thread and end on another; the goroutines sleep side by side, so that
// none waits for a CPU. A goroutine's function time is its own whichever
// thread runs it (elapsed time, as the original measured it: a function
// that sleeps is charged its sleep): two's time is twice one's.
//
//	gotiming [UNIT]          the unit in microseconds (default 5000)
//	gotiming goexit [UNIT]   a goroutine calls exiter(), which calls
//	                         one() and then runtime.Goexit: exiter never
//	                         returns
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

// wait sleeps n units.
//
//go:noinline
func wait(n int) int {
	time.Sleep(time.Duration(n) * unit)
	return n
}

//go:noinline
func one() int { return wait(1) }

//go:noinline
func two() int { return wait(2) }

// exiter ends its goroutine inside itself.
//
//go:noinline
func exiter() {
	one()
	runtime.Goexit()
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
	var wg sync.WaitGroup
	if goexit {
		wg.Add(1)
		go func() {
			defer wg.Done()
			exiter()
		}()
		wg.Wait()
		fmt.Println("gotiming goexit done")
		return
	}
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 3; i++ {
				one()
				two()
			}
		}()
	}
	wg.Wait()
	fmt.Println("gotiming done")
}
