// Breakpoints: a thread stopped at one of PROFILE's breakpoints, its hit
// booked, and the instruction under it carried out (emulated, or run from
// the site's slot) or, for coverage, the breakpoint taken out.

package profile

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/profile/ptrace"
)

// trap handles a SIGTRAP stop without an event: a breakpoint, the end of a
// single step, or the program's own SIGTRAP.
func (t *tracer) trap(th *thread) error {
	if err := ptrace.GetRegs(th.tid, &t.regs); err != nil {
		if ptrace.IsNoProcess(err) {
			return nil
		}
		return fmt.Errorf("read registers of thread %d: %w", th.tid, err)
	}
	if s := th.stepping; s != nil {
		th.stepping = nil
		if err := s.disp.AfterStep(&t.regs, t.mem); err != nil {
			return fmt.Errorf("finish step at %#x: %w", s.addr, err)
		}
		return t.setAndResume(th, th.takePending())
	}
	pc := t.regs.PC()
	addr := t.arch.BreakpointAddr(pc)
	s := t.sites[addr]
	if after := addr + uint64(len(t.arch.Breakpoint())); s == nil && t.inproc.ringFull(after) {
		// Its ring was full, and has been read: it tries again.
		t.ringStopped(th, t.arch.SP(&t.regs))
		t.fullRings++
		if pc != after {
			t.regs.SetPC(after) // past arm64's BRK
			return t.setAndResume(th, 0)
		}
		return t.resume(th.tid, 0)
	}
	if s == nil {
		if r := t.retired[addr]; r != nil {
			return t.retrapped(th, r)
		}
		// Not ours: the program's own trap, delivered unchanged (or a
		// copy of a breakpoint, which PROFILE says).
		t.copyOfBreakpoint(addr)
		t.ownTraps = true
		return t.resume(th.tid, syscall.SIGTRAP)
	}
	if s.rendezvous {
		return t.rendezvousHit(th, s)
	}
	th.retrap = 0
	t.trapped++
	switch {
	case th.foreign:
	case t.books != nil:
		t.book(th, s)
	case t.lineSites != nil:
		if err := t.cover(s); err != nil {
			return err
		}
	default:
		t.hits[s.item]++
		for _, i := range s.more {
			t.hits[i]++
		}
	}
	if s.item < 0 && t.timeInProcess && t.plan.Funcs[s.exit].Frame == datafile.FrameSP {
		if s.hits++; s.hits == exitStops {
			// A hot exit: its frames close from the stack pointer from
			// now on (timing.go).
			t.cfg.Warn(prf.ExitTakenOut(t.plan.Funcs[s.exit].Name, exitStops))
			return t.retire(th, s)
		}
	}
	if s.pending && !(t.coverage && !th.foreign) {
		if !t.displaceLater(s) {
			return t.retire(th, s)
		}
	}
	if t.coverage && (!th.foreign || !s.displaced) {
		// (A vfork child on a breakpoint that cannot be stepped over
		// removes it: the program's own first hit there is then lost, which
		// is better than a child killed.)
		return t.retire(th, s)
	}
	return t.displace(th, s)
}

// displace carries out the instruction under a breakpoint for a stopped
// thread, the breakpoint staying in place.
func (t *tracer) displace(th *thread, s *site) error {
	d := &s.disp
	switch {
	case d.Emulate != nil:
		if err := d.Emulate(&t.regs, t.mem); err != nil {
			return fmt.Errorf("emulate %s at %#x: %w", d.Inst.Text, s.addr, err)
		}
		return t.setAndResume(th, 0)
	case d.SingleStep:
		t.regs.SetPC(s.slot)
		if err := ptrace.SetRegs(th.tid, &t.regs); err != nil {
			return fmt.Errorf("write registers of thread %d: %w", th.tid, err)
		}
		th.stepping = s
		t.noteRelease()
		if err := ptrace.Step(th.tid); err != nil && !ptrace.IsNoProcess(err) {
			return fmt.Errorf("step thread %d: %w", th.tid, err)
		}
		return nil
	default:
		t.regs.SetPC(s.slot)
		return t.setAndResume(th, 0)
	}
}

