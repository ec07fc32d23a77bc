package coredump_test

import (
	"debug/elf"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"kinst.dev/kinst/internal/coredump"
	"kinst.dev/kinst/internal/testenv"
)

// Dump writes a core file with a thread's status note for each thread
// and the process's memory; a process found running goes on, one found
// stopped stays stopped.
func TestDump(t *testing.T) {
	testenv.Root(t)
	for _, stop := range []bool{false, true} {
		t.Run(fmt.Sprintf("stopped=%v", stop), func(t *testing.T) {
			cmd := exec.Command("sleep", "10")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			defer cmd.Process.Kill()
			pid := cmd.Process.Pid
			if stop {
				syscall.Kill(pid, syscall.SIGSTOP)
				if err := coredump.WaitStopped(pid, 5*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(t.TempDir(), "core")
			size, err := coredump.Dump(path, pid, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			f, err := elf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var notes, loads int
			var written int64
			for _, p := range f.Progs {
				switch p.Type {
				case elf.PT_NOTE:
					notes++
				case elf.PT_LOAD:
					loads++
				}
				written = max(written, int64(p.Off+p.Filesz))
			}
			if f.Type != elf.ET_CORE || notes != 1 || loads == 0 || written != size {
				t.Errorf("core: type %v, %d note and %d load segments ending at %d, size %d; want a core with one note segment, loads, and its size", f.Type, notes, loads, written, size)
			}
			// Dump stops the process with SIGSTOP and lets it go: it
			// runs again, unless it was stopped before.
			time.Sleep(10 * time.Millisecond)
			if stopped, err := coredump.Stopped(pid); err != nil || stopped != stop {
				t.Errorf("after the dump, stopped %v (%v), want %v", stopped, err, stop)
			}
		})
	}
}

// A process that is gone has no core.
func TestDumpGone(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	_, err := coredump.Dump(filepath.Join(t.TempDir(), "core"), pid, 0, nil)
	if want := fmt.Sprintf("no process %d", pid); err == nil || err.Error() != want {
		t.Errorf("Dump of an ended process: %v, want %q", err, want)
	}
}
