package profile

import (
	"encoding/binary"
	"slices"
	"syscall"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/layout"
	"github.com/sourceprofiler/sprof/profile/procmaps"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// fakeRingHost is the loop's part of the rings' environment: the
// threads it was asked to let go.
type fakeRingHost struct {
	resumed []int
}

func (h *fakeRingHost) resume(tid int, _ syscall.Signal) error {
	h.resumed = append(h.resumed, tid)
	return nil
}
func (h *fakeRingHost) setAndResume(th *thread, sig syscall.Signal) error {
	return h.resume(th.tid, sig)
}

// fakeRings returns rings over an environment of their own, not a
// tracer's: amd64's rings of two blocks in memory of PROFILE's (block 1
// thread tid's), the books of testBooks, and a counter that reads in
// nanoseconds. The plan's functions are testBooks' (bMain, bF...).
func fakeRings(t *testing.T, tid int) (*rings, *fakeRingHost, *thread) {
	t.Helper()
	const ringAt = 0x1000
	size := int(ringAt + instr.RingSize(ringRecords))
	shared, err := ptrace.NewShared(2 * size)
	if err != nil {
		t.Skip("no shared memory:", err)
	}
	t.Cleanup(func() { shared.Close() })
	plan := &datafile.Plan{Method: datafile.FuncTiming, StartIndex: -1,
		Funcs: []datafile.Func{{Name: "main"}, {Name: "f"}, {Name: "g"}, {Name: "h"}}}
	bk := books.New(plan)
	bk.Where = &stackMaps{read: func() ([]procmaps.Mapping, error) { return []procmaps.Mapping{{Start: 0, End: 1 << 20}}, nil }}
	th := &thread{tid: tid, tgid: tid}
	host := &fakeRingHost{}
	clk := &clocks{stolen: map[books.Key]int64{}, carried: map[int]uint64{}, ctr: counterClock{scale: 1}}
	r := &rings{
		ringEnv: ringEnv{arch: instr.AMD64, plan: plan, books: bk, threads: map[int]*thread{tid: th},
			regs: &ptrace.Regs{}, clocks: clk, host: host},
		ringMarks: ringMarks{marks: map[int]uint64{}, broken: map[int]bool{}, held: -1},
		goQueue:   goQueue{goroutines: map[uint64]*goroutine{}},
	}
	r.start(&counters{shared: shared, blockOf: map[int]int{tid: 1},
		layout: layout.Layout{Kind: instr.CountPerThread, Rings: true, RingAt: ringAt, BlockSize: uint64(size), NBlocks: 2, Records: ringRecords, DepthSlots: depthSlots}})
	r.reset(1)
	return r, host, th
}

// write appends a record to block b's ring of r as amd64's record code
// does: the record in the slot at the head, then the head moved on.
func write(r *rings, b, item int, exit bool, sp uint64, at uint64) {
	area := r.counters.ringArea(b)
	head := binary.LittleEndian.Uint64(area[instr.RingHead:])
	slot := instr.RingSlot(area, int(head)&(ringRecords-1))
	binary.LittleEndian.PutUint64(slot, at)
	binary.LittleEndian.PutUint64(slot[8:], sp)
	binary.LittleEndian.PutUint64(slot[16:], instr.RecordTag(item, exit))
	binary.LittleEndian.PutUint64(area[instr.RingHead:], head+1)
}

// TestRingsDrain: the rings, over an environment of their own, read a
// thread's records into its ledger, its stops taken out of their times
// (a stop for a full ring ends at its first record), its waits settled
// first; a record of no function of the plan is skipped; a ring read is
// empty.
func TestRingsDrain(t *testing.T) {
	const tid = 42
	r, _, th := fakeRings(t, tid)
	r.clocks.stolen[threadLedger(tid)] = 50
	th.fullAt = 90
	// main calls f at 100, which calls g at 150, back at 250; f returns
	// at 400. (A record of item 99 is none of the plan's.)
	write(r, 1, bMain, false, 1000, 100)
	write(r, 1, bF, false, 992, 150)
	write(r, 1, 99, false, 984, 160)
	write(r, 1, bG, false, 984, 200)
	write(r, 1, bG, true, 984, 250)
	write(r, 1, bF, true, 992, 400)
	if n := r.drain(th); n != 6 {
		t.Fatalf("drained %d records, want 6", n)
	}
	if got := r.books.Figures().Self[bG]; got != 50 {
		t.Errorf("g: function time %d, want 50", got)
	}
	if got := r.books.Figures().Self[bF]; got != 200 {
		t.Errorf("f: function time %d, want 200 (250 less g's 50)", got)
	}
	if !th.evented {
		t.Errorf("the thread's waits not settled before its records")
	}
	if th.heldTotal != 10 || r.clocks.stolen[threadLedger(tid)] != 60 || th.fullAt != 0 {
		t.Errorf("stops taken out %d, %d in all (full at %d); want 10 (90 to 100), 60: the full ring's stop ended at its first record",
			th.heldTotal, r.clocks.stolen[threadLedger(tid)], th.fullAt)
	}
	if th.events != 5 {
		t.Errorf("%d events of the thread, want 5", th.events)
	}
	th.evented = false
	if n := r.drain(th); n != 0 || th.evented {
		t.Errorf("read again: %d records, waits settled %v; want none, not", n, th.evented)
	}
}

// TestRingsDropped: the records in the ring of a thread that vforked are
// its child's, dropped, as are those of a thread with no block of its
// own (the discard ring's); a ring the program wrote over is dropped and
// counted, once, and read again once taken back.
func TestRingsDropped(t *testing.T) {
	const tid = 42
	r, _, th := fakeRings(t, tid)
	th.vforking = true
	write(r, 1, bF, false, 992, 100)
	if n := r.drain(th); n != 0 || r.books.Figures().Hits[bF] != 0 {
		t.Errorf("a vforking thread's ring: %d records booked, want none", n)
	}
	r.vforkDone(th)
	if th.vforking {
		t.Error("still vforking after its vfork-done stop")
	}

	other := &thread{tid: 7}
	write(r, 0, bF, false, 992, 100)
	if n := r.drain(other); n != 0 {
		t.Errorf("the discard ring: %d records booked, want none", n)
	}
	if _, n := instr.RingUnread(r.arch, r.counters.ringArea(0), ringRecords); n != 0 {
		t.Errorf("the discard ring holds %d records, want none", n)
	}

	area := r.counters.ringArea(1)
	binary.LittleEndian.PutUint64(area[instr.RingTail:], 1<<40) // a wild write
	write(r, 1, bF, false, 992, 100)
	for range 2 {
		if n := r.drain(th); n != 0 {
			t.Errorf("a ring written over: %d records booked, want none", n)
		}
	}
	if r.damaged != 1 {
		t.Errorf("damaged %d times, want once", r.damaged)
	}
	write(r, 1, bF, false, 992, 100)
	th.evented = false
	if n := r.drain(th); n != 1 || !th.evented {
		t.Errorf("the ring taken back: %d records booked, waits settled %v; want 1, settled", n, th.evented)
	}
}

// TestRingsFullStop: a thread stopped at a trampoline's ring-full
// breakpoint is the rings' (another breakpoint is not): the moment it
// stopped, which the record code saved in its ring, is when its stop
// began, the stop ends at its next record, and the thread goes on.
func TestRingsFullStop(t *testing.T) {
	const tid = 42
	r, host, th := fakeRings(t, tid)
	r.counters.tramps = []*tramp{{addr: 0x10000, regions: []region{{at: 0x20, full: 2}}}}
	r.clocks.waited = 5000
	binary.LittleEndian.PutUint64(r.counters.ringArea(1)[instr.RingFullTime:], 4000)
	r.regs.SetPC(0x10022) // past the int3 at 0x10021
	if ok, err := r.stop(th, 0x10030); ok || err != nil {
		t.Errorf("a stop at another breakpoint: claimed %v (%v), want not", ok, err)
	}
	if ok, err := r.stop(th, 0x10021); !ok || err != nil {
		t.Fatalf("a stop at the ring-full breakpoint: claimed %v (%v), want claimed", ok, err)
	}
	if th.fullAt != 4000 || r.full != 1 || !slices.Equal(host.resumed, []int{tid}) || r.regs.PC() != 0x10022 {
		t.Errorf("full at %d, %d full stops, threads resumed %v, PC %#x; want 4000, 1, [%d], 0x10022",
			th.fullAt, r.full, host.resumed, r.regs.PC(), tid)
	}
	write(r, 1, bF, false, 992, 4500)
	r.drain(th)
	if th.heldTotal != 500 {
		t.Errorf("stops taken out %d, want 500: from 4000, when the thread stopped, to its next record at 4500", th.heldTotal)
	}
}

// TestRingsDrainAllocs: reading a ring allocates nothing a record, once
// the thread's ledger has its frames (a record's pointer told to the
// observers had moved every record read to the heap, whether anyone
// observed or not, and doubled what a timed call cost).
func TestRingsDrainAllocs(t *testing.T) {
	const tid, pairs = 42, 200
	r, _, th := fakeRings(t, tid)
	calls := func() {
		write(r, 1, bMain, false, 1000, 100)
		for i := range uint64(pairs) {
			write(r, 1, bF, false, 992, 200+2*i)
			write(r, 1, bF, true, 992, 201+2*i)
		}
		write(r, 1, bMain, true, 1000, 1000)
		if n := r.drain(th); n != 2*pairs+2 {
			t.Fatalf("drained %d records, want %d", n, 2*pairs+2)
		}
	}
	calls()
	if allocs := testing.AllocsPerRun(10, calls); allocs > 2 {
		t.Errorf("%v allocations to read %d records, want none a record", allocs, 2*pairs+2)
	}
}
