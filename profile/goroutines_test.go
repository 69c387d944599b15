package profile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// TestGoroutineOrder: a goroutine's records, read from the rings of the
// threads that ran it in whatever order the readings found them, are
// booked in its own order: each thread's as they came, the threads' runs
// by their times; a record read in the second pass after the last one
// read before it waits for the next reading. Goroutine 7 enters f at 100
// and g at 200 on thread 1, moves to thread 2, leaves g at 500 and f at
// 600: f's function time is 200 (100 to 200, 500 to 600), g's 300.
func TestGoroutineOrder(t *testing.T) {
	tr := &tracer{parts: parts{books: testBooks(-1, "", false, 0)}, clocks: clocks{stolen: map[books.Key]int64{}}}
	r := newRings(tr)
	// keep reads goroutine 7's entry or exit of fn on thread tid, at
	// distance 100 plus depth from its stack's top, made at time at.
	keep := func(tid, fn int, exit bool, depth uint64, at int64) {
		r.keep(tid, 7, instr.Record{Item: fn, Exit: exit, SP: 100 + depth, G: 7}, at, 0, false)
	}

	// First reading: thread 1's ring has f's entry; then thread 2's has
	// g's exit (g's entry, made on thread 1 after its ring was read, is
	// not read yet).
	keep(1, bF, false, 0, 100)
	keep(2, bG, true, 8, 500)
	first := r.seq + 1
	// Second pass: thread 1's ring has g's entry now, thread 2's f's exit.
	keep(1, bG, false, 8, 200)
	keep(2, bF, true, 0, 600)
	r.bookGoroutines(first)

	// g's exit, read in the first pass, is booked with g's entry before
	// it; f's exit, read in the second and last, waits.
	if got := tr.parts.books.Figures().Self[bG]; got != 300 {
		t.Errorf("g: function time %d, want 300", got)
	}
	if got := len(r.goroutines[7].recs); got != 1 || r.goroutines[7].recs[0].ns != 600 {
		t.Fatalf("%d records wait (%+v), want f's exit", got, r.goroutines[7].recs)
	}
	r.bookGoroutines(r.seq + 1)
	if got := tr.parts.books.Figures().Self[bF]; got != 200 {
		t.Errorf("f: function time %d, want 200", got)
	}
	if len(r.queued) != 0 {
		t.Errorf("%d goroutines still queued", len(r.queued))
	}
}

// TestGoClock: a goroutine's clock takes out the stops of a thread while
// it stayed on it, not those of a thread it left, nor of one it came to
// before it came.
func TestGoClock(t *testing.T) {
	var c goClock
	steps := []struct {
		tid           int
		ns, stolen    int64
		want          int64
		whatItChecked string
	}{
		{1, 1000, 50, 1000, "the first event: nothing taken out"},
		{1, 2000, 80, 1970, "thread 1 stopped 30 since: taken out"},
		{2, 3000, 500, 2970, "moved to thread 2: its earlier stops are not the goroutine's"},
		{2, 4000, 520, 3950, "thread 2 stopped 20 since"},
		{1, 5000, 900, 4950, "back on thread 1, whose stops while it was away are not the goroutine's"},
	}
	for _, s := range steps {
		got := c.raw(s.tid, s.ns, s.stolen)
		c.events++
		if got != s.want {
			t.Errorf("%s: %d, want %d", s.whatItChecked, got, s.want)
		}
	}
}

