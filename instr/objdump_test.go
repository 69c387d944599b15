package instr

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

// long enables the differential test on the host's shared libraries, like
// x/arch's -long external tests.
var (
	long = flag.Bool("long", false, "compare instruction lengths with objdump on host libraries")
	libs = flag.String("libs", "/usr/lib/x86_64-linux-gnu/libc.so.6,/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
		"comma-separated amd64 ELF files -long checks")
)

// objLine is one instruction of an objdump -d listing.
type objLine struct {
	addr uint64
	text string
}

var (
	objInsnRE  = regexp.MustCompile(`^\s*([0-9a-f]+):\t(.*)$`)
	objRIPRE   = regexp.MustCompile(`\(%rip\).*# ([0-9a-f]+)`)
	objDirectR = regexp.MustCompile(`^(?:(?:bnd|notrack|addr32|data16|rex\.W)\s+)*(?:call|jmp|j[a-z]+|xbegin|loop[a-z]*|b|bl|b\.[a-z]+|cbn?z|tbn?z|adrp?|ldr|ldrsw|prfm)\s+(?:[^,]+,\s*)*([0-9a-f]+)(?: <[^>]*>)?$`)
)

// objdump lists the instructions of an ELF file's executable sections in
// address order.
func objdump(t *testing.T, tool, path string) []objLine {
	t.Helper()
	out, err := exec.Command(tool, "-d", "-z", "--no-show-raw-insn", path).Output()
	if err != nil {
		t.Fatalf("%s -d %s: %v", tool, path, err)
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

// elfFuncs returns the sized function symbols of an executable section.
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
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 || int(s.Section) >= len(f.Sections) || s.Section == elf.SHN_UNDEF {
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
// every function of the binary, and that Decode finds the target of every
// direct branch and RIP-relative operand objdump prints.
func compareWithObjdump(t *testing.T, a Arch, tool, bin string) {
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
			if msg := checkTarget(in, text[pc]); msg != "" {
				t.Errorf("%s %#x %q: %s", fn.name, pc, text[pc], msg)
			}
		}
	}
}

// checkTarget compares a decoded instruction's Target with the address
// objdump prints for it.
func checkTarget(in Inst, objText string) string {
	want, ok := objTarget(objText)
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
func objTarget(s string) (uint64, bool) {
	m := objRIPRE.FindStringSubmatch(s)
	if m == nil {
		m = objDirectR.FindStringSubmatch(s)
	}
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseUint(m[1], 16, 64)
	return v, err == nil
}

// buildC compiles the fixture with a compiler into dir.
func buildC(t *testing.T, cc, out string, flags ...string) {
	t.Helper()
	args := append(append([]string{}, flags...), "-o", out, filepath.Join("testdata", "fixture.c"))
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, b)
	}
}

func TestObjdumpAMD64(t *testing.T) {
	for _, tool := range []string{"gcc", "objdump"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("differential test needs %s: %v", tool, err)
		}
	}
	builds := []struct {
		name  string
		flags []string
	}{
		{"O0", []string{"-O0"}},
		{"O2-cet", []string{"-O2", "-fcf-protection=full"}},
		{"O2-avx2", []string{"-O2", "-march=x86-64-v3"}},
		{"O3-avx512", []string{"-O3", "-march=x86-64-v4"}},
		{"O2-pie-static", []string{"-O2", "-static-pie"}},
	}
	dir := t.TempDir()
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			bin := filepath.Join(dir, b.name)
			buildC(t, "gcc", bin, b.flags...)
			compareWithObjdump(t, AMD64, "objdump", bin)
		})
	}
}

func TestObjdumpARM64(t *testing.T) {
	const cc, tool = "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-objdump"
	for _, p := range []string{cc, tool} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("no arm64 cross toolchain: %s not found", p)
		}
	}
	dir := t.TempDir()
	for _, b := range []struct {
		name  string
		flags []string
	}{
		{"O0", []string{"-O0"}},
		{"O2-pac-bti", []string{"-O2", "-mbranch-protection=standard"}},
	} {
		t.Run(b.name, func(t *testing.T) {
			bin := filepath.Join(dir, b.name)
			buildC(t, cc, bin, b.flags...)
			compareWithObjdump(t, ARM64, tool, bin)
		})
	}
}

// TestObjdumpHostLibraries decodes every instruction objdump lists in the
// host's libraries (-libs, with -long) and compares lengths and targets.
func TestObjdumpHostLibraries(t *testing.T) {
	if !*long {
		t.Skip("needs -long")
	}
	if _, err := exec.LookPath("objdump"); err != nil {
		t.Skipf("needs objdump: %v", err)
	}
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
// the next one objdump lists.
func compareLengths(t *testing.T, lib string) {
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listing := objdump(t, "objdump", lib)
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
				if msg := checkTarget(in, l.text); msg != "" {
					t.Errorf("%#x %q: %s", l.addr, l.text, msg)
				} else {
					continue
				}
			}
			if bad++; bad > 50 {
				t.Fatalf("too many differences")
			}
		}
	}
	t.Logf("%s: %d instructions checked, %d differ", lib, checked, bad)
}
