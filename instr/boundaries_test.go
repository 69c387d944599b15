package instr

import (
	"debug/elf"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBoundaries(t *testing.T) {
	cases := []struct {
		name    string
		arch    Arch
		code    string
		start   uint64
		want    []uint64
		errAddr uint64 // 0: no error
	}{
		{
			// endbr64; push %rbp; mov %rsp,%rbp; vzeroupper; pop %rbp; ret
			name: "amd64", arch: AMD64, code: "f30f1efa554889e5c5f8775dc3", start: 0x401000,
			want: []uint64{0x401000, 0x401004, 0x401005, 0x401008, 0x40100b, 0x40100c},
		},
		{
			// push %rbp; then a call cut short
			name: "amd64 truncated", arch: AMD64, code: "55e81122", start: 0x401000,
			want: []uint64{0x401000}, errAddr: 0x401001,
		},
		{name: "amd64 empty", arch: AMD64, code: "", start: 0x401000},
		{
			// paciasp; stp x29, x30, [sp,#-16]!; mov x29, sp; retaa
			name: "arm64", arch: ARM64, code: w(0xd503233f) + w(0xa9bf7bfd) + w(0x910003fd) + w(0xd65f0bff), start: 0x400100,
			want: []uint64{0x400100, 0x400104, 0x400108, 0x40010c},
		},
		{
			name: "arm64 ragged end", arch: ARM64, code: w(0xd503201f) + w(0xd503201f) + "1f20", start: 0x400100,
			want: []uint64{0x400100, 0x400104}, errAddr: 0x400108,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Boundaries(c.arch, unhex(t, c.code), c.start)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("Boundaries (-want +got):\n%s", diff)
			}
			var de *DecodeError
			switch {
			case c.errAddr == 0 && err != nil:
				t.Errorf("error %v", err)
			case c.errAddr != 0 && (!errors.As(err, &de) || de.Addr != c.errAddr || !errors.Is(err, ErrTruncated)):
				t.Errorf("error %v, want a truncated DecodeError at %#x", err, c.errAddr)
			}
		})
	}
}

func TestOnBoundary(t *testing.T) {
	bounds := []uint64{0x1000, 0x1004, 0x1005, 0x1008}
	for addr, want := range map[uint64]bool{0x1000: true, 0x1005: true, 0x1008: true, 0xfff: false, 0x1001: false, 0x1009: false} {
		if got := OnBoundary(bounds, addr); got != want {
			t.Errorf("OnBoundary(%#x) = %v, want %v", addr, got, want)
		}
	}
}

func TestDecodeErrorMessage(t *testing.T) {
	_, err := AMD64.Decode([]byte{0xe8, 0x11}, 0x401000)
	const want = "decode amd64 instruction at 0x401000 (e8 11): truncated instruction"
	if err == nil || err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestForMachine(t *testing.T) {
	for _, c := range []struct {
		m    elf.Machine
		name string
	}{{elf.EM_X86_64, "amd64"}, {elf.EM_AARCH64, "arm64"}} {
		a, err := ForMachine(c.m)
		if err != nil || a.Name() != c.name {
			t.Errorf("ForMachine(%v) = %v, %v", c.m, a, err)
		}
		b, err := ForName(c.name)
		if err != nil || b != a {
			t.Errorf("ForName(%q) = %v, %v", c.name, b, err)
		}
	}
	if _, err := ForMachine(elf.EM_RISCV); !errors.Is(err, ErrUnsupportedArch) {
		t.Errorf("ForMachine(EM_RISCV): %v", err)
	}
	if _, err := ForName("386"); !errors.Is(err, ErrUnsupportedArch) {
		t.Errorf("ForName(386): %v", err)
	}
}
