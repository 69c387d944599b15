package books_test

import (
	"fmt"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/profile/books"
)

// A thread's main calls f twice, and f calls g once: the books give each
// function its calls, its own time and its time with children, from the
// entries and exits alone (times in nanoseconds, stack pointers falling
// as calls nest).
func Example() {
	plan := &datafile.Plan{Method: datafile.FuncTiming, StartIndex: -1,
		Funcs: []datafile.Func{{Name: "main"}, {Name: "f"}, {Name: "g"}}}
	b := books.New(plan)
	thread := books.Key{ID: 1}
	const main, f, g = 0, 1, 2
	b.Enter(thread, main, 1000, 0)
	b.Enter(thread, f, 900, 10)
	b.Enter(thread, g, 800, 20)
	b.Exit(thread, g, 800, 50)
	b.Exit(thread, f, 900, 60)
	b.Enter(thread, f, 900, 70)
	b.Exit(thread, f, 900, 100)
	b.Exit(thread, main, 1000, 110)
	b.Finish()
	fig := b.Figures()
	for i, fn := range plan.Funcs {
		fmt.Printf("%-4s calls %d, function %3d ns, function+child %3d ns\n", fn.Name, fig.Hits[i], fig.Self[i], fig.All[i])
	}
	fmt.Println("call depth", fig.Depth)
	// Output:
	// main calls 1, function  30 ns, function+child 110 ns
	// f    calls 2, function  50 ns, function+child  80 ns
	// g    calls 1, function  30 ns, function+child  30 ns
	// call depth 3
}
