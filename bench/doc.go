// Command bench measures kinst side by side with bpftrace on the machine it
// runs on: start-up wall time, the delay between a -c command's exit and
// the maps on standard output, peak memory, binary size, the cost of a
// counting probe per event and the rate of printf events delivered to
// user space; and, when asked for by -run soak, a long run at a million
// events a second that checks every event is delivered or reported lost
// and that memory stays flat.
//
// Usage, from the module root:
//
//	go run ./bench [-short] [-n REPS] [-run ITEMS] [-v]
//
// Both tools run the same programs in alternating order, repetition by
// repetition, so that drift in the machine's load touches both alike. The
// table gives each figure's median with its range, the ratio kinst to
// bpftrace and the target. Missing a target is reported, not
// fatal: the exit status is non-zero only when a figure could not be
// measured (a tool failed, printed the wrong result, or the harness did).
//
// The command also runs as its own helper under the tools' -c option
// ("bench child ..."), to stamp CLOCK_MONOTONIC times from inside the
// traced command; see README.md.
package main
