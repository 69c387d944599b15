package profile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/testutil"
	"github.com/sourceprofiler/sprof/profile/layout"
	"github.com/sourceprofiler/sprof/profile/procmaps"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// The narration of profile --explain (explain.go): its pieces, over
// fixed bytes of both architectures, decoded through package instr on
// any host; and what it says of a planting and of first hits, over the
// fake memory of mechanism_test.go.

// TestExplainPatch: an entry's patch and trampoline, planned and built
// by each architecture, shown as the narration shows them: the bytes
// before and after, disassembled, and the trampoline's listing with the
// instrumentation, each instruction moved and the jump back noted.
func TestExplainPatch(t *testing.T) {
	for _, c := range []struct {
		arch          instr.Arch
		fn            []byte
		site, tramp   uint64
		kind          instr.CountKind
		counter       uint64
		before, after string
		count, moved  []string
	}{
		{
			arch: instr.AMD64, fn: leafCode, site: 0x401000, tramp: 0x400000, kind: instr.CountPerThread, counter: 8,
			before: "before  55 48 89 e5 89 7d fc  push %rbp; mov %rsp,%rbp; mov %edi,-0x4(%rbp)",
			after:  "after   e9 fb ef ff ff cc cc  jmpq 0x400000; int3; int3",
			count:  []string{"incq %gs:0x8"},
			moved:  []string{"push %rbp", "mov %rsp,%rbp", "mov %edi,-0x4(%rbp)"},
		},
		{
			// stp x29, x30, [sp, #-16]!; mov x29, sp; mov w0, #0; ldp x29, x30, [sp], #16; ret
			arch: instr.ARM64, fn: a64Code(0xa9bf7bfd, 0x910003fd, 0x52800000, 0xa8c17bfd, 0xd65f03c0),
			site: 0xaaaa00001000, tramp: 0xaaaa00000000, kind: instr.CountShared, counter: 0xffff00000008,
			before: "before  fd 7b bf a9  stp x29, x30, [sp,#-16]!",
			after:  "after   00 fc ff 17  b 0xaaaa00000000",
			count:  []string{"mov x16, #0x8", "movk x16, #0xffff, lsl #32", "mov x17, #0x1", "stadd x17, [x16]"},
			moved:  []string{"stp x29, x30, [sp,#-16]!"},
		},
	} {
		t.Run(c.arch.Name(), func(t *testing.T) {
			p, err := c.arch.PlanPatch(c.fn, c.site, c.site)
			if err != nil {
				t.Fatal(err)
			}
			code, err := c.arch.Trampoline(&p, c.tramp, c.arch.CountCode(c.kind, c.counter))
			if err != nil {
				t.Fatal(err)
			}
			jump, err := c.arch.PatchJump(&p, c.tramp)
			if err != nil {
				t.Fatal(err)
			}
			ba := strings.Split(strings.TrimSuffix(beforeAfter(c.arch, p.Site, p.Orig, jump), "\n"), "\n")
			if len(ba) != 2 || strings.TrimSpace(ba[0]) != c.before || strings.TrimSpace(ba[1]) != c.after {
				t.Errorf("before and after:\n%s\nwant\n  %s\n  %s", strings.Join(ba, "\n"), c.before, c.after)
			}
			tr := &tramp{addr: c.tramp, patch: p, code: code}
			lines := strings.Split(strings.TrimSuffix(listing(c.arch, "trampoline", c.tramp, code.Code, trampNotes(c.arch, tr)), "\n"), "\n")
			var texts []string
			for _, l := range lines[1:] {
				// "    0xADDR  BYTES  TEXT  ; NOTE"
				text, _, _ := strings.Cut(l, "  ;")
				f := regexp.MustCompile(`^    0x[0-9a-f]+  ([0-9a-f]{2} ?)+  `).ReplaceAllString(text, "")
				texts = append(texts, strings.TrimSpace(f))
			}
			want := append(append(slices.Clone(c.count), c.moved...), "") // (the jump back last)
			if len(texts) != len(want) || !slices.Equal(texts[:len(want)-1], want[:len(want)-1]) {
				t.Fatalf("trampoline:\n%s\nwant the instructions %q, then the jump back", strings.Join(lines, "\n"), want[:len(want)-1])
			}
			notes := []string{lines[1], lines[1+len(c.count)], lines[len(lines)-1]}
			wantNotes := []string{"; the instrumentation", fmt.Sprintf("; moved from %#x", c.site), fmt.Sprintf("; back to %#x, after the patch", p.End())}
			for i, n := range notes {
				if !strings.HasSuffix(n, wantNotes[i]) {
					t.Errorf("line %q, want it to end %q", n, wantNotes[i])
				}
			}
		})
	}
}

