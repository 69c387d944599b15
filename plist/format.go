package plist

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// fixed formats v with prec decimals as the Microsoft C run time's printf
// does: a value exactly halfway between two results is rounded away from
// zero (0.0625 gives 0.063 with three decimals, where Go's strconv rounds
// exact halves to even and gives 0.062).
func fixed(v float64, prec int) string {
	p := math.Pow10(prec)
	s := v * p
	if s-math.Floor(s) == 0.5 && math.FMA(v, p, -s) == 0 {
		v = math.Nextafter(v, math.Copysign(math.Inf(1), v))
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// fixedWidth is fixed right-aligned in width columns, as printf's "%*.*f".
func fixedWidth(v float64, width, prec int) string {
	return padLeft(fixed(v, prec), width)
}

// padLeft right-aligns s in width columns.
func padLeft(s string, width int) string {
	if len(s) >= width {
		return s
	}
	return strings.Repeat(" ", width-len(s)) + s
}

// millis converts nanoseconds to the milliseconds every report prints.
func millis(ns int64) float64 { return float64(ns) / 1e6 }

// percent is part / whole * 100, or 0 when whole is 0 (the original printed
// 0.0 then).
func percent(part, whole float64) float64 {
	if whole == 0 {
		return 0
	}
	return part / whole * 100
}

// ctime renders t as the C run time's ctime() without its newline; the
// Microsoft run time writes the day of the month with a leading zero.
func ctime(t time.Time) string { return t.Format("Mon Jan 02 15:04:05 2006") }

// runDate renders a run's start as "Command line at" lines and record 4 show
// it: year, month, day, hours and minutes, in the location of now.
func runDate(unix int64, now time.Time) string {
	return time.Unix(unix, 0).In(now.Location()).Format("2006 Jan 02 15:04")
}
