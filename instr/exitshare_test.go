package instr

import (
	"debug/elf"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// exitShare is what planning the exits of every function of a program
// gives: how many exits, how many a jump or a short jump can patch, and
// why the others cannot.
type exitShare struct {
	funcs, exits, full, short, indirect int
	reasons                             map[string]int
}

func (s exitShare) String() string {
	var rs []string
	for r, n := range s.reasons {
		rs = append(rs, fmt.Sprintf("%s %d", r, n))
	}
	slices.Sort(rs)
	patched := s.full + s.short
	return fmt.Sprintf("%d functions, %d exits: %d patched (%.1f%%: %d with a jump, %d with a short jump); %d not (%s); and %d indirect jumps",
		s.funcs, s.exits, patched, 100*float64(patched)/float64(max(s.exits, 1)), s.full, s.short,
		s.exits-patched, strings.Join(rs, ", "), s.indirect)
}

// planProgramExits plans the exits of every function of the ELF program
// at path, from its symbol table: each function's code runs from its
// symbol to its size, the padding after it to the next function.
func planProgramExits(path string) (exitShare, error) {
	f, err := elf.Open(path)
	if err != nil {
		return exitShare{}, err
	}
	defer f.Close()
	a := AMD64
	if f.Machine == elf.EM_AARCH64 {
		a = ARM64
	}
	text := f.Section(".text")
	syms, err := f.Symbols()
	if err != nil || text == nil {
		return exitShare{}, fmt.Errorf("%s: no symbols or no .text: %v", path, err)
	}
	data, err := text.Data()
	if err != nil {
		return exitShare{}, err
	}
	var funcs []elf.Symbol
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 && s.Value >= text.Addr && s.Value+s.Size <= text.Addr+text.Size {
			funcs = append(funcs, s)
		}
	}
	slices.SortFunc(funcs, func(a, b elf.Symbol) int { return int(int64(a.Value - b.Value)) })
	funcs = slices.CompactFunc(funcs, func(a, b elf.Symbol) bool { return a.Value == b.Value })
	// Where the record code needs registers free only at calls (arm64),
	// a jump out of a function is patched only when it is a tail call:
	// its target starts a function that is no cold part, or some call of
	// the program calls it (PROFILE's scratchAt).
	rc, _ := a.RecordCode(Ring{Records: 2, Table: 1}, 0)
	calls := ScanCode(a, data, text.Addr).Returns
	starts := map[uint64]bool{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && !strings.Contains(s.Name, ".cold") {
			starts[s.Value] = true
		}
	}
	share := exitShare{reasons: map[string]int{}}
	for i, s := range funcs {
		limit := text.Addr + text.Size
		if i+1 < len(funcs) {
			limit = min(limit, funcs[i+1].Value)
		}
		limit = max(limit, s.Value+s.Size)
		fn := data[s.Value-text.Addr : limit-text.Addr]
		share.funcs++
		full, err := a.PlanExits(fn, s.Value, s.Value+s.Size, false)
		if err != nil {
			share.reasons["undecodable function"]++
			continue
		}
		short, _ := a.PlanExits(fn, s.Value, s.Value+s.Size, true)
		for k, plan := range full {
			switch {
			case plan.Exit.Indirect:
				share.indirect++
				continue
			case plan.Err == nil && rc.Scratch && plan.Exit.Kind == Jump && !tailCall(plan.Patch.Insts[len(plan.Patch.Insts)-1].Target, starts, calls):
				share.reasons["a jump to no function's entry"]++
			case plan.Err == nil:
				share.full++
			case k < len(short) && short[k].Err == nil:
				share.short++
			default:
				share.reasons[Reason(plan.Err)]++
			}
			share.exits++
		}
	}
	return share, nil
}

// tailCall reports whether a jump to target is a tail call: target starts
// a function, or some call calls it.
func tailCall(target uint64, starts map[uint64]bool, calls map[uint64][]uint64) bool {
	return starts[target] || len(calls[target]) > 0
}

// TestExitShare plans the exits of the fixtures at -O0 and -O2, and of the
// programs named in SPROF_EXITS_ELF (bench/exits: Lua from Debian's
// source, on both architectures), and reports the share of exits a patch
// can take (a short one if its hop finds room, which only PROFILE can
// tell). At least 95% of the fixtures' exits must be patchable: they end
// in returns after epilogues, or before padding.
func TestExitShare(t *testing.T) {
	testutil.MustHaveTool(t, "gcc")
	for _, opt := range []string{"-O0", "-O2"} {
		for _, name := range []string{"counts", "bench_calls", "bench_mixed"} {
			prog := testutil.BuildC(t, name, opt)
			share, err := planProgramExits(prog)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s: %v", name, opt, share)
			if share.full+share.short < share.exits*95/100 {
				t.Errorf("%s %s: fewer than 95%% of the exits patched: %v", name, opt, share)
			}
		}
	}
	for _, path := range strings.Fields(os.Getenv("SPROF_EXITS_ELF")) {
		share, err := planProgramExits(path)
		if err != nil {
			t.Error(err)
			continue
		}
		t.Logf("%s: %v", path, share)
	}
}