// a64Code is arm64 words in memory order.
func a64Code(words ...uint32) []byte {
	b := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return b
}

// TestExplainDisasm: the listing shows the word an instruction jumps
// through as data (an out-of-line slot's jump back on x86-64), bytes that
// are no instruction as such, and a displacement 0 without base or index,
// with a segment or without ("mov %rcx," before), which x86asm leaves out.
func TestExplainDisasm(t *testing.T) {
	slot := append([]byte{0x55, 0xff, 0x25, 0, 0, 0, 0}, 0x01, 0x10, 0x40, 0, 0, 0, 0, 0)
	for _, c := range []struct {
		arch instr.Arch
		code []byte
		want []string
	}{
		{instr.AMD64, slot, []string{"push %rbp", "jmpq *(%rip)", "(data: 0x401001)"}},
		{instr.AMD64, []byte{0x65, 0x48, 0xff, 0x04, 0x25, 0, 0, 0, 0}, []string{"incq %gs:0x0"}},
		{instr.AMD64, []byte{0x65, 0x48, 0x8b, 0x0c, 0x25, 0, 0, 0, 0}, []string{"mov %gs:0x0,%rcx"}},
		{instr.AMD64, []byte{0x48, 0x89, 0x0c, 0x25, 0, 0, 0, 0}, []string{"mov %rcx,0x0"}},
		{instr.ARM64, append(a64Code(0xd503233f, 0xd65f03c0), 0x1f, 0x20), []string{"paciasp", "ret", "(not an instruction)"}},
	} {
		var got []string
		for _, l := range disasm(c.arch, c.code, 0x402000) {
			got = append(got, l.text)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s % x: %q, want %q", c.arch.Name(), c.code, got, c.want)
		}
	}
}

// TestExplainNil: a run without --explain has no observers, and an
// event noted to none does nothing; nor does the zero narrator, told
// every event.
func TestExplainNil(t *testing.T) {
	tr, _, _ := fakeTracer(leafFuncs(datafile.FuncCounting))
	if x := newExplainer(tr); x != nil {
		t.Fatalf("a narrator without Config.Explain: %v", x)
	}
	tr.choose()
	if tr.told.on() {
		t.Fatalf("a run without Config.Explain has observers: %v", tr.told)
	}
	var x explainer
	for _, e := range everyEvent() {
		tr.told.note(e)
		x.observe(e)
	}
	if now, _, _ := x.waiting(); now {
		t.Error("a nil narrator polls")
	}
}

// everyEvent is one of each event (events.go), with nil or zero parts.
func everyEvent() []event {
	return []event{
		planReadEvent{}, startedEvent{}, calibratedEvent{}, runningEvent{}, endedEvent{},
		mechanismsEvent{}, plantingEvent{}, sharersEvent{}, seccompEvent{tid: 1},
		stopEvent{}, threadEvent{1}, threadExitingEvent{}, childEvent{1, false}, execEvent{},
		rendezvousEvent{}, libraryEvent{nil, true}, signalEvent{nil, syscall.SIGINT},
		steppedOutEvent{sig: syscall.SIGINT}, forwardedEvent{syscall.SIGINT}, requeuedEvent{1, syscall.SIGINT},
		sweptEvent{n: 1, threads: 2}, frameSettledEvent{tid: 1}, hitEvent{}, recordEvent{1, instr.Record{}}, drainedEvent{1, 5},
	}
}

// TestEveryEventNarrated: each event type of events.go is in everyEvent
// and has a case in the narrator's observe: an event added is narrated,
// or this fails.
func TestEveryEventNarrated(t *testing.T) {
	if testutil.Slow() {
		t.Skip("the sources are the host's (the arm64 VM has the test binary alone)")
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "events.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "isEvent" {
			types = append(types, fn.Recv.List[0].Type.(*ast.Ident).Name)
		}
	}
	listed := map[string]bool{}
	for _, e := range everyEvent() {
		listed[reflect.TypeOf(e).Name()] = true
	}
	cases := map[string]bool{}
	g, err := parser.ParseFile(fset, "explain.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(g, func(n ast.Node) bool {
		if fn, ok := n.(*ast.FuncDecl); ok && fn.Name.Name != "observe" {
			return false
		}
		if c, ok := n.(*ast.CaseClause); ok {
			for _, e := range c.List {
				if id, ok := e.(*ast.Ident); ok {
					cases[id.Name] = true
				}
			}
		}
		return true
	})
	if len(types) < 20 {
		t.Fatalf("events.go: found %d event types", len(types))
	}
	for _, name := range types {
		if !listed[name] {
			t.Errorf("%s is not in everyEvent", name)
		}
		if !cases[name] {
			t.Errorf("the narrator's observe has no case for %s", name)
		}
	}
}

