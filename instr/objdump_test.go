package instr

// Differential tests against objdump (GNU binutils, or llvm-objdump for
// arm64): on C fixtures compiled at test time, on hand-written assembly of
// every decoder trap, and (with -long) on the host's libraries.

import (
	"bufio"
	"bytes"
	"debug/elf"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var (
	long = flag.Bool("long", false, "compare instruction lengths with objdump on host libraries")
	libs = flag.String("libs", "/usr/lib/x86_64-linux-gnu/libc.so.6,/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
		"comma-separated amd64 ELF files -long checks")
)

// arm64Features lets llvm-mc and llvm-objdump know the instructions of
// traps_arm64.s.
const arm64Features = "+v8.5a,+lse,+rcpc,+pauth,+bti"

// objLine is one instruction of an objdump -d listing.
type objLine struct {
	addr uint64
	text string // mnemonic and operands, blanks squeezed
}

var (
	objInsnRE = regexp.MustCompile(`^\s*([0-9a-f]+):\s+(.*)$`)
	// objRIPRE finds the address objdump computes for a RIP-relative
	// operand; objDirectRE the target of a direct branch or of an arm64
	// PC-relative operand; objADRRE arm64 ADR's offset as llvm prints it.
	objRIPRE    = regexp.MustCompile(`\(%rip\).*# ([0-9a-f]+)`)
	objDirectRE = regexp.MustCompile(`^(?:(?:bnd|notrack|addr32|data16|rex\.W)\s+)*(?:call|jmp|j[a-z]+|loop[a-z]*|xbegin|b|bl|b\.[a-z]+|cbn?z|tbn?z|adrp?|ldr|ldrsw|prfm)\s+(?:[^,]+,\s*)*(?:0x)?([0-9a-f]+)(?: <[^>]*>)?$`)
	objADRRE    = regexp.MustCompile(`^adr\s+\w+,\s*#(-?\d+)$`)
)

// objdump lists the instructions of an ELF file's executable sections in
// address order.
func objdump(t *testing.T, tool []string, path string) []objLine {
	t.Helper()
	args := append(append(tool[1:len(tool):len(tool)], "-d", "-z", "--no-show-raw-insn"), path)
	out, err := exec.Command(tool[0], args...).Output()
	if err != nil {
		t.Fatalf("%s %s: %v", tool[0], strings.Join(args, " "), err)
	}
	var lines []objLine
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := objInsnRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		addr, err := strconv.ParseUint(m[1], 16, 64)
		if err != nil {
			t.Fatalf("objdump line %q: %v", sc.Text(), err)
		}
		lines = append(lines, objLine{addr, strings.Join(strings.Fields(m[2]), " ")})
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].addr < lines[j].addr })
	return lines
}

// elfFunc is a function symbol with its code.
type elfFunc struct {
	name string
	addr uint64
	code []byte
}

// elfFuncs returns the sized function symbols of the executable sections.
func elfFuncs(t *testing.T, path string) []elfFunc {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatalf("symbols of %s: %v", path, err)
	}
	var funcs []elfFunc
	data := make(map[elf.SectionIndex][]byte)
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 || s.Section == elf.SHN_UNDEF || int(s.Section) >= len(f.Sections) {
			continue
		}
		sec := f.Sections[s.Section]
		if sec.Flags&elf.SHF_EXECINSTR == 0 || s.Value < sec.Addr || s.Value+s.Size > sec.Addr+sec.Size {
			continue
		}
		if data[s.Section] == nil {
			if data[s.Section], err = sec.Data(); err != nil {
				t.Fatalf("section %s of %s: %v", sec.Name, path, err)
			}
		}
		off := s.Value - sec.Addr
		funcs = append(funcs, elfFunc{s.Name, s.Value, data[s.Section][off : off+s.Size]})
	}
	if len(funcs) == 0 {
		t.Fatalf("%s: no function symbols", path)
	}
	return funcs
}

