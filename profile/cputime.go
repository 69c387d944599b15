package profile

// The threads' time on a CPU over a function timing run
// (datafile.Stats.CPUTime; docs/linux.md, "Timing"). A function's time
// is elapsed: a call that sleeps, reads or waits for a lock is charged
// the wait. Set beside the total time, the threads' time on a CPU says
// how much of it they ran, and the report says when they mostly waited.

// onCPU holds the program's threads' times on a CPU, read from the
// kernel (process.cpuTime) when a thread's clock opens (openThreadBooks)
// and again when it ends: at its exit stop, the last moment the kernel
// shows it, or at the end of the run for a thread still there (an
// attached process let go). Each thread's difference is added to sum. A
// thread whose time could not be read either time is left out (one
// killed, which has no exit stop): sum is then less than the threads'
// time, never more. A foreign process (a vfork child before its exec)
// is not the program's: its clock never opens. Nothing is read where
// proc is nil: a run that times no function.
type onCPU struct {
	proc process
	// from is the time on a CPU of each thread whose clock is open, as
	// it opened, of the threads whose time could be read then.
	from map[int]int64
	sum  int64
	// opened, where set, is told each thread's time on a CPU as its
	// clock opens (the ledgers count its waits from then: clockPages).
	opened func(th *thread, ns int64)
}

// open reads thread th's time on a CPU as its clock opens.
func (c *onCPU) open(th *thread) {
	if c.proc == nil {
		return
	}
	ns, err := c.proc.cpuTime(th.tgid, th.tid)
	if err != nil {
		return
	}
	if c.from == nil {
		c.from = map[int]int64{}
	}
	c.from[th.tid] = ns
	if c.opened != nil {
		c.opened(th, ns)
	}
}

// close adds thread th's time on a CPU since its clock opened, read now,
// once: at its exit stop, or at the end of the run.
func (c *onCPU) close(th *thread) {
	from, ok := c.from[th.tid]
	if !ok {
		return
	}
	delete(c.from, th.tid)
	if ns, err := c.proc.cpuTime(th.tgid, th.tid); err == nil {
		c.sum += max(ns-from, 0)
	}
}

// forget leaves thread tid out: it is gone, and its time can no longer
// be read (an ID the kernel may give again).
func (c *onCPU) forget(tid int) { delete(c.from, tid) }
