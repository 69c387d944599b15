package datafile

import (
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestLockDir checks that a second lock of a directory waits for the first
// to be released, and that locks of other directories do not.
func TestLockDir(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	unlock, err := LockDir(filepath.Join(dir, "x.pbt"))
	if err != nil {
		t.Fatal(err)
	}
	free, err := LockDir(filepath.Join(other, "y.pbt"))
	if err != nil {
		t.Fatal(err)
	}
	free()

	var mu sync.Mutex
	var order []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		second, err := LockDir(filepath.Join(dir, "x.pbo"))
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		order = append(order, "second")
		mu.Unlock()
		second()
	}()
	time.Sleep(50 * time.Millisecond) // the second is waiting by now
	mu.Lock()
	order = append(order, "first")
	mu.Unlock()
	unlock()
	<-done
	if len(order) != 2 || order[0] != "first" {
		t.Errorf("order %q, want the second lock after the first released", order)
	}
	if _, err := LockDir(filepath.Join(dir, "nosuchdir", "x.pbt")); err == nil {
		t.Error("a missing directory was locked")
	}
}
