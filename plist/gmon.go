package plist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// The gmon.out layout of GNU gprof (binutils gprof/gmon_out.h, read by
// gmon_io.c, hist.c and call_graph.c; docs/design/sampling.md): a header,
// then records, each a one-byte tag. Integers are in the program's byte
// order, addresses the size of its pointers.
const (
	gmonMagic   = "gmon"
	gmonVersion = 1
	gmonTagHist = 0 // GMON_TAG_TIME_HIST
	gmonTagArc  = 1 // GMON_TAG_CG_ARC
	// gmonDimension is the histogram's unit, 15 bytes zero-padded, and
	// gmonAbbrev its abbreviation.
	gmonDimension = "seconds"
	gmonAbbrev    = 's'
	// gmonBinSize is the bytes of code per histogram bin, as glibc's
	// profil; gmonMaxBins bounds the histogram of a large program, whose
	// bins are made coarser (twice as wide at each step) to fit.
	gmonBinSize = 4
	gmonMaxBins = 1 << 20
	// gmonMaxBin is the most a 16-bit bin holds: gprof adds up the
	// histograms of the same range, so larger counts take several, up to
	// what its int counters hold, in at most gmonMaxHist bytes of bins.
	gmonMaxBin  = math.MaxUint16
	gmonMaxHist = 1 << 28
	// gmonMaxCalls bounds an arc's calls (2^32-1 a record): more than
	// any run makes, fewer than would make the file unreasonable.
	gmonMaxCalls = 1 << 44
)

// gmonChunk is the most bins a histogram record has: the histogram is
// cut in records of adjacent ranges (gprof takes histograms of ranges
// that do not overlap, of the same bin size), so that only the part of
// the code around a bin of more than gmonMaxBin samples is repeated. A
// variable for the tests.
var gmonChunk = 1 << 14

// errNotSampling refuses gmon.out for a profile without samples (write
// checks it before any warning).
var errNotSampling = errors.New("gmon.out holds sampled time: only function sampling profiles (prep /FS) can be written as one")

// gmonWriter lays out the fields of gmon.out for one program.
type gmonWriter struct {
	buf   bytes.Buffer
	order binary.AppendByteOrder
	// ptr is the size of an address: 8, or 4 for a 32-bit program.
	ptr int
}

// gmonMachines are the machines whose gmon.out is not little-endian
// with 8-byte addresses, by GOARCH spelling: their byte order and the
// size of their addresses.
var gmonMachines = map[string]struct {
	order binary.AppendByteOrder
	ptr   int
}{
	"mips64":  {binary.BigEndian, 8},
	"ppc64":   {binary.BigEndian, 8},
	"s390x":   {binary.BigEndian, 8},
	"sparc64": {binary.BigEndian, 8},
	"mips":    {binary.BigEndian, 4},
	"ppc":     {binary.BigEndian, 4},
	"386":     {binary.LittleEndian, 4},
	"arm":     {binary.LittleEndian, 4},
	"mipsle":  {binary.LittleEndian, 4},
}

// newGmonWriter returns the writer for a program of arch (GOARCH
// spelling), with the file's header written.
func newGmonWriter(arch string) *gmonWriter {
	g := &gmonWriter{order: binary.LittleEndian, ptr: 8}
	if m, ok := gmonMachines[arch]; ok {
		g.order, g.ptr = m.order, m.ptr
	}
	g.buf.WriteString(gmonMagic)
	g.u32(gmonVersion)
	g.buf.Write(make([]byte, 12)) // spare
	return g
}

func (g *gmonWriter) u8(v uint8) { g.buf.WriteByte(v) }

func (g *gmonWriter) u16(v uint16) { g.buf.Write(g.order.AppendUint16(nil, v)) }

func (g *gmonWriter) u32(v uint32) { g.buf.Write(g.order.AppendUint32(nil, v)) }

func (g *gmonWriter) addr(v uint64) {
	if g.ptr == 4 {
		g.u32(uint32(v))
		return
	}
	g.buf.Write(g.order.AppendUint64(nil, v))
}

