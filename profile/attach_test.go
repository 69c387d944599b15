package profile

import (
	"testing"
	"time"
)

// TestSeconds: the run record of an attached run words its window as a
// user would: three digits, whole seconds from 100 s on (an hour was
// "3.6e+03 s").
func TestSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{
		200 * time.Millisecond:              "0.2 s",
		1234 * time.Millisecond:             "1.23 s",
		30 * time.Second:                    "30 s",
		99940 * time.Millisecond:            "99.9 s",
		99960 * time.Millisecond:            "100 s",
		time.Hour:                           "3600 s",
		36*time.Hour + 400*time.Millisecond: "129600 s",
	} {
		if got := seconds(d); got != want {
			t.Errorf("seconds(%v) = %q, want %q", d, got, want)
		}
	}
}
