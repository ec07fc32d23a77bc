package session

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// CheckPid refuses a pid that names no process, for -p and the
// instruments' --pid alike: a run restricted to it would trace nothing.
func CheckPid(pid int) error {
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("pid %d: no such process", pid)
	}
	return nil
}

// A procWatch waits for a process to exit: the run under -p ends with
// the process it is restricted to, as in bpftrace.
type procWatch struct {
	pid  int
	fd   *os.File // a pidfd; nil before Linux 5.10, which has no PIDFD_NONBLOCK
	gone bool     // the process had exited when the watch began
	done chan struct{}
	once sync.Once
}

// pidPoll is how often a kernel without pollable pidfds is asked
// whether the process still lives.
const pidPoll = 100 * time.Millisecond

// watchProcess begins watching process pid. A pidfd taken now makes
// an exit at any later time count, even one before wait is called.
func watchProcess(pid int) *procWatch {
	w := &procWatch{pid: pid, done: make(chan struct{})}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	switch {
	case err == nil:
		// Nonblocking, the pidfd goes to Go's poller, and close
		// wakes a wait in progress.
		w.fd = os.NewFile(uintptr(fd), fmt.Sprintf("pidfd:%d", pid))
	case errors.Is(err, unix.ESRCH):
		w.gone = true
	}
	return w
}

// wait blocks until the process exits and reports true, or until the
// watch is closed and reports false.
func (w *procWatch) wait() bool {
	if w.gone {
		return true
	}
	if w.fd == nil {
		t := time.NewTicker(pidPoll)
		defer t.Stop()
		for {
			select {
			case <-w.done:
				return false
			case <-t.C:
				if unix.Kill(w.pid, 0) == unix.ESRCH {
					return true
				}
			}
		}
	}
	rc, err := w.fd.SyscallConn()
	if err != nil {
		return false
	}
	// A pidfd polls readable once the process has exited.
	err = rc.Read(func(fd uintptr) bool {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		return err == nil && n > 0
	})
	return err == nil
}

// close ends the watch, and a wait in progress.
func (w *procWatch) close() {
	w.once.Do(func() {
		close(w.done)
		if w.fd != nil {
			w.fd.Close()
		}
	})
}
