package books

import (
	"fmt"
	"io"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
)

// benchDepths are the depths of the stack the books' benchmarks make
// their calls at (as profile's BenchmarkAttributionDepth, the whole run).
var benchDepths = []int{10, 1000, 4000}

// BenchmarkBooksDepth: what the books spend on one event with attribution,
// the entry or the exit of a leaf function called under 10, 1,000 and
// 4,000 frames, as the records of a ring reach them (BenchmarkBooks
// without attribution).
func BenchmarkBooksDepth(b *testing.B) {
	for _, depth := range benchDepths {
		for _, levels := range []int{0, 2} {
			b.Run(fmt.Sprintf("depth-%d/stack-%d", depth, levels), func(b *testing.B) {
				p := &datafile.Plan{Funcs: make([]datafile.Func, 3), Attribution: true, StackDepth: levels}
				bk := New(p)
				l := bk.Ledger(Key{ID: 1})
				const main, down, leaf = 0, 1, 2
				sp := uint64(1 << 30)
				bk.EnterLedger(l, main, sp, 0)
				for range depth {
					sp -= 64
					bk.EnterLedger(l, down, sp, 0)
				}
				now := int64(1)
				b.ResetTimer()
				for i := 0; i < b.N; i += 2 {
					bk.EnterLedger(l, leaf, sp-64, now)
					bk.ExitLedger(l, leaf, sp-64, now+1)
					now += 2
				}
			})
		}
	}
}

// BenchmarkBooksCall is what the books take for one call, its entry and
// its exit, at depth 3 of one thread, without an execution trace and with
// one (written to io.Discard): what /TRACE adds to every call PROFILE
// books, and what the books cost without it.
func BenchmarkBooksCall(b *testing.B) {
	for _, traced := range []bool{false, true} {
		name := "plain"
		if traced {
			name = "trace"
		}
		b.Run(name, func(b *testing.B) {
			bk := testBooks(-1, "", false, 0)
			if traced {
				w, err := datafile.NewTraceWriter(io.Discard, datafile.TraceHeader{Funcs: 4}, 0)
				if err != nil {
					b.Fatal(err)
				}
				bk.Trace = w
			}
			l := bk.Ledger(thread1)
			bk.EnterLedger(l, 0, 1000, 0)
			bk.EnterLedger(l, 1, 900, 1)
			now := int64(2)
			for b.Loop() {
				bk.EnterLedger(l, 2, 800, now)
				bk.ExitLedger(l, 2, 800, now+5)
				now += 10
			}
		})
	}
}