// retire removes a coverage breakpoint after its first hit and lets the
// thread run the restored instruction in place. Other threads that trapped
// on it meanwhile find it in t.retired.
func (t *tracer) retire(th *thread, s *site) error {
	if err := t.unplant(s); err != nil {
		return err
	}
	delete(t.sites, s.addr)
	t.retired[s.addr] = s
	t.regs.SetPC(s.addr)
	return t.setAndResume(th, 0)
}

// unplant takes the breakpoint of site s out of the program's memory.
func (t *tracer) unplant(s *site) error {
	if staleCode {
		return nil
	}
	if err := t.mem.WriteMem(s.addr, s.orig); err != nil {
		return fmt.Errorf("remove breakpoint: %w", err)
	}
	return nil
}

// staleCode, set by tests only, makes the processor run a stale copy of
// the code as retrapped describes: the breakpoints PROFILE removes stay
// in memory, and PROFILE, looking, believes them gone.
var staleCode bool

// retrapped handles a thread stopped at the breakpoint of retired site
// s. It trapped there before the breakpoint was removed, and runs the
// restored instruction in place. A thread that traps there again at once
// finds either the breakpoint back in memory (written out again, with a
// warning), or memory holding the original instruction while the
// processor still runs the breakpoint: a stale copy of the code, which
// qemu's emulation of arm64 was seen to keep for minutes, every thread
// trapping there at every pass. Sent back again and again, the threads
// would never get past it; the instruction is carried out of line
// instead, at this pass and every later one (StaleCode, PRF4672).
func (t *tracer) retrapped(th *thread, s *site) error {
	if s.stale {
		return t.displace(th, s)
	}
	if th.retrap == s.addr {
		back, err := t.restore(s)
		if err != nil {
			return err
		}
		if !back {
			if err := t.displaceStale(s); err != nil {
				return err
			}
			t.warnOnce(prf.StaleCode(s.addr))
			s.stale = true
			return t.displace(th, s)
		}
	}
	th.retrap = s.addr
	t.regs.SetPC(s.addr)
	return t.setAndResume(th, 0)
}

// displaceStale prepares the displacement of retired site s, whose
// breakpoint the processor runs though memory no longer holds it: a
// coverage site was never displaced. A site whose instruction cannot be
// carried out of line ends the run: the program could not get past it.
func (t *tracer) displaceStale(s *site) error {
	if s.displaced {
		return nil
	}
	err := errors.New("its instruction cannot be carried out of line")
	if s.pending {
		err = t.prepareDisplace(s)
	}
	if err != nil {
		return fmt.Errorf("the processor still runs the breakpoint removed at %#x, though memory holds the original instruction: %w", s.addr, err)
	}
	return nil
}

// restore writes the original bytes of a removed breakpoint again, when
// the memory holds the breakpoint still, and warns of it: a thread sent
// back to run the restored instruction trapped there again. It reports
// whether it found the breakpoint back.
func (t *tracer) restore(s *site) (bool, error) {
	b := make([]byte, len(s.orig))
	if err := t.mem.ReadMem(s.addr, b); err != nil || !bytes.Equal(b, t.arch.Breakpoint()) || staleCode {
		return false, nil
	}
	t.cfg.Warn(prf.BreakpointBack(s.addr))
	if err := t.mem.WriteMem(s.addr, s.orig); err != nil {
		return true, fmt.Errorf("remove breakpoint again: %w", err)
	}
	return true, nil
}

func (t *tracer) setAndResume(th *thread, sig syscall.Signal) error {
	if err := ptrace.SetRegs(th.tid, &t.regs); err != nil {
		if ptrace.IsNoProcess(err) {
			return nil
		}
		return fmt.Errorf("write registers of thread %d: %w", th.tid, err)
	}
	return t.resume(th.tid, sig)
}
