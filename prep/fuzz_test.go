package prep

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sourceprofiler/sprof/internal/prf"
)

func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		"main", "lcount.c(5-", "fcount.c()", "parse.c(3-41,50-67)", "parse.c(0-0)", "(1-2",
		"Counter::bump(int)", "main.(*T).M", "libc.so.6", "*.a", "std::*", "a*b?c", "x.c(65535)",
		"x.c(65536)", "_ZN7Counter4bumpEi", "é?*", "",
	} {
		f.Add(s)
	}
	c := candidate{module: "libx.so.1", modulePath: "/a/libx.so.1", names: []string{"main", "_ZN1x1yEv", "x::y()"},
		source: "main", unitIsPackage: true, noDebug: true, declFile: "/src/x.c", declLine: 7}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := parseSpec(Spec{Op: Include, Text: text})
		if err != nil {
			const prefix = "syntax error in /EXC or /INC specification: "
			if prf.Code(err) != 1422 || !strings.HasPrefix(err.Error(), prefix) {
				t.Fatalf("parseSpec(%q) = %v, want PRF1422", text, err)
			}
			if shown := strings.TrimPrefix(err.Error(), prefix); !strings.HasPrefix(text, shown) {
				t.Fatalf("parseSpec(%q) shows %q, not a prefix of the text", text, shown)
			}
			return
		}
		if !strings.HasPrefix(text, p.glob) || !strings.HasPrefix(text, p.shown) {
			t.Fatalf("parseSpec(%q) = glob %q shown %q, not prefixes of the text", text, p.glob, p.shown)
		}
		for _, r := range p.ranges {
			if r.lo < 0 || r.hi < 0 || r.lo > maxLine || r.hi > maxLine {
				t.Fatalf("parseSpec(%q): range %v out of bounds", text, r)
			}
		}
		p.matches(&c)
		// A name matches itself as a glob when it holds no wildcard.
		if p.kind == kindFunction && !strings.ContainsAny(text, "*?") && !glob(text, text) {
			t.Fatalf("glob(%q, %q) = false", text, text)
		}
	})
}

func FuzzReadIni(f *testing.F) {
	f.Add([]byte("[profiler]\nexclude:_start\nexclude:*.a\nexclude:std::*\nexclude:<u8 as *\n"))
	f.Add([]byte("[profiler]\r\nexclude:fcount.c(0-0)\r\ninclude:libc.lib\r\n"))
	f.Add([]byte("[other]\nx\n[profiler]\n; c\n# c\nexclude:a\n"))
	f.Add([]byte("[profiler\nexclude:x.c(1-"))
	f.Fuzz(func(t *testing.T, data []byte) {
		specs, err := ReadIni(bytes.NewReader(data), "fuzz.ini")
		if err != nil {
			return
		}
		// What was read writes back to an equivalent file.
		var b strings.Builder
		b.WriteString("[profiler]\n")
		for _, s := range specs {
			if _, err := parseSpec(s); err != nil {
				t.Fatalf("ReadIni returned %q, which does not parse: %v", s.Text, err)
			}
			if strings.ContainsAny(s.Text, "\r\n") || strings.TrimSpace(s.Text) != s.Text {
				t.Fatalf("ReadIni returned %q with line ends or surrounding blanks", s.Text)
			}
			b.WriteString(s.Op.String() + ":" + s.Text + "\n")
		}
		again, err := ReadIni(strings.NewReader(b.String()), "again.ini")
		if err != nil {
			t.Fatalf("reading back %q: %v", b.String(), err)
		}
		if diff := cmp.Diff(specs, again); diff != "" {
			t.Fatalf("read back (-first +second):\n%s", diff)
		}
	})
}
