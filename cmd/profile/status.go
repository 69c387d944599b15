package main

import (
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/sourceprofiler/sprof/profile"
)

// statusLine is PROFILE's one line of progress on a terminal: written in
// place as the run goes, and gone when it ends.
type statusLine struct {
	mu    sync.Mutex
	w     io.Writer
	shown bool
}

// update writes p over the line.
func (s *statusLine) update(p profile.Progress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "\r\033[K%s", progressText(p))
	s.shown = true
}

// clear takes the line away.
func (s *statusLine) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shown {
		io.WriteString(s.w, "\r\033[K")
		s.shown = false
	}
}

// progressText is the status line's text: "profile: 12.5 s, 1,234,567
// hits, 98% of 1,234 sites in-process".
func progressText(p profile.Progress) string {
	text := fmt.Sprintf("profile: %.1f s, %s hits", p.Elapsed.Seconds(), thousands(p.Hits))
	if sites := p.InProcess + p.Breakpoints; sites > 0 {
		text += fmt.Sprintf(", %d%% of %s sites in-process", p.InProcess*100/sites, thousands(uint64(sites)))
	}
	return text
}

// thousands writes n with commas between groups of three digits.
func thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
