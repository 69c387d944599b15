package instr

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// fakeRoom is a process's memory for trampolines: pages made where
// asked, but where busy says another mapping is.
type fakeRoom struct {
	pageSize uint64
	pages    map[uint64][]byte
	taken    map[uint64][][2]uint64 // by page
	busy     [][2]uint64
	area     [2]uint64
	made     int
}

func newFakeRoom(busy ...[2]uint64) *fakeRoom {
	return &fakeRoom{pageSize: 4096, pages: map[uint64][]byte{}, taken: map[uint64][][2]uint64{}, busy: busy}
}

// withArea gives r an area of size bytes at addr, made already, which
// Find looks at first (as PROFILE's area next to a module).
func (r *fakeRoom) withArea(addr, size uint64) *fakeRoom {
	for pg := addr; pg < addr+size; pg += r.pageSize {
		r.pages[pg] = make([]byte, r.pageSize)
	}
	r.area = [2]uint64{addr, addr + size}
	return r
}

func (r *fakeRoom) Find(lo, hi uint64, n int, step, phase uint64, grow bool) (uint64, bool) {
	if a := r.area; a[0] < a[1] && lo <= a[0] && hi >= a[1] {
		for pg := a[0]; pg < a[1]; pg += r.pageSize {
			if at, ok := r.freeIn(pg, pg, a[1], n, step, phase); ok {
				return at, true
			}
		}
	}
	// Pages made first, lowest first.
	var made []uint64
	for pg := range r.pages {
		if pg+r.pageSize > lo && pg < hi {
			made = append(made, pg)
		}
	}
	slices.Sort(made)
	for _, pg := range made {
		if at, ok := r.freeIn(pg, max(lo, pg), hi, n, step, phase); ok {
			return at, true
		}
	}
	if !grow {
		return 0, false
	}
	// Four pages tried, each the next an address of the alignment is in
	// (as PROFILE's room: no try spent on a page the alignment passes
	// over).
	pg := lo &^ (r.pageSize - 1)
	for try := 0; try < 4; try, pg = try+1, pg+r.pageSize {
		at := align(max(lo, pg), step, phase)
		if at >= hi {
			break
		}
		pg = at &^ (r.pageSize - 1)
		if _, ok := r.pages[pg]; ok || r.isBusy(pg) || at+uint64(n) > pg+r.pageSize {
			continue
		}
		r.pages[pg] = make([]byte, r.pageSize)
		r.made++
		return at, true
	}
	return 0, false
}

func (r *fakeRoom) freeIn(pg, lo, hi uint64, n int, step, phase uint64) (uint64, bool) {
	at := align(lo, step, phase)
	for _, t := range r.taken[pg] {
		if at+uint64(n) <= t[0] {
			break
		}
		if t[1] > at {
			at = align(t[1], step, phase)
		}
	}
	return at, at < hi && at+uint64(n) <= pg+r.pageSize
}

func (r *fakeRoom) isBusy(pg uint64) bool {
	for _, b := range r.busy {
		if pg < b[1] && pg+r.pageSize > b[0] {
			return true
		}
	}
	return false
}