// TestNoPartNamesTheNarrator: the loop and the parts note events
// (events.go); none names the narration, which newTracer alone makes.
func TestNoPartNamesTheNarrator(t *testing.T) {
	if testutil.Slow() {
		t.Skip("the sources are the host's (the arm64 VM has the test binary alone)")
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") || strings.HasPrefix(file, "explain") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && file == "tracer.go" && fn.Name.Name == "newTracer" {
				continue
			}
			ast.Inspect(d, func(n ast.Node) bool {
				id, ok := n.(*ast.Ident)
				if ok && (id.Name == "explainer" || id.Name == "newExplainer" || strings.HasSuffix(id.Name, "Narrator")) {
					t.Errorf("%s names the narration (%s): note an event (events.go)", fset.Position(id.Pos()), id.Name)
				}
				return true
			})
		}
	}
	if checked < 40 {
		t.Fatalf("checked %d files", checked)
	}
}

// narrated returns a tracer of plan over the fake memory, with areas
// mapped, narrating into the buffer returned with limit.
func narrated(plan *datafile.Plan, code []byte, limit int) (*tracer, *fakeMem, *bytes.Buffer) {
	tr, mem, _ := fakeTracerOf(plan, code)
	mapAreas(tr, mem)
	var out bytes.Buffer
	tr.cfg.Explain, tr.cfg.ExplainLimit = &out, limit
	tr.clocks.epoch = time.Now()
	tr.threads = map[int]*thread{}
	tr.told = observers{newExplainer(tr)}
	return tr, mem, &out
}