// histogram writes the histogram of [low, high) with len(bins) bins, at
// rate samples a second: a record per gmonChunk bins, each repeated as
// many times as its largest bin needs, the bins of the repeated records
// adding up to bins.
func (g *gmonWriter) histogram(low, high uint64, rate uint32, bins []uint64) error {
	size := (high - low) / uint64(len(bins))
	if most := slices.Max(bins); most > math.MaxInt32 {
		return fmt.Errorf("%d samples in %d bytes of code: more than gprof counts", most, size)
	}
	var total uint64
	for start := 0; start < len(bins); start += gmonChunk {
		part := bins[start:min(start+gmonChunk, len(bins))]
		total += gmonPasses(part) * uint64(len(part)) * 2
	}
	if total > gmonMaxHist {
		return fmt.Errorf("the histogram would take %d bytes (at most %d): too many samples in too few bins", total, gmonMaxHist)
	}
	for start := 0; start < len(bins); start += gmonChunk {
		part := bins[start:min(start+gmonChunk, len(bins))]
		lo := low + uint64(start)*size
		for pass := range gmonPasses(part) {
			g.u8(gmonTagHist)
			g.addr(lo)
			g.addr(lo + uint64(len(part))*size)
			g.u32(uint32(len(part)))
			g.u32(rate)
			var dim [15]byte
			copy(dim[:], gmonDimension)
			g.buf.Write(dim[:])
			g.u8(gmonAbbrev)
			done := pass * gmonMaxBin
			for _, n := range part {
				g.u16(uint16(min(n-min(n, done), gmonMaxBin)))
			}
		}
	}
	return nil
}

// gmonPasses is the number of records of the same range that bins take.
func gmonPasses(bins []uint64) uint64 {
	return max(1, (slices.Max(bins)+gmonMaxBin-1)/gmonMaxBin)
}

// arc writes the call arcs from from to self, count calls: as many
// records as a 32-bit count needs (gprof adds up repeated arcs).
func (g *gmonWriter) arc(from, self, count uint64) error {
	if count > gmonMaxCalls {
		return fmt.Errorf("%d calls from %#x to %#x: more than gmon.out takes", count, from, self)
	}
	for count > 0 {
		n := min(count, math.MaxUint32)
		g.u8(gmonTagArc)
		g.addr(from)
		g.addr(self)
		g.u32(uint32(n))
		count -= n
	}
	return nil
}

// gmonExport writes the gmon.out.
type gmonExport struct{ *report }

// writeGmon writes a GNU gprof gmon.out of the program (module 0): a
// histogram of its profiled functions' code at their link-time
// addresses (in records of at most gmonChunk bins), each line's samples
// at the line's start and a function's other samples at its entry,
// sampled at 1e9/Interval per second; and the
// call arcs, with the exact calls: from each function's nearest profiled
// caller with /AT, else (and for calls from outside the program's
// profiled functions) from address 0, which gprof shows as
// <spontaneous> and does not count. The functions of shared libraries
// are left out, with a warning.
func (r gmonExport) writeGmon(w io.Writer) error {
	interval := r.m.Stats.Sampling.Interval
	if interval <= 0 {
		return errors.New("write gmon.out: the profile has no sampling run (no sampling interval)")
	}
	if len(r.plan.Modules) == 0 || len(r.funcs[0]) == 0 {
		return errors.New("write gmon.out: no function of the program is profiled")
	}
	low, high, bin, err := r.gmonRange()
	if err != nil {
		return fmt.Errorf("write gmon.out: %w", err)
	}
	g := newGmonWriter(r.plan.Modules[0].Arch)
	bins := make([]uint64, (high-low)/bin)
	for _, pl := range r.placeSamples() {
		f := &r.plan.Funcs[pl.fn]
		if f.Module != 0 {
			continue
		}
		i := gmonBin(pl.addr, low, bin, f.Low, f.High)
		if i < uint64(len(bins)) {
			bins[i] += pl.n
		}
	}
	rate := uint32(max(1, min(math.Round(1e9/float64(interval)), math.MaxUint32)))
	if err := g.histogram(low, high, rate, bins); err != nil {
		return fmt.Errorf("write gmon.out: %w", err)
	}
	if err := r.gmonArcs(g); err != nil {
		return fmt.Errorf("write gmon.out: %w", err)
	}
	r.gmonWarnings()
	_, err = w.Write(g.buf.Bytes())
	return err
}