// TestOneClock: Go functions are timed in-process only where the counter
// is one clock across CPUs: on x86-64 when the kernel's clock source is
// the TSC, or when the TSC is invariant and PROFILE's own check finds no
// CPU's counter behind another's in enough turns between two CPUs (a
// fake check here: ptrace's TestCounterWarp checks the real one), else
// they keep breakpoints with PRF4680, once, saying why; on arm64 always.
// A plan without Go functions is neither checked nor warned about.
func TestOneClock(t *testing.T) {
	goPlan := &datafile.Plan{Method: datafile.FuncTiming, Funcs: []datafile.Func{
		{Name: "main", Frame: datafile.FrameSP},
		{Name: "main.work", Frame: datafile.FrameGoroutine, File: "main.go"},
	}}
	cPlan := &datafile.Plan{Method: datafile.FuncTiming, Funcs: goPlan.Funcs[:1]}
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	source := func(text string) string { return write(text, text+"\n") }
	invariant := write("invariant", "processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc\nprocessor\t: 1\nflags\t\t: fpu tsc constant_tsc nonstop_tsc\n")
	stops := write("stops", "processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc\nprocessor\t: 1\nflags\t\t: fpu tsc constant_tsc\n")
	savedSource, savedInfo, savedWarp := clockSourceFile, cpuInfoFile, counterWarp
	defer func() { clockSourceFile, cpuInfoFile, counterWarp = savedSource, savedInfo, savedWarp }()
	agree := ptrace.Warp{Turns: warpTurns, CPUs: 2}
	for _, c := range []struct {
		name    string
		arch    instr.Arch
		plan    *datafile.Plan
		file    string
		info    string
		warp    ptrace.Warp
		err     error
		checked bool   // whether PROFILE checks the counters
		warned  string // PRF4680's reason, "" for none
	}{
		{"tsc", instr.AMD64, goPlan, source("tsc"), invariant, agree, nil, false, ""},
		{"kvm-clock, the counters agree", instr.AMD64, goPlan, source("kvm-clock"), invariant, agree, nil, true, ""},
		{"one CPU", instr.AMD64, goPlan, source("kvm-clock"), invariant, ptrace.Warp{Turns: warpTurns, CPUs: 1}, nil, true, ""},
		{"kvm-clock, a counter behind", instr.AMD64, goPlan, source("kvm-clock"), invariant, ptrace.Warp{Back: 120, Turns: warpTurns, CPUs: 2}, nil, true, "120 counts behind another's"},
		{"kvm-clock, too few turns", instr.AMD64, goPlan, source("kvm-clock"), invariant, ptrace.Warp{Turns: 12, CPUs: 2}, nil, true, "took 12 turns between two CPUs"},
		{"kvm-clock, no check", instr.AMD64, goPlan, source("kvm-clock"), invariant, agree, errors.New("no CPU"), true, "could not check the CPUs' counters: no CPU"},
		{"hpet, a counter that stops", instr.AMD64, goPlan, source("hpet"), stops, agree, nil, false, "lacks nonstop_tsc"},
		{"hpet, no cpuinfo", instr.AMD64, goPlan, source("hpet"), filepath.Join(dir, "none"), agree, nil, false, "could not read the CPUs' features"},
		{"hpet, cpuinfo of no flags", instr.AMD64, goPlan, source("hpet"), write("junk", "\x00\xff:::\nflags\nflagsconstant_tsc nonstop_tsc\n"), agree, nil, false, "lacks constant_tsc"},
		{"unreadable", instr.AMD64, goPlan, filepath.Join(dir, "none"), invariant, ptrace.Warp{Back: 1, Turns: warpTurns, CPUs: 2}, nil, true, "unreadable), not the time stamp counter"},
		{"hpet, no Go", instr.AMD64, cPlan, source("hpet"), invariant, agree, nil, false, ""},
		{"arm64", instr.ARM64, goPlan, source("arch_sys_counter"), stops, agree, nil, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			clockSourceFile, cpuInfoFile = c.file, c.info
			checks := 0
			counterWarp = func(turns int, limit time.Duration) (ptrace.Warp, error) {
				checks++
				return c.warp, c.err
			}
			var warned []*prf.Diagnostic
			tr := &tracer{arch: c.arch, plan: c.plan, cfg: Config{Warn: func(d *prf.Diagnostic) { warned = append(warned, d) }}}
			tr.caps = probeCaps(c.arch, c.plan, "")
			shared := c.plan == goPlan && c.warned == "" && (c.arch == instr.ARM64 || c.name == "tsc" || c.checked)
			for range 3 {
				if got := tr.clocks.ctr.oneClock(tr.arch, tr.plan, tr.cfg.Warn); got != shared {
					t.Errorf("one clock: %v, want %v", got, shared)
				}
			}
			if want := map[bool]int{false: 0, true: 1}[c.checked]; checks != want {
				t.Errorf("the counters checked %d times, want %d", checks, want)
			}
			if c.warned == "" && len(warned) > 0 {
				t.Errorf("warnings %v, want none", warned)
			}
			if c.warned != "" && (len(warned) != 1 || warned[0].Code != 4680 || !strings.Contains(warned[0].Error(), c.warned)) {
				t.Errorf("warnings %v, want one PRF4680 of %q", warned, c.warned)
			}
			if agreed := tr.clocks.ctr.agreed; (agreed != "") != (shared && c.checked) {
				t.Errorf("explained %q", agreed)
			}
			if c.plan == goPlan && c.arch == instr.AMD64 {
				err := newRings(tr).ringTimed(&c.plan.Funcs[1])
				if shared != (err == nil) || (!shared && !errors.Is(err, errGoClock)) {
					t.Errorf("the Go function timed in-process: %v, want the counter's reason when it is not one clock", err)
				}
			}
		})
	}
}
