package instr

import (
	"cmp"
	"debug/elf"
	"slices"
	"testing"
)

// benchLibs are the C libraries whose code the benchmarks decode: the
// host's own, and the arm64 cross compiler's (make deps installs both on
// Debian). A benchmark whose library is missing is skipped.
var benchLibs = map[string]string{
	"amd64": "/lib/x86_64-linux-gnu/libc.so.6",
	"arm64": "/usr/aarch64-linux-gnu/lib/libc.so.6",
}

// benchModule is a library's .text and its functions, sorted, each with
// the code from its start to the next function's (its padding).
type benchModule struct {
	arch  Arch
	start uint64
	code  []byte
	funcs [][2]uint64
}

// fn returns the code of function i, with the padding after it, and its
// extent.
func (m *benchModule) fn(i int) (code []byte, lo, hi uint64) {
	lo, hi = m.funcs[i][0], m.funcs[i][1]
	limit := m.start + uint64(len(m.code))
	if i+1 < len(m.funcs) {
		limit = min(limit, m.funcs[i+1][0])
	}
	limit = max(limit, hi)
	return m.code[lo-m.start : limit-m.start], lo, hi
}

// loadBenchModule reads the library of a for a benchmark, or skips it.
func loadBenchModule(b testing.TB, a Arch) *benchModule {
	b.Helper()
	f, err := elf.Open(benchLibs[a.Name()])
	if err != nil {
		b.Skipf("no %s library: %v", a.Name(), err)
	}
	defer f.Close()
	text := f.Section(".text")
	if text == nil {
		b.Skip("no .text")
	}
	code, err := text.Data()
	if err != nil {
		b.Fatal(err)
	}
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	m := &benchModule{arch: a, start: text.Addr, code: code}
	end := text.Addr + text.Size
	for _, s := range append(syms, dyn...) {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 && s.Value >= text.Addr && s.Value+s.Size <= end {
			m.funcs = append(m.funcs, [2]uint64{s.Value, s.Value + s.Size})
		}
	}
	slices.SortFunc(m.funcs, func(x, y [2]uint64) int { return cmp.Compare(x[0], y[0]) })
	m.funcs = slices.CompactFunc(m.funcs, func(x, y [2]uint64) bool { return x[0] == y[0] })
	if len(m.funcs) == 0 {
		b.Skip("no functions")
	}
	return m
}

// benchArches runs f as a sub-benchmark for each architecture, on its
// library.
func benchArches(b *testing.B, f func(b *testing.B, m *benchModule)) {
	for _, a := range []Arch{AMD64, ARM64} {
		b.Run(a.Name(), func(b *testing.B) {
			m := loadBenchModule(b, a)
			b.ResetTimer()
			f(b, m)
		})
	}
}

// BenchmarkMapCode decodes a library as the tracer does before it plants
// (its functions from their starts, the code between linearly).
func BenchmarkMapCode(b *testing.B) {
	benchArches(b, func(b *testing.B, m *benchModule) {
		for b.Loop() {
			MapCode(m.arch, m.code, m.start, m.funcs)
		}
	})
}

// BenchmarkScanCode decodes a library from end to end for its jumps'
// targets and its calls' returns.
func BenchmarkScanCode(b *testing.B) {
	benchArches(b, func(b *testing.B, m *benchModule) {
		for b.Loop() {
			ScanCode(m.arch, m.code, m.start)
		}
	})
}

// BenchmarkDecode decodes every function of a library from its start,
// with the instructions' text.
func BenchmarkDecode(b *testing.B) {
	benchArches(b, func(b *testing.B, m *benchModule) {
		for b.Loop() {
			for i := range m.funcs {
				fn, lo, hi := m.fn(i)
				_, _ = Boundaries(m.arch, fn[:hi-lo], lo)
			}
		}
	})
}

// BenchmarkPlanEntries plans the patch of every function's entry in a
// layout of the library's code, from the highest down, as PROFILE plants
// a module's entries (the room's pages made where asked).
func BenchmarkPlanEntries(b *testing.B) {
	benchArches(b, func(b *testing.B, m *benchModule) {
		const bias = 0x7f1200000000
		build := func(p *Patch, at uint64) (Trampoline, error) { return m.arch.Trampoline(p, at, []byte{0x90}) }
		for b.Loop() {
			l := NewLayout(m.arch, m.start+bias, m.code, func(uint64) bool { return false }, newFakeRoom())
			for i := len(m.funcs) - 1; i >= 0; i-- {
				_, _ = l.Plan(m.funcs[i][0]+bias, build)
			}
		}
	})
}

// BenchmarkPlanExits finds and plans the exits of every function.
func BenchmarkPlanExits(b *testing.B) {
	benchArches(b, func(b *testing.B, m *benchModule) {
		for b.Loop() {
			for i := range m.funcs {
				fn, lo, hi := m.fn(i)
				_, _ = FindExits(m.arch, fn, lo, hi)
				_, _ = m.arch.PlanExits(fn, lo, hi, false)
			}
		}
	})
}

// BenchmarkRing fills a ring of 8,192 records and reads it back, as
// PROFILE's side of the protocol does, a record at a time.
func BenchmarkRing(b *testing.B) {
	const records = 1 << 13
	for _, a := range []Arch{AMD64, ARM64} {
		b.Run(a.Name(), func(b *testing.B) {
			area := make([]byte, RingSize(records))
			RingReset(a, area, records)
			write := ringWriter(a, area, records)
			for b.Loop() {
				for write(1) {
				}
				for {
					_, n := RingUnread(a, area, records)
					if n == 0 {
						break
					}
					RingRead(a, area, records, 1)
				}
			}
		})
	}
}
