package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst/internal/testenv"
)

// openPty opens a pseudo-terminal and returns its two ends.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// TestProgressLine: on a terminal, attaching that takes more than a
// second shows a progress line on stderr, erased once done; -q shows
// none, and neither does a stderr that is not a terminal (every other
// test).
func TestProgressLine(t *testing.T) {
	testenv.Root(t)
	const prog = `interval:ms:100 { exit(); } interval:ms:200 { exit(); }`
	for _, quiet := range []bool{false, true} {
		master, slave := openPty(t)
		args := []string{"-e", prog}
		if quiet {
			args = append([]string{"-q"}, args...)
		}
		cmd := exec.Command(testenv.Kinst(t), args...)
		cmd.Env = append(os.Environ(), "KINST_COMPAT=", "KINST_INJECT=attach.delay=800ms")
		cmd.Stderr = slave
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		if err := cmd.Run(); err != nil {
			t.Fatalf("kinst %q: %v", args, err)
		}
		slave.Close()
		got, _ := io.ReadAll(master) // EIO once the terminal has no writer
		text := string(got)
		line := "\r\x1b[Kkinst: attaching "
		switch {
		case quiet && strings.Contains(text, line):
			t.Errorf("-q: a progress line on the terminal: %q", text)
		case !quiet && (!strings.Contains(text, line+"1 of 2 probes") && !strings.Contains(text, line+"2 of 2 probes") || !strings.Contains(text, "probes\r\x1b[K")):
			t.Errorf("no progress line, or not erased, on the terminal: %q", text)
		}
	}
}
