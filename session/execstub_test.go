package session

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestStubELF(t *testing.T) {
	f, err := elf.NewFile(bytes.NewReader(stubELF(elf.EM_X86_64, []byte{0xcc})))
	if err != nil {
		t.Fatal(err)
	}
	if f.Type != elf.ET_EXEC || f.Machine != elf.EM_X86_64 || f.Entry != stubBase+64+56 || len(f.Progs) != 1 {
		t.Fatalf("type %v, machine %v, entry %#x, %d segments", f.Type, f.Machine, f.Entry, len(f.Progs))
	}
	p := f.Progs[0]
	if p.Type != elf.PT_LOAD || p.Flags != elf.PF_R|elf.PF_X || p.Vaddr != stubBase || p.Off != 0 || p.Filesz != 64+56+1 {
		t.Errorf("segment %+v", p.ProgHeader)
	}
}

// TestStub runs the stub untraced: it names itself kinst, stops, and
// once continued execs its command with the environment, or exits with
// the errno of the exec that failed.
func TestStub(t *testing.T) {
	if os.Getenv("STUB_TEST") != "" {
		// The command the stub execs: this test binary, which prints
		// what it was given and exits 3.
		fmt.Printf("%q %s\n", os.Args, os.Getenv("STUB_TEST"))
		os.Exit(3)
	}
	if stub == nil {
		t.Skip("no -c stub for this machine")
	}
	fd, path := stubFile()
	if fd < 0 {
		t.Skip("no anonymous executable file here (vm.memfd_noexec)")
	}
	defer unix.Close(fd)
	run := func(args ...string) (string, syscall.WaitStatus) {
		t.Helper()
		// A file, not a pipe: the test reaps the process itself, and
		// exec.Cmd's copying of a pipe would end only in cmd.Wait.
		out, err := os.Create(t.TempDir() + "/out")
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		cmd := exec.Command(path, args...)
		cmd.Args[0] = "kinst"
		cmd.Env = []string{"STUB_TEST=env seen"}
		cmd.Stdout = out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil); err != nil || !ws.Stopped() || ws.StopSignal() != syscall.SIGSTOP {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the stub did not stop itself: %v, %v", ws, err)
		}
		if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); string(comm) != "kinst\n" {
			t.Errorf("stopped stub's comm is %q, want kinst", comm)
		}
		syscall.Kill(pid, syscall.SIGCONT)
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			t.Fatal(err)
		}
		text, err := os.ReadFile(out.Name())
		if err != nil {
			t.Fatal(err)
		}
		return string(text), ws
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, ws := run(self, "child", "-test.run=^TestStub$", "a b")
	want := `["child" "-test.run=^TestStub$" "a b"] env seen` + "\n"
	if out != want || ws.ExitStatus() != 3 {
		t.Errorf("exec'd command printed %q and exited %d, want %q and 3", out, ws.ExitStatus(), want)
	}
	missing := "/nonexistent/" + strings.Repeat("x", 8)
	if _, ws := run(missing, "x"); ws.ExitStatus() != int(syscall.ENOENT) {
		t.Errorf("exec of a missing file: exit status %d, want ENOENT (%d)", ws.ExitStatus(), syscall.ENOENT)
	}
}
