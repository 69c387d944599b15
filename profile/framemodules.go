package profile

// The call frame information of the program's code, for the unwinding of
// function sampling's stacks (sampling_stacks.go).

import (
	"cmp"
	"slices"
	"strings"

	"github.com/sourceprofiler/sprof/profile/procmaps"
	"github.com/sourceprofiler/sprof/profile/unwind"
)

// frameModules finds the call frame information of the code at a program
// counter: that of every file the program maps executable, loaded once
// (unwind.LoadMapping), at the first sample whose stack passes through
// it. The memory map is read again when a program counter falls in no
// mapping it knows (a library loaded since), at most once between two
// readings of the rings (fresh). It is used by one goroutine at a time.
type frameModules struct {
	read  func() ([]procmaps.Mapping, error)
	arch  unwind.Arch
	spans []frameSpan // sorted by lo
	// loaded keeps the modules across readings of the map, by file and
	// where it is mapped; a nil module is one that could not be loaded.
	loaded map[frameKey]*unwind.Module
	fresh  bool
	// closeMap closes what read reads (nil: nothing).
	closeMap func() error
	// loads counts the files loaded and failed those that could not be
	// (no call frame information, gone), for --explain and the tests.
	loads, failed int
}

// frameSpan is an executable mapping of a file: its code [lo, hi) holds
// the file's bytes from off on.
type frameSpan struct {
	lo, hi, off uint64
	key         frameKey
}

// frameKey names an instance of a file in the process: its path and the
// address its file offset 0 would be at (its mappings all give the same
// bias).
type frameKey struct {
	path string
	base uint64
}

// newFrameModules returns the call frame information of a process of
// architecture arch (its GOARCH name) whose memory map read reads.
func newFrameModules(read func() ([]procmaps.Mapping, error), arch string) *frameModules {
	a, _ := unwind.ParseArch(arch) // (an architecture the unwinder does not know unwinds nothing: StopBadRegs)
	return &frameModules{read: read, arch: a, loaded: map[frameKey]*unwind.Module{}}
}

// find returns the module whose code holds pc, or nil: the unwinder's
// lookup (unwind.Unwind).
func (f *frameModules) find(pc uint64) *unwind.Module {
	s, ok := f.span(pc)
	if !ok && !f.fresh {
		f.reread()
		s, ok = f.span(pc)
	}
	if !ok {
		return nil
	}
	m, seen := f.loaded[s.key]
	if !seen {
		var err error
		m, err = unwind.LoadMapping(s.key.path, s.lo, s.off, f.arch)
		f.loads++
		if err != nil {
			m = nil
			f.failed++
		}
		f.loaded[s.key] = m
	}
	return m
}

// span returns the mapping holding pc.
func (f *frameModules) span(pc uint64) (frameSpan, bool) {
	i, found := slices.BinarySearchFunc(f.spans, pc, func(s frameSpan, pc uint64) int { return cmp.Compare(s.lo, pc) })
	if !found {
		i--
	}
	if i < 0 || pc >= f.spans[i].hi {
		return frameSpan{}, false
	}
	return f.spans[i], true
}

// reread reads the memory map again.
func (f *frameModules) reread() {
	f.fresh = true
	if maps, err := f.read(); err == nil {
		f.use(maps)
	}
}

// use takes maps as the memory map: every executable mapping of a file.
// The modules of mappings gone are forgotten.
func (f *frameModules) use(maps []procmaps.Mapping) {
	f.spans = f.spans[:0]
	keep := map[frameKey]bool{}
	for _, m := range maps {
		if !strings.Contains(m.Perms, "x") || !strings.HasPrefix(m.Path, "/") && m.Path != vdsoPath {
			continue // (anonymous code: PROFILE's own, a JIT's)
		}
		k := frameKey{path: m.Path, base: m.Start - m.Offset}
		f.spans = append(f.spans, frameSpan{lo: m.Start, hi: m.End, off: m.Offset, key: k})
		keep[k] = true
	}
	slices.SortFunc(f.spans, func(a, b frameSpan) int { return cmp.Compare(a.lo, b.lo) })
	for k := range f.loaded {
		if !keep[k] {
			delete(f.loaded, k)
		}
	}
}

// close closes the memory map: the program is gone, or no longer
// sampled.
func (f *frameModules) close() {
	if f.closeMap != nil {
		f.closeMap()
		f.closeMap = nil
	}
}

// vdsoPath is the name the memory map gives the vDSO, the code the
// kernel maps into every process (clock_gettime's): no file holds it.
const vdsoPath = "[vdso]"

// loadVDSO loads the call frame information of the vDSO as maps show it,
// from its image in the process's memory (read): its module is found as
// a file's is. Where the kernel built it without (Debian's arm64), or it
// cannot be read, a sample in it ends its stack there.
func (f *frameModules) loadVDSO(maps []procmaps.Mapping, read func(addr uint64, b []byte) error) {
	for _, m := range maps {
		if m.Path != vdsoPath || !strings.Contains(m.Perms, "x") || m.End-m.Start > 1<<20 {
			continue
		}
		image := make([]byte, m.End-m.Start)
		if read(m.Start, image) != nil {
			return
		}
		mod, err := unwind.FromImage(image, m.Start, f.arch)
		f.loads++
		if err != nil {
			f.failed++
			mod = nil
		}
		f.loaded[frameKey{path: vdsoPath, base: m.Start - m.Offset}] = mod
		return
	}
}

// drained marks the end of a reading of the rings: the next program
// counter in no known mapping may read the map again.
func (f *frameModules) drained() { f.fresh = false }
