package e2e

import (
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// kernelPhase is what testdata/progs/c/kernel.c printed of one phase:
// its thread's user and system time in it, in microseconds.
type kernelPhase struct{ user, sys float64 }

var kernelPhaseLine = regexp.MustCompile(`phase (\w+) user=(\d+) sys=(\d+)`)

// parseKernelPhases reads kernel.c's output.
func parseKernelPhases(t *testing.T, out string) map[string]kernelPhase {
	t.Helper()
	phases := map[string]kernelPhase{}
	for _, m := range kernelPhaseLine.FindAllStringSubmatch(out, -1) {
		u, _ := strconv.ParseFloat(m[2], 64)
		s, _ := strconv.ParseFloat(m[3], 64)
		phases[m[1]] = kernelPhase{u, s}
	}
	if len(phases) != 3 {
		t.Fatalf("the program's output %q: want 3 phases", out)
	}
	return phases
}

// sampleKernelFixture builds kernel.c with flags, prepares its functions
// for sampling, runs it with PROFILE's options profileOpts, 300 ms a
// phase, and merges the run: it returns the directory, the program's
// name, its phases' times and the database.
func sampleKernelFixture(t *testing.T, flags, profileOpts []string) (string, string, map[string]kernelPhase, sampled) {
	t.Helper()
	prog := testutil.BuildC(t, "kernel", flags...)
	dir, r := workflowWith(t, prog, []string{"/FS", "/INC", "in_syscalls", "/INC", "via_libc", "/INC", "in_user", "/INC", "main"}, profileOpts, "1000")
	if r.status != 0 {
		t.Fatalf("profile: status %d\n%s", r.status, r.stderr)
	}
	needsPerf(t, r.stderr)
	name := filepath.Base(prog)
	return dir, name, parseKernelPhases(t, r.stdout), openSampled(t, dir, name)
}

// kernelAllowed reports whether the kernel lets PROFILE sample its code:
// a perf_event_paranoid of 1 or less, or CAP_PERFMON (38) or
// CAP_SYS_ADMIN (21) in the effective set.
func kernelAllowed(t *testing.T) bool {
	if b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n <= 1 {
			return true
		}
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			return err == nil && caps&(1<<38|1<<21) != 0
		}
	}
	return false
}

// TestSamplingKernel samples a program that spends known shares of its
// CPU time in the kernel (testdata/progs/c/kernel.c): where the kernel
// allows it, every phase's samples are its thread's whole CPU time; the
// samples in the kernel are charged to the function whose code made the
// system call (in_syscalls, its own instruction) as the kernel's split
// of the phase's time into user and system time, within the error of the
// ticks of both (splitTolerance: 10 points at least, 12 here of a second
// at 250 Hz), or for the C library's read to its caller's time with
// children (via_libc), and a function spinning in user space has none;
// the report shows the samples in the kernel and each function's share. Where the kernel refuses, the run has no kernel samples and
// records the kernel time no sample saw.
func TestSamplingKernel(t *testing.T) {
	testutil.MustHavePtrace(t)
	for _, b := range []build{{"O2", []string{"-O2"}}, {"O0-pie", []string{"-O0", "-pie", "-fPIE"}}} {
		t.Run(b.name, func(t *testing.T) {
			dir, name, phases, s := sampleKernelFixture(t, b.flags, nil)
			sm := &s.m.Stats.Sampling
			report := must(t, dir, "plist", "/nologo", name).stdout
			if !kernelAllowed(t) {
				if sm.KernelSamples != nil || sm.Kernel != 0 || sm.KernelTime <= 0 || !strings.Contains(report, "Kernel time (not sampled)") {
					t.Errorf("the kernel refuses its samples here: kernel samples %v (%d), kernel time %d\n%s", sm.KernelSamples, sm.Kernel, sm.KernelTime, report)
				}
				return
			}
			if sm.KernelSamples == nil || sm.KernelTime != 0 {
				t.Fatalf("the kernel was not sampled: kernel samples %v, kernel time %d", sm.KernelSamples, sm.KernelTime)
			}
			hz := kernelHZ()
			for _, c := range []struct {
				fn       string
				children bool // the kernel's time is the function's with children
			}{
				{"in_syscalls", false},
				{"via_libc", true},
				{"in_user", false},
			} {
				i, ph := s.fn(t, c.fn), phases[c.fn]
				own, kown := float64(sm.Samples[i]), float64(sm.KernelSamples[i])
				all, kall := float64(s.m.Stats.ChildTime[i])/float64(sm.Interval), float64(sm.KernelChildSamples[i])
				t.Logf("%s: %.0f samples (%.0f in the kernel), %.0f with children (%.0f); CPU time %.0f ms user, %.0f ms system",
					c.fn, own, kown, all, kall, ph.user/1e3, ph.sys/1e3)
				if low, high := sampleBounds(s, ph.user+ph.sys, 10); all < low || all > high {
					t.Errorf("%s: %.0f samples with children, want %.0f to %.0f, for its CPU time, the kernel's included", c.fn, all, low, high)
				}
				share := 100 * ph.sys / (ph.user + ph.sys)
				got, of := percentOf(kall, all), all
				if !c.children {
					got, of = percentOf(kown, own), own
				}
				if tol := splitTolerance(share, ph.user+ph.sys, hz, of); math.Abs(got-share) > tol {
					t.Errorf("%s: %.1f %% of its samples in the kernel, its system time %.1f %% of its CPU time (within %.1f points, the kernel's ticks at %d Hz)", c.fn, got, share, tol, hz)
				}
				if c.children && kown > 0.05*kall+2 {
					t.Errorf("%s: %.0f of its own samples in the kernel: its code makes no system call", c.fn, kown)
				}
			}
			if !strings.Contains(report, fmt.Sprintf("Samples in the kernel: %d,", sm.Kernel)) || !strings.Contains(report, "Kernel Time of Functions") {
				t.Errorf("the report shows no kernel samples:\n%s", report)
			}
		})
	}
}

