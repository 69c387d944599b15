package prf

import (
	"strings"
	"unicode/utf8"
)

// Printable returns s with the characters that end or split a line, or
// that a terminal obeys, written as escapes: TAB as \t, LF as \n, CR as
// \r, the other control characters (U+0000 to U+001F, U+007F) as \xHH,
// the C1 controls (U+0080 to U+009F) and the line and paragraph
// separators (U+2028, U+2029) as \uHHHH. Names read from a program (a
// source file's name, which #line sets to any string) and its command
// line go through it wherever a line-based format prints them, so that
// a name stays one field of one record: a newline in it cannot forge
// records. A backslash is left as it is, so that a name without those
// characters, every name in practice, is printed exactly: the escapes
// are for reading, not to be undone (the JSON and pprof exports keep
// names exactly).
func Printable(s string) string { return printable(s, false) }

// PrintableTabs is [Printable] with TAB left as it is, for text whose
// tabs are expanded to spaces (PLIST's listings).
func PrintableTabs(s string) string { return printable(s, true) }

func printable(s string, keepTabs bool) string {
	i := firstUnprintable(s, keepTabs)
	if i < 0 {
		return s
	}
	const hex = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\t' && keepTabs:
				b.WriteByte(c)
			case c == '\t':
				b.WriteString(`\t`)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c < 0x20 || c == 0x7f:
				b.WriteString(`\x`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&15])
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if unprintableRune(r) {
			b.WriteString(`\u`)
			for shift := 12; shift >= 0; shift -= 4 {
				b.WriteByte(hex[r>>shift&15])
			}
		} else {
			b.WriteString(s[i : i+n]) // (a byte of invalid UTF-8 as it is)
		}
		i += n
	}
	return b.String()
}

// firstUnprintable returns the index of the first byte of s that
// printable changes, or -1.
func firstUnprintable(s string, keepTabs bool) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\t':
			if !keepTabs {
				return i
			}
		case c < 0x20 || c == 0x7f:
			return i
		case c == 0xc2 || c == 0xe2: // the first byte of U+0080-U+009F, U+2028, U+2029
			if r, _ := utf8.DecodeRuneInString(s[i:]); unprintableRune(r) {
				return i
			}
		}
	}
	return -1
}

// unprintableRune reports whether r, of two or more bytes, is escaped.
func unprintableRune(r rune) bool {
	return r >= 0x80 && r <= 0x9f || r == '\u2028' || r == '\u2029'
}
