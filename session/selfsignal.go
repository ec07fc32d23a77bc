package session

import (
	"fmt"

	"kinst.dev/kinst/compat"
)

// usr1 handles SIGUSR1: bpftrace 0.17 prints the maps, bpftrace 0.26
// leaves that to the program's self:signal:SIGUSR1 probes, which the
// event loop runs.
func (s *Session) usr1() {
	if s.out.Compat == compat.V017 {
		s.printNow.Store(true)
	}
	s.usr1Now.Store(true)
	s.wake()
}

// runSignalProbes runs the self:signal:SIGUSR1 probes once each, in
// program order; what they print goes through the ring buffer as any
// probe's output.
func (s *Session) runSignalProbes() {
	if err := s.runSpecial("self"); err != nil {
		fmt.Fprintf(s.opts.Stderr, "kinst: %v\n", err)
	}
}
