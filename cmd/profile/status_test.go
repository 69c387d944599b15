package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/profile"
)

func TestProgressText(t *testing.T) {
	for _, c := range []struct {
		p    profile.Progress
		want string
	}{
		{profile.Progress{Elapsed: 2500 * time.Millisecond, Hits: 1234567, InProcess: 98, Breakpoints: 2}, "profile: 2.5 s, 1,234,567 hits, 98% of 100 sites in-process"},
		{profile.Progress{Elapsed: 3 * time.Second, Hits: 999}, "profile: 3.0 s, 999 hits"},
		{profile.Progress{Elapsed: 61 * time.Second, Hits: 1000, Breakpoints: 3}, "profile: 61.0 s, 1,000 hits, 0% of 3 sites in-process"},
	} {
		if got := progressText(c.p); got != c.want {
			t.Errorf("progressText(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}

func TestStatusLine(t *testing.T) {
	var b strings.Builder
	s := &statusLine{w: &b}
	s.clear() // nothing shown: nothing to take away
	s.update(profile.Progress{Elapsed: 2 * time.Second, Hits: 1})
	s.update(profile.Progress{Elapsed: 3 * time.Second, Hits: 2})
	s.clear()
	s.clear()
	want := "\r\x1b[Kprofile: 2.0 s, 1 hits\r\x1b[Kprofile: 3.0 s, 2 hits\r\x1b[K"
	if b.String() != want {
		t.Errorf("status line wrote %q, want %q", b.String(), want)
	}
}