func (r *fakeRoom) Take(addr uint64, n int) {
	pg := addr &^ (r.pageSize - 1)
	t := append(r.taken[pg], [2]uint64{addr, addr + uint64(n)})
	slices.SortFunc(t, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	r.taken[pg] = t
}

func (r *fakeRoom) Release(addr uint64, n int) {
	pg := addr &^ (r.pageSize - 1)
	r.taken[pg] = slices.DeleteFunc(r.taken[pg], func(t [2]uint64) bool { return t[0] == addr })
}

func (r *fakeRoom) write(addr uint64, b []byte) {
	for i, v := range b {
		a := addr + uint64(i)
		pg := a &^ (r.pageSize - 1)
		if r.pages[pg] == nil {
			panic(fmt.Sprintf("a write at %#x (%#x+%d) outside the room's pages", a, addr, len(b)))
		}
		r.pages[pg][a-pg] = v
	}
}

func (r *fakeRoom) read(addr uint64, n int) ([]byte, bool) {
	out := make([]byte, 0, n)
	for a := addr; a < addr+uint64(n); a++ {
		pg := a &^ (r.pageSize - 1)
		p, ok := r.pages[pg]
		if !ok {
			break
		}
		out = append(out, p[a-pg])
	}
	return out, len(out) > 0
}

// layoutOf plans a patch, with a plain trampoline, at each of sites
// (sorted) in code at start, from the highest down, in room; the
// trampolines are written into the room's pages. It returns the code as
// it will be, and how many sites were planned, moved out their next
// instruction, or failed.
func layoutOf(t *testing.T, a Arch, code []byte, start uint64, sites []uint64, room *fakeRoom, known func(uint64) bool) (final []byte, planned, evicted, failed int) {
	t.Helper()
	l := NewLayout(a, start, code, known, room)
	for i := len(sites) - 1; i >= 0; i-- {
		build := func(p *Patch, at uint64) (Trampoline, error) {
			// (A count's worth of bytes before, as a line's trampoline.)
			return a.Trampoline(p, at, bytes.Repeat(a.Breakpoint(), 9))
		}
		pl, err := l.Plan(sites[i], build)
		if err != nil {
			if failed < 5 {
				t.Logf("%#x: %v", sites[i], err)
			}
			failed++
			l.Unstable(sites[i], len(a.Breakpoint()))
			continue
		}
		planned++
		evicted += len(pl.Evicted)
		for _, x := range append([]*Planned{pl}, pl.Evicted...) {
			room.write(x.At, x.Tramp.Code)
			if x.HopCode != nil {
				room.write(x.Hop, x.HopCode)
			}
		}
	}
	return l.Final(), planned, evicted, failed
}

// TestLayoutLibc: every instruction of the host's C library (x86-64) a
// site, and every third: each patch writes over its instruction alone,
// punned over the next ones or moving them out, and the code as it will
// be keeps every other instruction as it was or a jump that carries it
// out (VerifyPatched); almost every site is planned.
func TestLayoutLibc(t *testing.T) {
	m := loadBenchModule(t, AMD64)
	const bias = 0x7f1200000000 // (loaded as a library is)
	start := m.start + bias
	funcs := make([][2]uint64, 0, len(m.funcs))
	for _, f := range m.funcs {
		funcs = append(funcs, [2]uint64{f[0] + bias, f[1] + bias})
	}
	funcs = funcs[:min(len(funcs), 400)]
	var starts []uint64
	var every []uint64
	decode := AMD64.bareDecoder()
	for _, f := range funcs {
		starts = append(starts, f[0])
		for pc := f[0]; pc < f[1]; {
			in, err := decode(m.code[pc-start:f[1]-start], pc)
			if err != nil || in.Len <= 0 {
				break
			}
			every = append(every, pc)
			pc += uint64(in.Len)
		}
	}
	for _, stride := range []int{1, 3} {
		var sites []uint64
		for i := 0; i < len(every); i += stride {
			sites = append(sites, every[i])
		}
		named := slices.Concat(starts, sites, ScanCode(AMD64, m.code, start).Jumps)
		slices.Sort(named)
		known := func(a uint64) bool { _, ok := slices.BinarySearch(named, a); return ok }
		end := start + uint64(len(m.code))
		room := newFakeRoom([2]uint64{start, end}).withArea((end+1<<20)&^4095, 4<<20)
		final, planned, evicted, failed := layoutOf(t, AMD64, m.code, start, sites, room, known)
		errs := VerifyPatched(AMD64, Patched{Start: start, Orig: m.code, Final: final, Funcs: funcs, Code: known, Read: room.read})
		for _, err := range errs[:min(len(errs), 10)] {
			t.Errorf("every %d: %v", stride, err)
		}
		t.Logf("every %d instructions: %d sites planned, %d failed, %d moved out; %d pages", stride, planned, failed, evicted, room.made)
		// (Every instruction a site leaves nothing to move out: a jump
		// of one byte then lands where the next one's bytes say.)
		if limit := []int{0, 10, 0, 1}[stride]; failed*100 > limit*len(sites) {
			t.Errorf("every %d: %d of %d sites not planned, want at most %d%%", stride, failed, len(sites), limit)
		}
	}
}

// TestLayoutPun: push %rbp (1 byte) before mov %rsp,%rbp and sub: its jump
// is punned over the next instructions' bytes, left as they are, and its
// trampoline lies exactly where that jump lands; with that address taken,
// the next instruction is moved out and carried by the first trampoline.
func TestLayoutPun(t *testing.T) {
	code := hexs(t, "55 4889e5 4883ec10 897dfc 8b45fc c9 c3")
	const start = 0x555555556000
	rel := int64(int32(binary.LittleEndian.Uint32(code[1:5])))
	exact := uint64(int64(start+5) + rel)
	known := func(uint64) bool { return false }

	room := newFakeRoom()
	final, planned, evicted, _ := layoutOf(t, AMD64, code, start, []uint64{start}, room, known)
	if planned != 1 || evicted != 0 || final[0] != 0xe9 || !bytes.Equal(final[1:], code[1:]) {
		t.Fatalf("planned %d, moved out %d, code % x: want one punned jump, the bytes after it as they were", planned, evicted, final)
	}
	if _, ok := room.read(exact, 1); !ok {
		t.Errorf("no trampoline at %#x, where the jump lands", exact)
	}

	room = newFakeRoom([2]uint64{exact &^ 4095, exact&^4095 + 4096})
	final, planned, evicted, _ = layoutOf(t, AMD64, code, start, []uint64{start}, room, known)
	if planned != 1 || evicted == 0 || final[0] != 0xe9 || !bytes.Equal(final[len(code)-5:], code[len(code)-5:]) {
		t.Fatalf("planned %d, moved out %d, code % x: want the next instruction moved out", planned, evicted, final)
	}
	if errs := VerifyPatched(AMD64, Patched{Start: start, Orig: code, Final: final, Funcs: [][2]uint64{{start, start + uint64(len(code))}}, Code: known, Read: room.read}); len(errs) > 0 {
		t.Error(errors.Join(errs...))
	}
}

// TestLayoutCarriesTail: a punned jump's trampoline carries out the
// instructions the jump's last bytes lie over too, and returns after
// them, where the jump left an instruction whole: returning into those
// bytes, the CPU would decode them as an instruction right after decoding
// them as the jump's (some 25 cycles a pass, docs/performance.md). The
// bytes stay as they were, for whatever jumps there. Where they are the
// start of the next site's jump, the trampoline goes on to that one's
// trampoline; a call is not carried (its return would come back into
// the bytes).
func TestLayoutCarriesTail(t *testing.T) {
	const start = 0x555555556000
	build := func(p *Patch, at uint64) (Trampoline, error) { return AMD64.Trampoline(p, at, nil) }
	backTo := func(pl *Planned) uint64 {
		t.Helper()
		code := pl.Tramp.Code
		j, err := AMD64.Decode(code[len(code)-5:], pl.At+uint64(len(code)-5))
		if err != nil || j.Kind != Jump {
			t.Fatalf("the trampoline % x does not end with a jump", code)
		}
		return j.Target
	}
	known := func(uint64) bool { return false }
	for _, c := range []struct {
		name    string
		code    string
		sites   []uint64 // offsets, planned from the last
		carried int      // instructions the first site's trampoline runs
		back    uint64   // where it goes on to: an offset, or ^0 for the next site's trampoline
	}{
		// push %rbp; mov %rsp,%rbp; sub $0x10,%rsp: the jump lies over
		// the mov and the sub's first byte.
		{"a prologue", "55 4889e5 4883ec10 897dfc c9 c3", []uint64{0}, 3, 8},
		// mov %edi,%eax; add $1,%edx: the loop of bench_calls' step.
		{"a loop's line", "89f8 83c201 89c1 c1e90f c3", []uint64{0}, 2, 5},
		// push %rbp; call: the call is not carried.
		{"a call", "55 e800000000 c9 c3", []uint64{0}, 1, 1},
		// mov %edi,%eax; sub $0x10,%rsp, both sites: the first jump ends
		// with the second's first bytes.
		{"the next site's jump", "89f8 4883ec10 897dfc c9 c3", []uint64{0, 2}, 1, ^uint64(0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			code := hexs(t, c.code)
			l := NewLayout(AMD64, start, code, known, newFakeRoom())
			var pl, next *Planned
			for i := len(c.sites) - 1; i >= 0; i-- {
				var err error
				next = pl
				if pl, err = l.Plan(start+c.sites[i], build); err != nil {
					t.Fatal(err)
				}
			}
			if pl.Patch.Punned == nil || pl.Patch.Written() != len(code[:c.sites[0]+1]) && pl.Patch.Written() >= 5 {
				t.Fatalf("patch %+v: want a punned jump", pl.Patch)
			}
			if got := len(pl.Tramp.PCs); got != c.carried {
				t.Errorf("the trampoline carries out %d instructions, want %d", got, c.carried)
			}
			want := start + c.back
			if c.back == ^uint64(0) {
				want = next.At
			}
			if got := backTo(pl); got != want {
				t.Errorf("the trampoline goes on to %#x, want %#x", got, want)
			}
			final := l.Final()
			w := pl.Patch.Written()
			if !bytes.Equal(final[w:], code[w:]) && next == nil {
				t.Errorf("code % x: want the bytes after the site's instruction as they were", final)
			}
		})
	}
}

// TestLayoutCarriesLeaf: with Leaves, the trampoline of a function that
// runs straight from its entry to its return carries it out whole, the
// return included, punned jump or whole; the jump still writes over the
// entry's instruction alone and the rest keeps its bytes. A branch, a
// call, a system call, xbegin, more than maxLeaf instructions, a byte
// another patch wrote, or Leaves unset: the trampoline goes back as
// before.
func TestLayoutCarriesLeaf(t *testing.T) {
	const start = 0x555555556000
	build := func(p *Patch, at uint64) (Trampoline, error) { return AMD64.Trampoline(p, at, nil) }
	known := func(uint64) bool { return false }
	long := "89f8" + strings.Repeat(" 83c001", maxLeaf+1) + " c3"
	for _, c := range []struct {
		name    string
		code    string
		leaves  bool
		carried int // instructions the trampoline runs
		ret     bool
	}{
		// movslq %edi,%rdi; lea 0(%rip),%rax; movb $1,(%rax,%rdi); ret:
		// bench_mixed's mark.
		{"a leaf", "4863ff 488d0500000000 c6043801 c3", true, 4, true},
		{"not asked", "4863ff 488d0500000000 c6043801 c3", false, 2, false},
		// mov $1,%eax (a whole jump); ret.
		{"a whole jump", "b801000000 c3", true, 2, true},
		// mov %edi,%eax; add $1,%eax; jmp *%rax: a tail call.
		{"a tail call", "89f8 83c001 ffe0", true, 3, true},
		// mov %edi,%eax; test %eax,%eax; je; ret: a branch.
		{"a branch", "89f8 85c0 7401 c3 c3", true, 3, false}, // (those the jump lies over)
		// mov %edi,%eax; add $1,%eax; call; ret.
		{"a call", "89f8 83c001 e800000000 c3", true, 2, false},
		{"too long", long, true, 2, false},
		// mov $39,%eax; syscall; ret: Go's runtime.getpid, whose system
		// call a signal would step a thread through in its trampoline.
		{"a system call", "b827000000 0f05 c3", true, 1, false},
		// mov $1,%eax; xbegin (its fallback relative); ret.
		{"xbegin", "b801000000 c7f801000000 c3 c3", true, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			code := hexs(t, c.code)
			l := NewLayout(AMD64, start, code, known, newFakeRoom())
			l.Leaves = c.leaves
			pl, err := l.Plan(start, build)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(pl.Tramp.PCs); got != c.carried {
				t.Errorf("the trampoline carries out %d instructions, want %d", got, c.carried)
			}
			last := pl.Patch.Insts[len(pl.Patch.Insts)-1]
			if ret := last.Kind == Ret || last.Kind == Jump; ret != c.ret {
				t.Errorf("the trampoline's last instruction carried is %v, want a way out %v", last.Kind, c.ret)
			}
			final := l.Final()
			first := pl.Patch.Insts[0].Len
			if w := pl.Patch.Written(); w != first || !bytes.Equal(final[5:], code[5:]) {
				t.Errorf("the jump writes %d bytes (want %d, the entry's instruction), code % x", w, first, final)
			}
		})
	}
	// A byte of the leaf another patch wrote: not carried.
	code := hexs(t, "4863ff 488d0500000000 c6043801 c3")
	l := NewLayout(AMD64, start, code, known, newFakeRoom())
	l.Leaves = true
	if _, err := l.Plan(start+10, build); err != nil {
		t.Fatal(err)
	}
	pl, err := l.Plan(start, build)
	if err != nil {
		t.Fatal(err)
	}
	if last := pl.Patch.Insts[len(pl.Patch.Insts)-1]; last.Kind == Ret {
		t.Errorf("the leaf carried over another patch's bytes: %+v", pl.Patch.Insts)
	}
}