// compareWithObjdump checks that Boundaries finds objdump's instructions in
// every function of the binary, and that Decode agrees with objdump on the
// kind of each instruction and the target of each PC-relative operand.
func compareWithObjdump(t *testing.T, a Arch, tool []string, bin string) {
	t.Helper()
	listing := objdump(t, tool, bin)
	text := make(map[uint64]string, len(listing))
	for _, l := range listing {
		text[l.addr] = l.text
	}
	for _, fn := range elfFuncs(t, bin) {
		got, err := Boundaries(a, fn.code, fn.addr)
		if err != nil {
			t.Errorf("%s: %v", fn.name, err)
			continue
		}
		i := sort.Search(len(listing), func(i int) bool { return listing[i].addr >= fn.addr })
		var want []uint64
		for ; i < len(listing) && listing[i].addr < fn.addr+uint64(len(fn.code)); i++ {
			want = append(want, listing[i].addr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: boundaries differ from objdump (-objdump +Boundaries):\n%s", fn.name, diff)
			continue
		}
		for _, pc := range got {
			in, err := a.Decode(fn.code[pc-fn.addr:], pc)
			if err != nil {
				t.Fatal(err) // Boundaries decoded it
			}
			if msg := checkTarget(in, pc, text[pc]); msg != "" {
				t.Errorf("%s %#x %q: %s", fn.name, pc, text[pc], msg)
			}
			if want := objKind(a, text[pc]); in.Kind != want {
				t.Errorf("%s %#x %q: kind %v, objdump's mnemonic says %v", fn.name, pc, text[pc], in.Kind, want)
			}
		}
	}
}

// checkTarget compares a decoded instruction's Target with the address
// objdump prints for it.
func checkTarget(in Inst, pc uint64, objText string) string {
	want, ok := objTarget(pc, objText)
	switch {
	case !ok && in.PCRel && in.Kind != Nop:
		return fmt.Sprintf("PCRel with target %#x, objdump shows none", in.Target)
	case ok && !in.PCRel:
		return fmt.Sprintf("not PCRel, objdump shows target %#x", want)
	case ok && in.Target != want:
		return fmt.Sprintf("target %#x, objdump %#x", in.Target, want)
	}
	return ""
}

// objTarget extracts the address a PC-relative operand refers to from an
// objdump line.
func objTarget(pc uint64, s string) (uint64, bool) {
	// GNU objdump annotates arm64 conditional branches with the condition's
	// other names ("b.ne b14 <f+0x14> // b.any"): not part of the operands.
	if i := strings.Index(s, " //"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if m := objADRRE.FindStringSubmatch(s); m != nil {
		off, err := strconv.ParseInt(m[1], 10, 64)
		return pc + uint64(off), err == nil
	}
	m := objRIPRE.FindStringSubmatch(s)
	if m == nil {
		m = objDirectRE.FindStringSubmatch(s)
	}
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseUint(m[1], 16, 64)
	return v, err == nil
}

// objKind classifies an objdump line by its mnemonic, prefixes skipped.
func objKind(a Arch, s string) Kind {
	fields := strings.Fields(s)
	for len(fields) > 1 && objPrefixes[fields[0]] {
		fields = fields[1:]
	}
	if len(fields) == 0 {
		return Other
	}
	m := fields[0]
	if a == AMD64 {
		return objKindAMD64(m, s)
	}
	return objKindARM64(m, s)
}

var objPrefixes = map[string]bool{
	"bnd": true, "notrack": true, "addr32": true, "data16": true, "rex.W": true,
	"cs": true, "ds": true, "rep": true, "repz": true, "repnz": true, "lock": true,
}

func objKindAMD64(m, s string) Kind {
	switch {
	case strings.HasPrefix(m, "call"), strings.HasPrefix(m, "lcall"):
		return Call
	case strings.HasPrefix(m, "ret"), strings.HasPrefix(m, "lret"), strings.HasPrefix(m, "iret"):
		return Ret
	case strings.HasPrefix(m, "jmp"), strings.HasPrefix(m, "ljmp"):
		return Jump
	case strings.HasPrefix(m, "j"), strings.HasPrefix(m, "loop"):
		return CondJump
	case strings.HasPrefix(m, "nop"), strings.HasPrefix(m, "endbr"), strings.HasSuffix(s, "xchg %ax,%ax"):
		return Nop
	case m == "int3", m == "int", m == "int1", m == "icebp", m == "hlt", strings.HasPrefix(m, "ud"):
		return Trap
	}
	return Other
}

func objKindARM64(m, s string) Kind {
	switch m {
	case "b", "br", "braa", "brab", "braaz", "brabz":
		return Jump
	case "bl", "blr", "blraa", "blrab", "blraaz", "blrabz":
		return Call
	case "ret", "retaa", "retab":
		return Ret
	case "cbz", "cbnz", "tbz", "tbnz":
		return CondJump
	case "nop", "bti":
		return Nop
	case "brk", "udf", "hlt", "hvc", "smc", "eret", "drps", "dcps1", "dcps2", "dcps3":
		return Trap
	case "prfm":
		if _, ok := objTarget(0, s); ok {
			return Nop // PRFM (literal)
		}
	}
	if strings.HasPrefix(m, "b.") || strings.HasPrefix(m, "bc.") {
		return CondJump
	}
	return Other
}

// need skips the test unless every program is installed.
func need(t *testing.T, progs ...string) {
	t.Helper()
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("needs %s: %v", p, err)
		}
	}
}

