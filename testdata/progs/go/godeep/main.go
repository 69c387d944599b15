// Command godeep is the Go fixture of sampled call stacks deeper than the
// copy of the stack the kernel takes with a sample (8 KiB): main.main
// calls main.descend, which recurses DEPTH times (argv[1], default 100)
// with a 256-byte frame each, 25 KiB of stack, before main.spin spins for
// MS milliseconds (argv[2], default 300). Every sample in main.spin has
// main.descend and main.main below it, out of the copy's reach: only the
// frame pointers, which Go keeps, reach them. It prints
//
//	deep depth=N
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

var sink uint64

//go:noinline
func spin(d time.Duration) {
	x := uint64(1)
	for start := time.Now(); time.Since(start) < d; {
		for range 10000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink += x
}

//go:noinline
func descend(n int, d time.Duration) int {
	var pad [32]uint64 // a 256-byte frame
	pad[n%32] = uint64(n)
	if n == 0 {
		spin(d)
		return int(pad[0])
	}
	return descend(n-1, d) + int(pad[n%32]&1)
}

func main() {
	depth, ms := 100, 300
	if len(os.Args) > 1 {
		depth, _ = strconv.Atoi(os.Args[1])
	}
	if len(os.Args) > 2 {
		ms, _ = strconv.Atoi(os.Args[2])
	}
	descend(depth, time.Duration(ms)*time.Millisecond)
	fmt.Printf("deep depth=%d\n", depth)
}