// TestLayoutData: a site on a return whose next bytes may be data (no
// line or symbol names them) takes a punned jump over them, left as they
// are, or nothing: they are never moved out, even where no window has
// room.
func TestLayoutData(t *testing.T) {
	code := hexs(t, "c3 4883ec10 90909090")
	const start = 0x555555556000
	rel := int64(int32(binary.LittleEndian.Uint32(code[1:5])))
	exact := uint64(int64(start+5) + rel)
	room := newFakeRoom([2]uint64{exact &^ 4095, exact&^4095 + 4096})
	final, planned, evicted, _ := layoutOf(t, AMD64, code, start, []uint64{start}, room, func(uint64) bool { return false })
	if evicted != 0 || !bytes.Equal(final[1:], code[1:]) {
		t.Errorf("planned %d, moved out %d, code % x: want the bytes after the return as they were", planned, evicted, final)
	}
	// Known as code, the next instruction may move out.
	final, planned, evicted, _ = layoutOf(t, AMD64, code, start, []uint64{start}, newFakeRoom([2]uint64{exact &^ 4095, exact&^4095 + 4096}), func(a uint64) bool { return a == start+1 })
	if planned != 1 || evicted != 1 {
		t.Errorf("planned %d, moved out %d, code % x: want the next instruction, known as code, moved out", planned, evicted, final)
	}
}