// run runs a command, failing the test with its output.
func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if b, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
	}
}

// fixtureBuild is one way to compile testdata/fixture.c.
type fixtureBuild struct {
	name  string
	flags []string
}

// testFixtures compiles testdata/fixture.c each way and compares.
func testFixtures(t *testing.T, a Arch, cc string, objdumpCmd []string, builds []fixtureBuild) {
	dir := t.TempDir()
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			bin := filepath.Join(dir, b.name)
			run(t, cc, append(b.flags, "-o", bin, filepath.Join("testdata", "fixture.c"))...)
			compareWithObjdump(t, a, objdumpCmd, bin)
		})
	}
}

func TestObjdumpAMD64(t *testing.T) {
	need(t, "gcc", "objdump")
	testFixtures(t, AMD64, "gcc", []string{"objdump"}, []fixtureBuild{
		{"O0", []string{"-O0"}},
		{"O2-cet", []string{"-O2", "-fcf-protection=full"}},
		{"O2-avx2", []string{"-O2", "-march=x86-64-v3"}},
		{"O3-avx512", []string{"-O3", "-march=x86-64-v4"}},
		{"O2-static-pie", []string{"-O2", "-static-pie"}}, // libc's own code
	})
}

func TestObjdumpARM64(t *testing.T) {
	const cc, tool = "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-objdump"
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no arm64 cross compiler (%s): the arm64 differential test runs on traps_arm64.s only", cc)
	}
	need(t, tool)
	testFixtures(t, ARM64, cc, []string{tool}, []fixtureBuild{
		{"O0", []string{"-O0"}},
		{"O2-pac-bti", []string{"-O2", "-mbranch-protection=standard"}},
	})
}

// TestObjdumpTrapsAMD64 assembles every decoder trap of docs/design/libraries.md with
// GNU as and compares with objdump.
func TestObjdumpTrapsAMD64(t *testing.T) {
	need(t, "gcc", "objdump")
	obj := filepath.Join(t.TempDir(), "traps.o")
	run(t, "gcc", "-c", "-o", obj, filepath.Join("testdata", "traps_amd64.s"))
	compareWithObjdump(t, AMD64, []string{"objdump"}, obj)
}

