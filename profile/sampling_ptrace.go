// The ptrace sampler of function sampling (sampling.go), where the
// kernel refuses its clock events: every interval PROFILE interrupts each
// thread that used an interval of CPU time, and at its stop reads its
// program counter.

package profile

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// ptraceRounds are the ptrace sampler's books: each thread's CPU time at
// its last sample, and what is left of it short of an interval; when each
// thread interrupted for a sample was; when the last round was.
type ptraceRounds struct {
	ran         map[int]int64
	credit      map[int]int64
	interrupted map[int]time.Time
	round       time.Time
}

// newPtraceRounds returns the books of a run with no round yet.
func newPtraceRounds() ptraceRounds {
	return ptraceRounds{ran: map[int]int64{}, credit: map[int]int64{}, interrupted: map[int]time.Time{}}
}

// forget drops what the books hold of thread tid, gone.
func (r *ptraceRounds) forget(tid int) {
	delete(r.ran, tid)
	delete(r.credit, tid)
	delete(r.interrupted, tid)
}

// weigh returns the intervals thread tid, which has run ran nanoseconds
// of CPU time, used since its last sample, and keeps what is left short
// of an interval for the next.
func (r *ptraceRounds) weigh(tid int, ran int64, interval time.Duration) int64 {
	credit := r.credit[tid] + ran - r.ran[tid]
	r.ran[tid] = ran
	n := credit / int64(interval)
	r.credit[tid] = credit - n*int64(interval)
	return n
}

// wantsRound reports whether the ptrace sampler is due a round: every
// thread is looked at once an interval.
func (s *sampler) wantsRound() bool {
	return s.kind == datafile.PtraceSampler && !s.stopped && time.Since(s.rounds.round) >= s.interval
}

// waiting says whether the ptrace sampler does rounds while PROFILE
// waits for stops, and how often it looks for one due (idleHook).
func (s *sampler) waiting() (bool, time.Duration, bool) {
	return s.kind == datafile.PtraceSampler && !s.stopped, s.pollEvery(), false
}

// idle does the ptrace sampler's round, when one is due (idleHook).
func (s *sampler) idle() bool { return s.interruptAll() }

// pollEvery is how often the tracer looks for a round due while it waits
// for stops (ptrace sampler).
func (s *sampler) pollEvery() time.Duration {
	return min(max(s.interval/4, 50*time.Microsecond), 5*time.Millisecond)
}

// interruptAll interrupts, for a sample, every thread of the program that
// is running and has used an interval of CPU time since its last sample;
// it reports whether it interrupted any. (The stop comes as an EventStop:
// sampleStop.) A thread that sleeps, in a system call that blocks, is not
// interrupted: an interrupt would end the call with EINTR, as a stop
// signal does.
func (s *sampler) interruptAll() bool {
	if !s.wantsRound() {
		return false
	}
	r := &s.rounds
	r.round = time.Now()
	if t := s.stacks.tally; t != nil {
		// (The memory map may be read again once a round: libraries
		// loaded since the last reading, as at each reading of the
		// perf rings.)
		t.frames.drained()
	}
	interrupted := false
	for tid, th := range s.env.threads {
		// (A thread whose interrupt has not stopped it yet is not
		// interrupted again, for a while: it may be in a group stop,
		// which it leaves at the program's SIGCONT.)
		if at, ok := r.interrupted[tid]; th.foreign || ok && time.Since(at) < 100*s.interval {
			continue
		}
		if ran, err := runTime(th.tgid, tid); err == nil && ran-r.ran[tid]+r.credit[tid] < int64(s.interval) {
			continue
		}
		if !running(th.tgid, tid) {
			continue
		}
		if s.env.proc.interrupt(tid) == nil {
			r.interrupted[tid] = r.round
			interrupted = true
		}
	}
	return interrupted
}

// sampleStop takes the sample of thread th, if an interrupt of
// interruptAll stopped it: its program counter, weighed by the intervals
// of CPU time it used since its last sample (one, where the system keeps
// no schedstat).
func (s *sampler) sampleStop(th *thread) {
	tid := th.tid
	if _, ok := s.rounds.interrupted[tid]; !ok {
		return
	}
	delete(s.rounds.interrupted, tid)
	var regs ptrace.Regs
	if err := s.env.proc.getRegs(tid, &regs); err != nil {
		return
	}
	n := int64(1)
	if ran, err := runTime(th.tgid, tid); err == nil {
		n = s.rounds.weigh(tid, ran, s.interval)
	}
	if n <= 0 {
		return
	}
	s.mu.Lock()
	places := s.places.Load()
	fn, own := s.tally.place(places, regs.PC(), uint64(n), false)
	if t := s.stacks.tally; t != nil && !own {
		t.take(places, s.stacks.stopSample(s.env.proc, tid, &regs), fn, uint64(n))
	}
	s.mu.Unlock()
}

// consumed notes that the stop of thread tid an interrupt of the sampler
// would have made was taken by PROFILE itself (a system call it ran in
// the thread: stepSyscall).
func (s *sampler) consumed(tid int) { delete(s.rounds.interrupted, tid) }

// Times of the program's threads, from /proc.

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// cpuTimes returns process pid's CPU times, user and kernel, from
// /proc/PID/stat: its threads', ended ones included.
func cpuTimes(pid int) (user, kernel time.Duration, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// The fields after the command's name, which may hold anything up to
	// its last ')': state is field 3, utime 14 and stime 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, errors.New("malformed stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0, errors.New("malformed stat")
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, err
	}
	return time.Duration(u) * clockTick, time.Duration(k) * clockTick, nil
}

// running reports whether thread tid of process pid is running or
// runnable (state R in /proc/PID/task/TID/stat), not asleep in a system
// call; true when it cannot tell.
func running(pid, tid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'R'
}

// runTime returns the CPU time thread tid of process pid has run, in
// nanoseconds (/proc/PID/task/TID/schedstat, its first field).
func runTime(pid, tid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, tid))
	if err != nil {
		return 0, err
	}
	return parseSchedstat(b)
}

// parseSchedstat returns the first field of a task's schedstat, its time
// on a CPU in nanoseconds: a number not below 0.
func parseSchedstat(b []byte) (int64, error) {
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, errors.New("empty schedstat")
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || ns < 0 {
		return 0, fmt.Errorf("schedstat %q: not a time on a CPU", f[0])
	}
	return ns, nil
}