// TestExplainPlanting: the narration of a module planted: counting
// in-process, the entry's jump and trampoline, which runs the leaf to its
// return, and the instruction moved out of its way (leafCode loaded low,
// as a program not PIE is); with
// breakpoints, the breakpoint, and how its instruction is carried out at
// a hit.
func TestExplainPlanting(t *testing.T) {
	maps := []procmaps.Mapping{{Start: leafAt, End: leafAt + 0x1000, Perms: "r-xp"}}
	t.Run("in-process", func(t *testing.T) {
		tr, _, out := narrated(leafFuncs(datafile.FuncCounting), leafCode, 0)
		tr.parts.counters = &counters{env: tr.counterEnv(), layout: layout.Layout{Kind: instr.CountPerThread, ProgAddr: 0x7f0000000000, BlockSize: 64, NBlocks: 1, Records: ringRecords, DepthSlots: depthSlots}, blockOf: map[int]int{}}
		tr.parts.entries = newEntryTrampolines(tr.plan, tr.arch, tr.parts.plant, tr.parts.bp.plantEntry)
		tr.choose()
		if err := tr.plantModule(0, 0, leafInstance(), maps); err != nil {
			t.Fatal(err)
		}
		wantNarration(t, out.String(),
			"Module prog, mapped at 0x401000 (load bias 0x0): PROFILE read its code from the process, decoded it once, and plants 1 function.",
			"function f, entry, at 0x401000: a jump to its trampoline replaces 1 instruction; the trampoline runs the next 5 instructions too, to the function's return, and never comes back",
			"  The jump is longer than the instruction: its last 4 bytes are those of the code after it",
			"  before  55  push %rbp\n  after   e9  (not an instruction)",
			"incq %gs:0x0",
			"; the count: one more call of f\n",
			"; moved from 0x401000",
			"; never reached: the function returns from the trampoline\n",
			"mov %edi,-0x4(%rbp) at 0x401004, moved out of the way of the jump before it: a jump to a trampoline that runs it replaces it, so that whatever lands there still runs it, and the rest of the function to its return.",
			"Module prog: 1 site, 1 jumps to a trampoline, 0 keep breakpoints; 1 instruction moved out of the way of a jump.",
		)
	})
	t.Run("line where the flags are live", func(t *testing.T) {
		// mov $0,%eax; jl; ret: the count saves %rax, reads the counter,
		// adds without flags. The note of the count is on the read of
		// the counter, not on the save (as it was).
		code := append([]byte{0xb8, 0, 0, 0, 0, 0x7c, 0x00, 0xc3}, bytes.Repeat([]byte{0x90}, 256)...)
		plan := &datafile.Plan{Method: datafile.LineCounting,
			Modules: []datafile.Module{{Name: "prog", Arch: "amd64", Files: []string{"leaf.c"}}},
			Lines:   []datafile.Line{{File: 0, Line: 1, Addrs: []uint64{leafAt}}}}
		tr, _, out := narrated(plan, code, 0)
		shared, err := ptrace.NewShared(4096)
		if err != nil {
			t.Fatal(err)
		}
		defer shared.Close()
		tr.parts.counters = &counters{env: tr.counterEnv(), shared: shared, layout: layout.Layout{Kind: instr.CountPerThread, ProgAddr: 0x7f0000000000, BlockSize: 64, NBlocks: 1, Records: ringRecords, DepthSlots: depthSlots}, blockOf: map[int]int{}}
		tr.parts.lines = newLineTrampolines(tr)
		tr.choose()
		if err := tr.plantModule(0, 0, leafInstance(), maps); err != nil {
			t.Fatal(err)
		}
		for _, re := range []string{
			`\n    0x[0-9a-f]+  65 48 89 04 25 [0-9a-f ]+  mov %rax,%gs:0x[0-9a-f]+ +; the register the count uses, saved first and put back after it: a line's count changes nothing the program can see\n`,
			`\n    0x[0-9a-f]+  65 48 8b 04 25 [0-9a-f ]+  mov %gs:0x[0-9a-f]+,%rax +; the count of the line, in the thread's block\n`,
			`\n    0x[0-9a-f]+  b8 00 00 00 00 +  mov \$0x0,%eax +; moved from 0x401000\n`,
		} {
			if !regexp.MustCompile(re).MatchString(out.String()) {
				t.Errorf("narration:\n%s\nlacks %s", out, re)
			}
		}
	})
	t.Run("breakpoints", func(t *testing.T) {
		plan := leafFuncs(datafile.FuncCounting)
		tr, _, out := narrated(plan, leafCode, 0)
		tr.cfg.Breakpoints = true
		if err := tr.plantModule(0, 0, leafInstance(), maps); err != nil {
			t.Fatal(err)
		}
		wantNarration(t, out.String(),
			"function f, entry, at 0x401000: keeps a breakpoint (profile --breakpoints).",
			"  before  55  push %rbp\n  after   cc  int3\n",
			"At each hit the thread runs the instruction from its slot at ",
			"jmpq *(%rip)",
			"(data: 0x401001)",
			"Module prog: 1 site, 0 jump to trampolines, 1 keeps a breakpoint.",
		)
	})
	t.Run("limit", func(t *testing.T) {
		// Two functions, the limit one: the second is summarised.
		plan := leafFuncs(datafile.FuncCounting)
		plan.Funcs[0].High = leafAt + 7
		plan.Funcs = append(plan.Funcs, datafile.Func{Name: "g", Entry: leafAt + 11, Low: leafAt + 11, High: leafAt + 12})
		tr, _, out := narrated(plan, leafCode, 1)
		tr.cfg.Breakpoints = true
		if err := tr.plantModule(0, 0, leafInstance(), maps); err != nil {
			t.Fatal(err)
		}
		if s := out.String(); !strings.Contains(s, "function f, entry") || strings.Contains(s, "function g") ||
			!strings.Contains(s, "  ... and 1 more site of prog, not described (the limit is 1; --explain-limit=0 describes every site).") {
			t.Errorf("narration:\n%s\nwant f described, g summarised", s)
		}
	})
}

