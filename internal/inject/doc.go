// Package inject lets tests slow down or break one step of a kinst run
// from outside the process, through the KINST_INJECT environment
// variable, so that they can send a signal while that step is in
// progress or watch kinst roll back a failure it cannot otherwise be
// made to meet.
//
// KINST_INJECT holds comma-separated settings of the form point.delay=D
// and point.fail=N: the first makes every pass through point wait D (a
// time.ParseDuration string), or with D@N only the Nth, the second makes
// the Nth pass through point fail with ErrInjected. Unset, every call returns at once with
// nil, so kinst behaves as if the package were not there.
package inject