// align returns the lowest address at or above at congruent to phase
// modulo step.
func align(at, step, phase uint64) uint64 {
	if step <= 1 {
		return at
	}
	return at + (phase-at%step+step)%step
}

// TestLayoutLeans: a jump of one byte (ret) ends with the bytes after it:
// an instruction left as it is, then the first byte of the next site's
// jump, planned before. The first leans on the second (it must stay
// while the first does), though an instruction lies between them.
func TestLayoutLeans(t *testing.T) {
	// push %rbx; mov %rsp,%rbp (3 bytes); add $1,%rax (4): sites at 0
	// and 4.
	code := hexs(t, "53 4889e5 4883c001 4883c001 c3")
	const start = 0x555555556000
	l := NewLayout(AMD64, start, code, func(uint64) bool { return true }, newFakeRoom())
	build := func(p *Patch, at uint64) (Trampoline, error) { return AMD64.Trampoline(p, at, nil) }
	second, err := l.Plan(start+4, build)
	if err != nil {
		t.Fatal(err)
	}
	first, err := l.Plan(start, build)
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Leans) != 0 || !slices.Equal(first.Leans, []uint64{start + 4}) {
		t.Errorf("leans: first %#x, second %#x; want the first on the second only", first.Leans, second.Leans)
	}
}