// TestExplainFirstHits: first hits seen in the counters (the thread
// whose block holds the count, the count so far; lines sharing a site's
// count with it), told once each, up to the limit; those past it counted
// at the end.
func TestExplainFirstHits(t *testing.T) {
	code := append(slices.Clone(leafCode), bytes.Repeat([]byte{0x90}, 256)...)
	tr, _, out := narrated(leafLines(datafile.LineCounting), code, 2)
	shared, err := ptrace.NewShared(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	tr.parts.counters = &counters{env: tr.counterEnv(), shared: shared, layout: layout.Layout{Kind: instr.CountPerThread, ProgAddr: 0x7f0000000000, BlockSize: 64, NBlocks: 3, Records: ringRecords, DepthSlots: depthSlots}, next: 3, blockOf: map[int]int{100: 1, 101: 2}}
	tr.parts.lines = newLineTrampolines(tr)
	tr.choose()
	maps := []procmaps.Mapping{{Start: leafAt, End: leafAt + 0x1000, Perms: "r-xp"}}
	if err := tr.plantModule(0, 0, leafInstance(), maps); err != nil {
		t.Fatal(err)
	}
	x := tr.told[0].(*explainer)
	x.running()
	if now, _, _ := x.waiting(); !x.watching() || !now {
		t.Fatal("the narrator does not read the counters")
	}
	out.Reset()
	if x.scan() {
		t.Errorf("first hits told with every counter 0:\n%s", out)
	}
	k := tr.parts.lines.index.at(0, leafAt)
	binary.LittleEndian.PutUint64(shared.Bytes()[2*64+k*8:], 3) // thread 101's block
	if !x.scan() {
		t.Fatal("no first hit told")
	}
	got := regexp.MustCompile(`\[[0-9.]+ ms\]`).ReplaceAllString(out.String(), "[T]")
	want := "[T] thread 101: line 1 of leaf.c first hit, seen in its counter (count 3 so far)\n" +
		"[T] thread 101: line 2 of leaf.c first hit, seen in its counter (count 3 so far)\n"
	if got != want {
		t.Errorf("first hits:\n%s\nwant\n%s", got, want)
	}
	if x.watching() {
		t.Error("the narrator still reads the counters past its limit")
	}
	out.Reset()
	res := &Result{Exited: true, Counts: &datafile.Counts{Stats: datafile.Stats{Hits: []uint64{3, 3, 3, 0}}}}
	x.ended(res)
	got = regexp.MustCompile(`\[[0-9.]+ ms\]`).ReplaceAllString(out.String(), "[T]")
	for _, want := range []string{
		"[T] the program exited with status 0.\n",
		"PROFILE collected the counts: 3 of 4 lines ran; threads stopped 0 times at PROFILE's breakpoints.\n",
		"... and 1 more first hit, not told (the limit is 2; --explain-limit=0 tells everything).\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("end:\n%s\nwant %q", got, want)
		}
	}
}

// TestExplainBreakpointHit: a breakpoint's first hit is told with its
// thread and the count, once.
func TestExplainBreakpointHit(t *testing.T) {
	tr, _, out := narrated(leafFuncs(datafile.FuncCounting), leafCode, 0)
	th := &thread{tid: 7}
	s := &site{addr: leafAt, meaning: meaning{item: 0, exit: -1}}
	tr.counted.hits[0] = 1
	tr.told.note(hitEvent{th, s})
	tr.counted.hits[0] = 2
	tr.told.note(hitEvent{th, s})
	got := regexp.MustCompile(`\[[0-9.]+ ms\]`).ReplaceAllString(out.String(), "[T]")
	if want := "[T] thread 7: f first hit, at its breakpoint (count 1)\n"; got != want {
		t.Errorf("hits:\n%s\nwant\n%s", got, want)
	}
}

// TestBytesWords: sizes as the narration says them.
func TestBytesWords(t *testing.T) {
	for n, want := range map[uint64]string{1: "1 byte", 96: "96 bytes", 2688: "2688 bytes", 4096: "4 KiB", 7680: "7.5 KiB", 1 << 20: "1 MiB", 34078720: "32.5 MiB"} {
		if got := bytesWords(n); got != want {
			t.Errorf("bytesWords(%d) = %q, want %q", n, got, want)
		}
	}
}

// wantNarration fails the test unless the narration holds each of wants.
func wantNarration(t *testing.T, narration string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(narration, want) {
			t.Errorf("narration:\n%s\nwant %q", narration, want)
		}
	}
}

// TestExplainOwnCodeSampler: a timing run's sampler of PROFILE's own code
// is told as it is: sampling every millisecond where the kernel gave the
// main thread its clock event, and not at all where it refused it.
func TestExplainOwnCodeSampler(t *testing.T) {
	for _, started := range []bool{true, false} {
		tr, _, out := narrated(leafFuncs(datafile.FuncTiming), leafCode, 0)
		s := newOwnCodeSampler(samplerEnv{plan: tr.plan})
		s.started = started
		tr.parts.sampling = s
		tr.told.note(runningEvent{})
		sampling := strings.Contains(out.String(), "PROFILE samples every 1ms of each thread's CPU time")
		refused := strings.Contains(out.String(), "PROFILE does not sample the program: the kernel refused")
		if sampling != started || refused == started {
			t.Errorf("started %v: the narration says sampling %v, refused %v:\n%s", started, sampling, refused, out)
		}
	}
}