// gmonRange returns the histogram's range [low, high) and its bin size:
// the program's profiled functions' code, from the lowest Low to the
// highest High (a function of unknown range counts as its entry), its
// ends rounded out to whole bins of gmonBinSize bytes, or coarser bins
// when more than gmonMaxBins would be needed.
func (r gmonExport) gmonRange() (low, high, bin uint64, err error) {
	low, high = math.MaxUint64, 0
	for _, i := range r.funcs[0] {
		f := &r.plan.Funcs[i]
		lo, hi := f.Entry, f.Entry+1
		if f.Low < f.High {
			lo, hi = min(f.Low, f.Entry), max(f.High, f.Entry+1)
		}
		if hi <= lo {
			return 0, 0, 0, fmt.Errorf("function %s: entry %#x at the end of the address space", f.Name, f.Entry)
		}
		low, high = min(low, lo), max(high, hi)
	}
	if high <= low {
		return 0, 0, 0, fmt.Errorf("code range [%#x, %#x) does not fit a histogram", low, high)
	}
	for bin = gmonBinSize; bin != 0; bin <<= 1 {
		lo := low &^ (bin - 1)
		n := (high - lo) / bin
		if (high-lo)%bin != 0 {
			n++
		}
		if n > gmonMaxBins {
			continue
		}
		if end := lo + n*bin; end > lo {
			return lo, end, bin, nil
		}
		break // the range's end rounded up is past the address space
	}
	return 0, 0, 0, fmt.Errorf("code range [%#x, %#x) does not fit a histogram", low, high)
}

// gmonBin returns the bin of the histogram from low with bins of size
// bin that takes a sample at addr in the function of code [fLow, fHigh):
// addr's bin, or the nearest bin wholly inside the function when addr's
// spills over its ends. gprof spreads a bin over the symbols it overlaps,
// and starts a symbol at its address halved (its 2-byte UNIT), so the
// function's ends are taken down to even addresses.
func gmonBin(addr, low, bin, fLow, fHigh uint64) uint64 {
	i := (addr - low) / bin
	lo, hi := fLow&^1, fHigh&^1
	if fLow >= fHigh || lo < low || hi <= lo {
		return i
	}
	first := (lo - low + bin - 1) / bin // the first bin starting at or above lo
	last := (hi - low) / bin            // one past the last bin ending at or below hi
	if first >= last {
		return i // no bin fits inside: gprof shares it with the neighbours
	}
	return min(max(i, first), last-1)
}

// gmonArcs writes the call arcs of the program's functions: with /AT
// from each stack's nearest caller, summed per caller, the calls from the
// stack base or from a shared library from address 0; the calls no
// stack records, and every call without /AT, from address 0 too.
func (r gmonExport) gmonArcs(g *gmonWriter) error {
	type key struct{ from, self uint64 }
	var order []key
	sums := map[key]uint64{}
	add := func(from, self, n uint64) {
		if n == 0 {
			return
		}
		k := key{from, self}
		if _, ok := sums[k]; !ok {
			order = append(order, k)
		}
		sums[k] += n
	}
	inProgram := func(i int) bool { return i >= 0 && i < len(r.plan.Funcs) && r.plan.Funcs[i].Module == 0 }
	stacked := make([]uint64, len(r.plan.Funcs))
	if r.plan.Attribution {
		for _, s := range r.m.Stats.Stacks {
			if !inProgram(s.Func) {
				continue
			}
			var from uint64
			if n := len(s.Callers); n > 0 && inProgram(s.Callers[n-1]) {
				from = r.plan.Funcs[s.Callers[n-1]].Entry
			}
			add(from, r.plan.Funcs[s.Func].Entry, s.Hits)
			stacked[s.Func] += s.Hits
		}
	}
	for _, i := range r.funcs[0] {
		if h := r.hits(i); h > stacked[i] {
			add(0, r.plan.Funcs[i].Entry, h-stacked[i])
		}
	}
	for _, k := range order {
		if err := g.arc(k.from, k.self, sums[k]); err != nil {
			return err
		}
	}
	return nil
}

// gmonWarnings warns of what gmon.out leaves out: the functions of shared
// libraries that have samples or calls, and without /AT every caller.
func (r gmonExport) gmonWarnings() {
	var libs []string
	for mod := 1; mod < len(r.plan.Modules); mod++ {
		for _, i := range r.funcs[mod] {
			if r.samples(i) > 0 || r.hits(i) > 0 {
				libs = append(libs, r.plan.Modules[mod].Name)
				break
			}
		}
	}
	if len(libs) > 0 {
		r.warn(prf.GmonLibraries(strings.Join(libs, ", ")))
	}
	if r.plan.Attribution {
		return
	}
	for _, i := range r.funcs[0] {
		if r.hits(i) > 0 {
			r.warn(prf.GmonNoCallers())
			return
		}
	}
}
