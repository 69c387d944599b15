package instr

import (
	"bytes"
	"debug/elf"
	"math/rand"
	"os"
	"testing"
)

// branchClass is what the scans read of an instruction's kind.
func branchClass(k Kind) Kind {
	if k == Jump || k == CondJump || k == Call || k == Ret {
		return k
	}
	return Other
}

// agree checks the fast path against decodeAMD64Bare at code[off:].
func agree(t *testing.T, code []byte, pc uint64) bool {
	t.Helper()
	fast, ok := scanAMD64Fast(code, pc)
	if !ok {
		return true
	}
	x, err := decodeAMD64Bare(code, pc)
	switch {
	case err != nil && rexNop(code):
		// x86asm refuses a NOP with a REX prefix (48 0f 1f 00: nopq
		// (%rax)), which GNU as writes and CPUs run.
		return true
	case err != nil:
		t.Errorf("%#x % x: fast path %d bytes, the decoder fails: %v", pc, code[:min(len(code), 15)], fast.n, err)
	case fast.n != x.Len || fast.pcrel != x.PCRel || fast.target != x.Target || branchClass(fast.kind) != branchClass(x.Kind):
		t.Errorf("%#x % x: fast path len %d pcrel %v target %#x %v; decoder %d %v %#x %v (%s)", pc, code[:min(len(code), 15)],
			fast.n, fast.pcrel, fast.target, fast.kind, x.Len, x.PCRel, x.Target, x.Kind, x.text(pc))
	default:
		return true
	}
	return false
}

// TestScanDecoderAgrees holds the scans' fast path to the decoder it
// stands in for: the same length, RIP-relative target and kind of branch
// at every byte offset of the host's C library (what it decodes there is
// mostly not code that runs: every way bytes can line up), of the
// instruction fixtures, and of random bytes.
// scanTexts returns the bytes the decoders are held to each other on: the
// host's C and C++ libraries' text (the first 512 KiB of each, 64 KiB
// with -short), random bytes, and the instruction fixtures as bytes.
func scanTexts(t *testing.T) [][]byte {
	var texts [][]byte
	for _, lib := range []string{"/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"} {
		f, err := elf.Open(lib)
		if err != nil {
			continue
		}
		if s := f.Section(".text"); s != nil {
			if b, err := s.Data(); err == nil {
				n := 1 << 19
				if testing.Short() {
					n = 1 << 16
				}
				b = b[:min(len(b), n)]
				texts = append(texts, b)
			}
		}
		f.Close()
	}
	if len(texts) == 0 {
		t.Log("no host library to read: random bytes only")
	}
	r := rand.New(rand.NewSource(1))
	random := make([]byte, 1<<18)
	for i := range random {
		random[i] = byte(r.Intn(256))
	}
	texts = append(texts, random)
	if b, err := os.ReadFile("testdata/amd64.txt"); err == nil {
		texts = append(texts, b) // text, decoded as bytes: more odd prefixes
	}
	return texts
}

func TestScanDecoderAgrees(t *testing.T) {
	texts := scanTexts(t)
	bad, fast := 0, 0
	for _, code := range texts {
		for off := range code {
			if _, ok := scanAMD64Fast(code[off:min(len(code), off+15)], 0x400000+uint64(off)); ok {
				fast++
			}
			if !agree(t, code[off:min(len(code), off+15)], 0x400000+uint64(off)) {
				if bad++; bad > 20 {
					t.Fatal("too many differences")
				}
			}
		}
	}
	t.Logf("%d offsets on the fast path", fast)
}

// rexNop reports whether code starts with a NOP (0F 1F /0) after a REX
// prefix and legacy prefixes.
func rexNop(code []byte) bool {
	p := scanX86Prefixes(code)
	return p.rex != 0 && len(code) > p.n+2 && code[p.n] == 0x0f && code[p.n+1] == 0x1f && code[p.n+2]>>3&7 == 0
}

// TestQuickDecoderAgrees holds the bare decoder's fast path
// (decodeAMD64Quick) to the decoder it stands in for: the same length,
// kind, PC-relative flag and target at every byte offset of the host's C
// library and C++ library, of the instruction fixtures and of random
// bytes, or, where the decoder refuses a NOP with a REX prefix that CPUs
// run, a Nop-free Other of the fast path.
func TestQuickDecoderAgrees(t *testing.T) {
	texts := scanTexts(t)
	bad := 0
	for _, code := range texts {
		for off := range code {
			c, pc := code[off:min(len(code), off+15)], 0x400000+uint64(off)
			q, qerr := decodeAMD64Quick(c, pc)
			x, xerr := decodeAMD64Bare(c, pc)
			switch {
			case xerr != nil && qerr == nil && rexNop(c):
			case (xerr == nil) != (qerr == nil):
				t.Errorf("%#x % x: quick %+v, %v; decoder %+v, %v", pc, c, q, qerr, x.Inst, xerr)
			case xerr == nil && (q.Len != x.Len || q.Kind != x.Kind || q.PCRel != x.PCRel || q.Target != x.Target):
				t.Errorf("%#x % x: quick %+v; decoder %+v (%s)", pc, c, q, x.Inst, x.text(pc))
			default:
				continue
			}
			if bad++; bad > 20 {
				t.Fatal("too many differences")
			}
		}
	}
}

// TestTrampDecoderAgrees: a trampoline's instructions decoded through
// the scans' table (decodeTrampInst) are relocated to the same bytes as
// decoded in full, at every byte offset of the texts of
// TestQuickDecoderAgrees where a relocatable instruction starts, to a
// place far away.
func TestTrampDecoderAgrees(t *testing.T) {
	bad := 0
	for _, code := range scanTexts(t) {
		for off := range code {
			c, pc := code[off:min(len(code), off+15)], 0x400000+uint64(off)
			x, xerr := decodeAMD64Bare(c, pc)
			if xerr != nil || x.relocatable() != nil {
				// (What a patch never carries: nor may the table's
				// decoding take it.)
				if q, qerr := decodeTrampInst(c, pc); xerr == nil && qerr == nil && q.relocatable() == nil && q.Len == x.Len {
					t.Errorf("%#x % x (%s): relocatable by the table's decoding: %v", pc, c, x.text(pc), x.relocatable())
				}
				continue
			}
			q, qerr := decodeTrampInst(c, pc)
			if qerr == nil && q.relocatable() != nil {
				t.Errorf("%#x % x (%s): refused by the table's decoding, not by the decoder's: %v", pc, c, x.text(pc), q.relocatable())
			}
			if qerr != nil || q.Len != x.Len {
				t.Errorf("%#x % x: %+v, %v; decoder %+v", pc, c, q.Inst, qerr, x.Inst)
			} else {
				const at = 0x7f0000001000
				qb, qerr := q.relocate(pc, at)
				xb, xerr := x.relocate(pc, at)
				if (qerr == nil) != (xerr == nil) || !bytes.Equal(qb, xb) {
					t.Errorf("%#x % x (%s): relocated % x, %v; decoder's % x, %v", pc, c, x.text(pc), qb, qerr, xb, xerr)
				} else {
					continue
				}
			}
			if bad++; bad > 20 {
				t.Fatal("too many differences")
			}
		}
	}
}
