package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// childArg, as the first argument, makes the command a helper that runs
// as the traced command under a tool's -c option.
const childArg = "child"

// The helper's modes. Each writes one decimal number of nanoseconds to
// the file it is given.
const (
	// exitStamp writes CLOCK_MONOTONIC and exits: the moment the traced
	// command ends, as near as a process can tell.
	exitStamp = "exit-stamp"
	// execStamp writes CLOCK_MONOTONIC and then executes the rest of its
	// arguments in its own place, so the command keeps the pid the tool
	// knows as cpid.
	execStamp = "exec-stamp"
	// cpuTime runs the rest of its arguments as a child and writes the
	// CPU time it used, user and system: what the probes add to its
	// system calls, without the tool's own start and exit, and without
	// the time other load on the machine keeps it waiting.
	cpuTime = "cpu-time"
)

var errChildUsage = errors.New("usage: bench child exit-stamp FILE | exec-stamp FILE CMD... | cpu-time FILE CMD...")

// runChild carries out one helper mode.
func runChild(args []string) error {
	if len(args) < 2 {
		return errChildUsage
	}
	mode, file, cmd := args[0], args[1], args[2:]
	switch mode {
	case exitStamp:
		if len(cmd) != 0 {
			return errChildUsage
		}
		return writeNanos(file, monotonic())
	case execStamp:
		if len(cmd) == 0 {
			return errChildUsage
		}
		path, err := exec.LookPath(cmd[0])
		if err != nil {
			return err
		}
		if err := writeNanos(file, monotonic()); err != nil {
			return err
		}
		return fmt.Errorf("exec %s: %w", path, syscall.Exec(path, cmd, os.Environ()))
	case cpuTime:
		if len(cmd) == 0 {
			return errChildUsage
		}
		c := exec.Command(cmd[0], cmd[1:]...)
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		if err := c.Run(); err != nil {
			return fmt.Errorf("run %s: %w", cmd[0], err)
		}
		return writeNanos(file, int64(c.ProcessState.UserTime()+c.ProcessState.SystemTime()))
	}
	return fmt.Errorf("unknown mode %q: %w", mode, errChildUsage)
}

// monotonic reads CLOCK_MONOTONIC directly, so that stamps written by a
// helper and times taken by the harness share one clock.
func monotonic() int64 {
	var ts unix.Timespec
	// The call fails only for an unknown clock or a bad pointer.
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// clock gives CLOCK_MONOTONIC from Go's own monotonic readings, which
// cost a vDSO call rather than the system call monotonic makes: the
// harness takes one for every line the tools print.
type clock struct {
	base     time.Time
	baseMono int64
}

func newClock() clock {
	return clock{base: time.Now(), baseMono: monotonic()}
}

func (c clock) now() int64 { return c.baseMono + int64(time.Since(c.base)) }

func writeNanos(file string, ns int64) error {
	return os.WriteFile(file, strconv.AppendInt(nil, ns, 10), 0o644)
}

func readNanos(file string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", file, err)
	}
	return ns, nil
}