// TestVerifyFindsWindows: VerifyPatched finds what a patch of several
// instructions (a window, as line sites had before issue 31) breaks: the
// second instruction's bytes changed into no jump, where a jump to it
// would land in the middle of the first's.
func TestVerifyFindsWindows(t *testing.T) {
	code := hexs(t, "55 4889e5 897dfc 8b45fc 5d c3")
	const start = 0x555555556000
	p, err := AMD64.PlanPatch(code, start, start)
	if err != nil || len(p.Insts) < 2 {
		t.Fatalf("PlanPatch: %d instructions, %v; want a window", len(p.Insts), err)
	}
	room := newFakeRoom().withArea(0x555560000000, 4096)
	tr, _ := AMD64.Trampoline(&p, 0x555560000000, nil)
	room.write(0x555560000000, tr.Code)
	jump, _ := AMD64.PatchJump(&p, 0x555560000000)
	final := slices.Clone(code)
	copy(final, jump)
	errs := VerifyPatched(AMD64, Patched{Start: start, Orig: code, Final: final, Funcs: [][2]uint64{{start, start + uint64(len(code))}},
		Code: func(uint64) bool { return true }, Read: room.read})
	if len(errs) == 0 || !strings.Contains(errs[0].Error(), "which is no jump") {
		t.Errorf("errors %v; want the second instruction changed into no jump", errs)
	}
}