// TestObjdumpTrapsARM64 assembles the arm64 traps (pointer authentication,
// BTI, LSE, RCPC, every PC-relative form) with llvm-mc, or the GNU cross
// assembler, and compares with llvm-objdump or GNU objdump.
func TestObjdumpTrapsARM64(t *testing.T) {
	src := filepath.Join("testdata", "traps_arm64.s")
	obj := filepath.Join(t.TempDir(), "traps.o")
	switch {
	case have("llvm-mc") && have("llvm-objdump"):
		run(t, "llvm-mc", "-triple=aarch64-linux-gnu", "-mattr="+arm64Features, "-filetype=obj", "-o", obj, src)
		compareWithObjdump(t, ARM64, []string{"llvm-objdump", "--mattr=" + arm64Features}, obj)
	case have("aarch64-linux-gnu-as") && have("aarch64-linux-gnu-objdump"):
		run(t, "aarch64-linux-gnu-as", "-march=armv8.5-a+lse+rcpc", "-o", obj, src)
		compareWithObjdump(t, ARM64, []string{"aarch64-linux-gnu-objdump"}, obj)
	default:
		t.Skip("needs llvm-mc and llvm-objdump, or aarch64-linux-gnu-as and -objdump")
	}
}

func have(prog string) bool {
	_, err := exec.LookPath(prog)
	return err == nil
}

// TestObjdumpHostLibraries decodes every instruction objdump lists in the
// host's libraries (-libs, with -long) and compares lengths and targets.
func TestObjdumpHostLibraries(t *testing.T) {
	if !*long {
		t.Skip("needs -long")
	}
	need(t, "objdump")
	for _, lib := range strings.Split(*libs, ",") {
		if _, err := os.Stat(lib); err != nil {
			t.Logf("skip %s: %v", lib, err)
			continue
		}
		t.Run(filepath.Base(lib), func(t *testing.T) { compareLengths(t, lib) })
	}
}

// objWaitForm reports whether objdump shows an x87 instruction of the
// "wait" form (fstcw = fwait; fnstcw).
func objWaitForm(text string) bool {
	for _, m := range []string{"fstcw", "fstsw", "fstenv", "fsave", "finit", "fclex"} {
		if strings.HasPrefix(text, m+" ") || text == m {
			return true
		}
	}
	return false
}

// compareLengths checks each instruction's length against the distance to
// the next one objdump lists. objdump's linear sweep also decodes data in
// text (jump tables, constants), where differences do not matter.
func compareLengths(t *testing.T, lib string) {
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listing := objdump(t, []string{"objdump"}, lib)
	var bad, checked int
	for _, sec := range f.Sections {
		if sec.Flags&elf.SHF_EXECINSTR == 0 || sec.Type != elf.SHT_PROGBITS {
			continue
		}
		data, err := sec.Data()
		if err != nil {
			t.Fatal(err)
		}
		i := sort.Search(len(listing), func(i int) bool { return listing[i].addr >= sec.Addr })
		for ; i+1 < len(listing) && listing[i+1].addr < sec.Addr+sec.Size; i++ {
			l := listing[i]
			if strings.Contains(l.text, "(bad)") {
				continue
			}
			want := int(listing[i+1].addr - l.addr)
			checked++
			in, err := AMD64.Decode(data[l.addr-sec.Addr:], l.addr)
			switch {
			case err == nil && in.Text == "fwait" && objWaitForm(l.text):
				// objdump joins fwait (9b) to the no-wait x87 instruction
				// after it; they are two instructions (Intel SDM "FSTCW").
				continue
			case err != nil:
				t.Errorf("%#x %q: %v", l.addr, l.text, err)
			case in.Len != want:
				t.Errorf("%#x %q: length %d, objdump %d (%s)", l.addr, l.text, in.Len, want, in.Text)
			default:
				msg := checkTarget(in, l.addr, l.text)
				if msg == "" {
					continue
				}
				t.Errorf("%#x %q: %s", l.addr, l.text, msg)
			}
			if bad++; bad > 50 {
				t.Fatalf("too many differences")
			}
		}
	}
	t.Logf("%s: %d instructions checked, %d differ", lib, checked, bad)
}