// sampleBounds returns the samples a phase of cpu microseconds of CPU
// time is held to, low and high: one every sampling interval, within 20 %
// and pad. Under emulation a phase's clock gives from 0.25 to 0.9 of the
// samples its CPU time would (measured in the 16K-page VM beside a host
// running two busy loops: the kernel's clock event fires once for the
// intervals the stalled virtual CPU missed, and the share varies from
// phase to phase of one run, so no phase's rate is another's), and the
// emulated kernel splits a phase's time between user and system by
// whole ticks: there a phase is held to between a fourth of the
// interval's samples and 1.2 times them, within pad, which still tells
// no samples, or the kernel's counted where they should not be, from
// the phase's own.
func sampleBounds(s sampled, cpu, pad float64) (low, high float64) {
	nominal := cpu * 1e3 / float64(s.m.Stats.Sampling.Interval) // (cpu in microseconds, the interval in nanoseconds)
	if testutil.Slow() {
		return nominal/4 - pad, 1.2*nominal + pad
	}
	return 0.8*nominal - pad, 1.2*nominal + pad
}

// kernelHZ is the kernel's ticks a second (CONFIG_HZ, from
// /proc/config.gz), 100 where its configuration is not there to read:
// the fewest ticks of the usual configurations.
func kernelHZ() int {
	f, err := os.Open("/proc/config.gz")
	if err != nil {
		return 100
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return 100
	}
	config, err := io.ReadAll(z)
	if err != nil {
		return 100
	}
	for line := range strings.Lines(string(config)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "CONFIG_HZ="); ok {
			if hz, err := strconv.Atoi(v); err == nil && hz > 0 {
				return hz
			}
		}
	}
	return 100
}

// splitTolerance is how far, in points, a phase's share of samples in
// the kernel may be from the share of its CPU time (cpu microseconds)
// the kernel counts as system time, share %: both are shares of ticks.
// The kernel splits a thread's time by the mode its own ticks find it in
// (hz a second, with tick-based accounting), and the samples are samples
// of their own: four standard errors of the difference of two binomial
// shares, 10 points at least, and under emulation 40 (beside a busy host
// the emulated kernel gave a phase spinning in user space 37 % of
// system time).
func splitTolerance(share, cpu float64, hz int, samples float64) float64 {
	if testutil.Slow() {
		return 40
	}
	p := share / 100
	return max(10, 4*100*math.Sqrt(tickVariance(p, cpu, hz)+p*(1-p)/max(samples, 1)))
}

// tickVariance is the variance of the share p of cpu microseconds of a
// thread's CPU time the kernel counts in one mode, user or system, by
// its ticks (hz a second): a binomial share of the ticks.
func tickVariance(p, cpu float64, hz int) float64 {
	return p * (1 - p) / max(cpu/1e6*float64(hz), 1)
}

// percentOf is 100 part/whole, 0 of nothing.
func percentOf(part, whole float64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * part / whole
}

// TestSamplingUserOnly samples kernel.c with profile --user-only: no
// sample is taken in the kernel, so the phase in system calls has a
// sample a millisecond of its user time alone, and the run records the
// kernel time no sample saw, which the report gives apart; a run that
// samples the kernel then does not merge into its database.
func TestSamplingUserOnly(t *testing.T) {
	testutil.MustHavePtrace(t)
	dir, name, phases, s := sampleKernelFixture(t, []string{"-O2"}, []string{"--user-only"})
	sm := &s.m.Stats.Sampling
	if sm.KernelSampled() || sm.Kernel != 0 || sm.KernelTime <= 0 {
		t.Errorf("kernel samples %v (%d), kernel time %d: want none, and the kernel time apart", sm.KernelSamples, sm.Kernel, sm.KernelTime)
	}
	i, ph := s.fn(t, "in_syscalls"), phases["in_syscalls"]
	all := float64(s.m.Stats.ChildTime[i]) / float64(sm.Interval)
	// (The user time is the kernel's split by its ticks: four of its
	// standard errors, in samples, on top.)
	cpu := ph.user + ph.sys
	tickErr := cpu * math.Sqrt(tickVariance(ph.user/cpu, cpu, kernelHZ())) * 1e3 / float64(sm.Interval)
	if low, high := sampleBounds(s, ph.user, 15+4*tickErr); all < low || all > high {
		t.Errorf("in_syscalls: %.0f samples with children, want %.0f to %.0f, for its user time alone (%.0f ms user, %.0f ms system)", all, low, high, ph.user/1e3, ph.sys/1e3)
	}
	if out := must(t, dir, "plist", "/nologo", name).stdout; !strings.Contains(out, "Kernel time (not sampled)") || strings.Contains(out, "Samples in the kernel") {
		t.Errorf("the report does not give the kernel time apart:\n%s", out)
	}
	// A run that samples the kernel does not merge into a database of
	// runs that did not (PRF1304).
	if !kernelAllowed(t) {
		return
	}
	must(t, dir, "profile", "/nologo", name, "20")
	if r := tool(t, dir, "prep", "/nologo", "/M", name); r.status == 0 || !strings.Contains(r.stdout+r.stderr, "PRF1304") {
		t.Errorf("a run that sampled the kernel merged into a database of user space's: status %d\n%s%s", r.status, r.stdout, r.stderr)
	}
}