// TestVerifyLeaf: VerifyPatched takes a leaf's trampoline, which carries
// the function to its return, and refuses it where one of the carried
// instructions holds a breakpoint now, whose stop the copy would skip,
// or where a copy is not its instruction's.
func TestVerifyLeaf(t *testing.T) {
	code := hexs(t, "4863ff 488d0500000000 c6043801 c3")
	const start = 0x555555556000
	room := newFakeRoom().withArea(0x555560000000, 1<<16)
	l := NewLayout(AMD64, start, code, func(uint64) bool { return true }, room)
	l.Leaves = true
	build := func(p *Patch, at uint64) (Trampoline, error) { return AMD64.Trampoline(p, at, nil) }
	pl, err := l.Plan(start, build)
	if err != nil || pl.Patch.Insts[len(pl.Patch.Insts)-1].Kind != Ret {
		t.Fatalf("planned %+v, %v: want the leaf carried", pl, err)
	}
	room.write(pl.At, pl.Tramp.Code)
	verify := func(final []byte) []error {
		return VerifyPatched(AMD64, Patched{Start: start, Orig: code, Final: final, Funcs: [][2]uint64{{start, start + uint64(len(code))}},
			Code: func(uint64) bool { return true }, Read: room.read})
	}
	if errs := verify(l.Final()); len(errs) != 0 {
		t.Errorf("the leaf carried: %v", errs)
	}
	final := l.Final()
	final[10] = 0xcc // movb's first byte: a breakpoint
	if errs := verify(final); len(errs) == 0 || !strings.Contains(errs[0].Error(), "does not go on after it") {
		t.Errorf("a breakpoint among the carried instructions: %v; want the entry's move refused", errs)
	}
	tr := slices.Clone(pl.Tramp.Code)
	tr[len(tr)-6] ^= 0x01 // the ret's copy, before the jump back never taken: a ret imm16's opcode no more
	room.write(pl.At, tr)
	if errs := verify(l.Final()); len(errs) == 0 {
		t.Error("a copy that is not its instruction's: no error")
	}
}

