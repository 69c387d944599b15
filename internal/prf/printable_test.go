package prf

import "testing"

// TestPrintable: the characters that end or split a line, or that a
// terminal obeys, are escaped; everything else, a backslash, UTF-8 and
// bytes that are not UTF-8 included, is kept.
func TestPrintable(t *testing.T) {
	tests := []struct{ in, want, tabs string }{
		{"plain name.c", "plain name.c", "plain name.c"},
		{"", "", ""},
		{"a\tb", `a\tb`, "a\tb"},
		{"a\nb\r\n", `a\nb\r\n`, `a\nb\r\n`},
		{"\x00\x01\x1b[2J\x7f", `\x00\x01\x1b[2J\x7f`, `\x00\x01\x1b[2J\x7f`},
		{"\f\v", `\x0c\x0b`, `\x0c\x0b`},
		{"C1 \u0085 \u009b", `C1 \u0085 \u009b`, `C1 \u0085 \u009b`},
		{"sep \u2028\u2029", `sep \u2028\u2029`, `sep \u2028\u2029`},
		{"kept: é ü ∑ \u00a0 \u2027 \\n \\", "kept: é ü ∑ \u00a0 \u2027 \\n \\", "kept: é ü ∑ \u00a0 \u2027 \\n \\"},
		{"invalid \xc2 \xe2\x80 \xff\nend", "invalid \xc2 \xe2\x80 \xff\\nend", "invalid \xc2 \xe2\x80 \xff\\nend"},
	}
	for _, tt := range tests {
		if got := Printable(tt.in); got != tt.want {
			t.Errorf("Printable(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := PrintableTabs(tt.in); got != tt.tabs {
			t.Errorf("PrintableTabs(%q) = %q, want %q", tt.in, got, tt.tabs)
		}
	}
}
