package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestExitStamp(t *testing.T) {
	file := filepath.Join(t.TempDir(), "stamp")
	before := monotonic()
	if err := runChild([]string{exitStamp, file}); err != nil {
		t.Fatal(err)
	}
	after := monotonic()
	got, err := readNanos(file)
	if err != nil {
		t.Fatal(err)
	}
	if got < before || got > after {
		t.Errorf("stamp %d outside [%d, %d]", got, before, after)
	}
}

func TestCPUTime(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cpu")
	start := monotonic()
	// A sleep uses next to no CPU; the loop uses some.
	if err := runChild([]string{cpuTime, file, "/bin/sh", "-c", "sleep 0.2; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"}); err != nil {
		t.Fatal(err)
	}
	wall := monotonic() - start
	got, err := readNanos(file)
	if err != nil {
		t.Fatal(err)
	}
	if got < 1e6 || got > wall-150e6 {
		t.Errorf("CPU time %d ns in %d ns of wall time with a 200 ms sleep: want at least 1 ms, and the sleep not counted", got, wall)
	}
}

func TestCPUTimeFailure(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cpu")
	err := runChild([]string{cpuTime, file, "/bin/sh", "-c", "exit 4"})
	if err == nil || err.Error() != "run /bin/sh: exit status 4" {
		t.Errorf("err = %v, want the command's exit status", err)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed run left a time: %v", err)
	}
}

// TestExecStamp runs this test binary as the helper, since exec-stamp
// replaces the process: the shell it becomes must have its pid.
func TestExecStamp(t *testing.T) {
	file := filepath.Join(t.TempDir(), "stamp")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, childArg, execStamp, file, "sh", "-c", "echo $$")
	before := monotonic()
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(out)), strconv.Itoa(cmd.Process.Pid); got != want {
		t.Errorf("the command ran as pid %s, want the helper's %s", got, want)
	}
	stamp, err := readNanos(file)
	if err != nil {
		t.Fatal(err)
	}
	if stamp < before || stamp > monotonic() {
		t.Errorf("stamp %d not taken during the run", stamp)
	}
}

func TestChildUsage(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{exitStamp},
		{exitStamp, "f", "extra"},
		{execStamp, "f"},
		{cpuTime, "f"},
		{"sing", "f"},
	} {
		if err := runChild(args); !errors.Is(err, errChildUsage) {
			t.Errorf("runChild(%q) = %v, want %v", args, err, errChildUsage)
		}
	}
}

func TestClock(t *testing.T) {
	c := newClock()
	before := monotonic()
	now := c.now()
	after := monotonic()
	// The two clocks were paired with one reading each; allow for it.
	const slack = 1e6
	if now < before-slack || now > after+slack {
		t.Errorf("clock %d, want within [%d, %d] give or take 1 ms", now, before, after)
	}
}

func TestReadNanosBad(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bad")
	os.WriteFile(file, []byte("12x"), 0o644)
	if _, err := readNanos(file); err == nil || !strings.Contains(err.Error(), "invalid syntax") {
		t.Errorf("err = %v, want a parse error", err)
	}
}
