package profile

import (
	"testing"

	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// TestBeyondOwn checks which seccomp states have PROFILE suspend a
// thread's filter for its system calls (or not make them): a filter of
// the thread's own, or strict mode, not the filters PROFILE runs under
// itself, which a program it starts inherits.
func TestBeyondOwn(t *testing.T) {
	none, strict := ptrace.Seccomp{Mode: 0, Filters: 0}, ptrace.Seccomp{Mode: 1, Filters: 0}
	filters := func(n int) ptrace.Seccomp { return ptrace.Seccomp{Mode: 2, Filters: n} }
	for _, c := range []struct {
		name    string
		st, own ptrace.Seccomp
		want    bool
	}{
		{"no filter", none, none, false},
		{"no filter, PROFILE under one", none, filters(1), false},
		{"strict mode", strict, none, true},
		{"a filter, PROFILE under none", filters(1), none, true},
		{"PROFILE's filter, inherited", filters(1), filters(1), false},
		{"one more than PROFILE's", filters(2), filters(1), true},
		{"a kernel that does not count, PROFILE under none", filters(-1), none, true},
		{"a kernel that does not count, both under filters", filters(-1), filters(-1), false},
	} {
		if got := beyondOwn(c.st, c.own); got != c.want {
			t.Errorf("%s: beyondOwn(%+v, %+v) = %v, want %v", c.name, c.st, c.own, got, c.want)
		}
	}
}
