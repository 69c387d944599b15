// The memory PROFILE shares with the program, written over by the
// program: a wild write (a stray pointer, an overrun) can reach it as it
// can reach any of the program's memory. Nothing of it may make PROFILE
// loop or fail: what it finds there it checks, and says what it found at
// the end (PRF4690).

package profile

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// guardSize is the size of the guard at the end of the shared memory:
// bytes PROFILE writes and nothing of its code does, checked at the end
// of the run. A write over the whole mapping (the program cleared or
// filled what it took for its own memory) reaches it.
const guardSize = 64

// guard is what the guard holds.
var guard = bytes.Repeat([]byte("sprof guard\x00\xa5\x5a\xc3\x3c"), guardSize/16)

// writeGuard fills the guard.
func (c *counters) writeGuard() {
	mem := c.shared.Bytes()
	copy(mem[len(mem)-guardSize:], guard)
}

// guardIntact reports whether the guard holds what writeGuard wrote.
func (c *counters) guardIntact() bool {
	mem := c.shared.Bytes()
	return bytes.Equal(mem[len(mem)-guardSize:], guard)
}

// ringMarks is what PROFILE keeps of the rings to find those the program
// wrote over: its words of the rings as it last left them, by block
// (instr.RingIntact); damaged counts the rings found written over,
// broken those not yet taken back whole, held is the block of the thread
// whose stop is being handled, -1 for none.
type ringMarks struct {
	marks   map[int]uint64
	broken  map[int]bool
	damaged int
	held    int
}

// intact reports whether block b's ring is as the record code and
// PROFILE left it. A ring the program wrote over is taken back
// (instr.RingResync): emptied from where its thread writes next, its
// records dropped (they are not records), or, where its thread, running,
// may be moving a head that is no slot, made to stop the thread soon, to
// be taken back whole at that stop (held: the block of the thread PROFILE
// holds now, rings.stopSeen). Each time it is found so is counted for the
// warning at the end. Read as it was, it could look full for ever, its
// thread stopping at every record, or hold records that are none.
func (r *rings) intact(b int, area []byte) bool {
	a := r.arch
	if instr.RingIntact(a, area, ringRecords, r.marks[b]) {
		return true
	}
	if !r.broken[b] {
		r.damaged++
	}
	mark, ok := instr.RingResync(a, area, ringRecords, b != r.held)
	r.marks[b], r.broken[b] = mark, !ok
	return false
}

// warnDamage warns, at the end of the run, of what PROFILE found the
// program had written over.
func (c *counters) warnDamage() {
	var found []string
	if r := c.env.rings; r != nil && r.damaged > 0 {
		found = append(found, fmt.Sprintf("rings of records found written over %s, what they held dropped", times(r.damaged)))
	}
	if l := c.env.ledgers; l != nil && l.damaged > 0 {
		found = append(found, fmt.Sprintf("books of timed calls found written over %s, taken back as they were at their thread's last signal", times(l.damaged)))
	}
	if !c.guardIntact() {
		found = append(found, "the guard at its end")
	}
	if len(found) > 0 {
		c.env.warn(prf.SharedDamaged(strings.Join(found, "; ")))
	}
}

// times says how many times: "once", "twice", "3 times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}
