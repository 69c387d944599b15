package ptrace

import "errors"

// RingError is OpenSampler's failure to map the ring of an event the
// kernel opened: its limit on the rings' locked memory (EPERM past
// perf_event_mlock_kb and RLIMIT_MEMLOCK), not a refusal of the event.
type RingError struct{ Err error }

func (e *RingError) Error() string { return e.Err.Error() }
func (e *RingError) Unwrap() error { return e.Err }

// IsRingError reports whether err is a [RingError].
func IsRingError(err error) bool {
	var r *RingError
	return errors.As(err, &r)
}
