package session

import (
	"errors"
	"fmt"
	"io"
	"syscall"

	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/codegen"
)

// watchKey is one watchpoint set at run time: a target of a
// watchpoint:FUNC+argN probe at one address.
type watchKey struct {
	target *check.Target
	addr   uint64
}

// tracedPid is the process watchpoints on arguments watch: -p's, or the
// -c command.
func (s *Session) tracedPid() int {
	if s.opts.Pid != 0 {
		return s.opts.Pid
	}
	return s.cmd.pid()
}

// setWatch carries out a watch record: the function of a
// watchpoint:FUNC+argN probe was called with the address in the record.
// The watchpoint is set once per target and address, as in bpftrace;
// then a process the probe stopped goes on, whatever happened, once
// the records already sent are handled: several watchpoints on one
// function stop it once, and all of them are set before it goes on.
func (s *Session) setWatch(a *codegen.Action, body []byte) error {
	addr := le.Uint64(body[a.Args.Offsets[0]:])
	pid := s.tracedPid()
	if !a.Target.Watch.Async {
		s.stopped = true
	}
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.stopping.Load() || s.noWatch {
		// The run ends: a watchpoint set now might be set after detach
		// took the others, and would be left behind.
		return nil
	}
	if s.watches == nil {
		s.watches = map[watchKey][]io.Closer{}
	}
	key := watchKey{a.Target, addr}
	if _, ok := s.watches[key]; ok {
		return nil
	}
	w := a.Target.Attach.(attach.Watchpoint)
	w.Addr = addr
	links, err := attach.Watch(s.coll.Programs[a.Program.Name], w, pid)
	if errors.Is(err, attach.ErrNoDebugRegisters) {
		// Said once per target and address: later calls with it are
		// ignored, as bpftrace ignores them.
		s.watches[key] = nil
		return s.w.WatchpointsFull()
	}
	if err != nil {
		// As in bpftrace, a watchpoint that cannot be set ends the run.
		s.runErr = fmt.Errorf("%s: %w", a.Target.FullName(), err)
		s.stop()
		return nil
	}
	s.watches[key] = links
	return nil
}

// unwatch removes every watchpoint set at run time on addr; an address
// not watched is no error, as in bpftrace.
func (s *Session) unwatch(a *codegen.Action, body []byte) error {
	addr := le.Uint64(body[a.Args.Offsets[0]:])
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	var errs []error
	for k, links := range s.watches {
		if k.addr == addr {
			errs = append(errs, attach.Detach(links))
			delete(s.watches, k)
		}
	}
	return errors.Join(errs...)
}

// resume lets the process a watchpoint setup stopped go on.
func (s *Session) resume() {
	if s.stopped {
		s.stopped = false
		syscall.Kill(s.tracedPid(), syscall.SIGCONT)
	}
}

// resumeTraced lets the traced process go on when a watchpoint setup
// may have stopped it and its record was never read: at the end of a
// run, and once records were lost. The setup program sends SIGCONT
// itself when the ring buffer refuses its record, but that may fail:
// from a probe, which runs with preemption disabled, the kernel (5.3+)
// sends signals through one work item per CPU, and refuses another
// while the SIGSTOP just sent is still queued there.
func (s *Session) resumeTraced() {
	if s.tracedPid() == 0 {
		return
	}
	for _, p := range s.loaded {
		for _, t := range p.Targets {
			if t.Watch != nil && !t.Watch.Async {
				syscall.Kill(s.tracedPid(), syscall.SIGCONT)
				return
			}
		}
	}
}
