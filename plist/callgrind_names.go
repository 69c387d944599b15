package plist

import (
	"fmt"
	"strings"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// callgrindNames writes the names of a callgrind profile: [prf.Printable],
// so that a name stays on its line, and, where a name would be read as a
// compressed one ("(3)" or "(3) name", which callgrind_annotate and
// KCachegrind take for the name given the id 3 before, or for a new id),
// compressed itself: given an id of its own at its first use, then
// written as that id. Other names are written whole each time.
type callgrindNames map[string]map[string]int

// get returns name as written in context ctx: "fl" (fl=, cfl=), "fn"
// (fn=, cfn=) or "ob" (ob=, cob=), each with ids of its own.
func (c callgrindNames) get(ctx, name string) string {
	name = prf.Printable(name)
	if !compressedLike(name) {
		return name
	}
	if c[ctx] == nil {
		c[ctx] = map[string]int{}
	}
	if id, ok := c[ctx][name]; ok {
		return fmt.Sprintf("(%d)", id)
	}
	id := len(c[ctx]) + 1
	c[ctx][name] = id
	return fmt.Sprintf("(%d) %s", id, name)
}

// compressedLike reports whether a callgrind name would be read as a
// compressed one: "(", digits, ")".
func compressedLike(name string) bool {
	digits, ok := strings.CutPrefix(name, "(")
	if !ok {
		return false
	}
	n := 0
	for n < len(digits) && digits[n] >= '0' && digits[n] <= '9' {
		n++
	}
	return n > 0 && n < len(digits) && digits[n] == ')'
}