// TestLayoutForTheSiteBefore: a Go program loaded low, its code
// "test %rbx,%rbx; je" with a site at each (gofmt's position.go:93, hit a
// million times). The je's jump has no room for prefixes, and the test's
// punned jump ends with the je jump's first two bytes: the opcode, then
// the low byte of its displacement, the top byte of the test's. The je's
// trampoline goes where that byte is below 0x80, so that the test's
// window is above it, with room; before, both were planned but the test
// kept a breakpoint. Every byte of the code around them is busy, as a
// program's mappings are.
func TestLayoutForTheSiteBefore(t *testing.T) {
	code := hexs(t, "4885db 0f84b6000000 488b5a20 c3")
	const start = 0x512f46
	l := NewLayout(AMD64, start, code, func(uint64) bool { return true }, newFakeRoom([2]uint64{0x400000, 0x800000}))
	l.Sites([]uint64{start, start + 3})
	build := func(p *Patch, at uint64) (Trampoline, error) { return AMD64.Trampoline(p, at, nil) }
	je, err := l.Plan(start+3, build)
	if err != nil {
		t.Fatal(err)
	}
	test, err := l.Plan(start, build)
	if err != nil {
		t.Fatalf("the test's site: %v (the je's jump % x)", err, je.Jump)
	}
	if je.Jump[1] >= 0x80 || test.At <= start {
		t.Errorf("je's jump % x, the test's trampoline at %#x: want a byte below 0x80 and a window above", je.Jump, test.At)
	}
	if !slices.Equal(test.Leans, []uint64{start + 3}) {
		t.Errorf("the test's jump leans on %#x, want the je's", test.Leans)
	}
}

// TestLayoutGoexit: Go's runtime.goexit is "nop; call goexit1", and every
// goroutine's first frame returns to goexit+1, the call, an address the
// runtime computes (newproc: goexit's address plus PCQuantum) and no
// decoding finds. A line probe at goexit must leave the call's bytes as
// they are. (When a patch replaced both instructions with one jump, every
// goroutine that returned ran the jump's displacement and faulted, and
// the runtime's traceback "did not unwind completely": gostacks crashed.)
func TestLayoutGoexit(t *testing.T) {
	code := hexs(t, "90 e83a230000 90 cccccccccccccccccc")
	const start = 0x47f600
	l := NewLayout(AMD64, start, code, func(uint64) bool { return true }, newFakeRoom([2]uint64{0x400000, 0x560000}))
	l.Sites([]uint64{start})
	pl, err := l.Plan(start, func(p *Patch, at uint64) (Trampoline, error) { return AMD64.Trampoline(p, at, nil) })
	if err != nil {
		t.Fatal(err)
	}
	if final := l.Final(); !bytes.Equal(final[1:6], code[1:6]) || final[0] != 0xe9 {
		t.Errorf("goexit becomes % x (jump % x): the call at goexit+1 must stay % x", final[:6], pl.Jump, code[1:6])
	}
}

// TestLayoutForTheInstructionBefore: Go's "test %dl,%dl; je; mov $1,%eax"
// (HasPrefix inlined into go/printer) in a program loaded low, with sites
// at the test and the mov. The test's jump would end with the mov's
// opcode alone, and no prefix fits the mov's jump; the je between may
// keep the test's count, or the test take a prefixed jump ending with
// the je and the mov jump's opcode and first byte. Either way the mov's
// jump is placed for the je, the instruction just before it: the test
// is planned, and no window of the two is below address 0.
func TestLayoutForTheInstructionBefore(t *testing.T) {
	code := hexs(t, "84d2 740b b801000000 4883c420 5d c3 cccccccc")
	const start = 0x507560
	l := NewLayout(AMD64, start, code, func(uint64) bool { return true }, newFakeRoom([2]uint64{0x400000, 0x600000}))
	l.Sites([]uint64{start, start + 4})
	build := func(p *Patch, at uint64) (Trampoline, error) { return AMD64.Trampoline(p, at, nil) }
	mov, err := l.Plan(start+4, build)
	if err != nil {
		t.Fatal(err)
	}
	if mov.Jump[2] >= 0x80 {
		t.Errorf("the mov's jump % x: its displacement's second byte, the top of a jump at the je, 0x80 or more", mov.Jump)
	}
	if test, err := l.Plan(start, build); err != nil {
		t.Errorf("the test's site: %v (the mov's jump % x)", err, mov.Jump)
	} else if test.At < start {
		t.Errorf("the test's trampoline at %#x, below it", test.At)
	}
}
