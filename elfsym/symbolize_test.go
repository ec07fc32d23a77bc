package elfsym

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kinst.dev/kinst/internal/testenv"
)

func TestFrameFormat(t *testing.T) {
	tests := []struct {
		f           Frame
		sym, symOff string
	}{
		{Frame{Addr: 0x5609b586416d, Symbol: "mid", Offset: 12}, "mid", "mid+12"},
		{Frame{Addr: 0x7fde8f0234f7}, "0x7fde8f0234f7", "0x7fde8f0234f7"},
		{Frame{Addr: 0x10, Path: "/bin/x"}, "0x10", "0x10"},
		{Frame{Addr: 0x401000, Symbol: "main.leaf"}, "main.leaf", "main.leaf+0"},
	}
	for _, tt := range tests {
		if got := tt.f.Sym(); got != tt.sym {
			t.Errorf("%+v.Sym() = %q, want %q", tt.f, got, tt.sym)
		}
		if got := tt.f.SymOff(); got != tt.symOff {
			t.Errorf("%+v.SymOff() = %q, want %q", tt.f, got, tt.symOff)
		}
	}
}

// startTarget runs the test target program and returns it with the pid
// and leaf address it reports; closing stdin ends it.
func startTarget(t testing.TB) (cmd *exec.Cmd, stdin io.WriteCloser, pid int, leaf uint64) {
	t.Helper()
	bin := testenv.Build(t, "./elfsym/testdata/target")
	cmd = exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var ten int
	if _, err := fmt.Sscanf(line, "%d %v %d", &pid, &leaf, &ten); err != nil || ten != 10 {
		t.Fatalf("target said %q: %v", line, err)
	}
	if pid != cmd.Process.Pid {
		t.Fatalf("target reports pid %d, started %d", pid, cmd.Process.Pid)
	}
	return cmd, stdin, pid, leaf
}

func TestSymbolizeLiveAndExited(t *testing.T) {
	cmd, stdin, pid, leaf := startTarget(t)
	path, err := filepath.EvalSymlinks(cmd.Path)
	if err != nil {
		t.Fatal(err)
	}
	maps, err := ReadMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := findMapping(maps, leaf+3)
	if !ok {
		t.Fatalf("no mapping holds main.leaf at %#x", leaf)
	}
	s := NewSymbolizer()
	want := Frame{Addr: leaf + 3, Symbol: "main.leaf", Offset: 3, Path: path,
		MapStart: m.Start, MapEnd: m.End, MapOffset: m.Offset, BuildID: noteDesc(t, path)}
	if got := s.Frame(pid, leaf+3); got != want {
		t.Errorf("Frame(leaf+3) = %+v, want %+v", got, want)
	}
	if got := s.Frame(pid, 0x10); got != (Frame{Addr: 0x10}) {
		t.Errorf("Frame(0x10) = %+v, want the bare address", got)
	}
	stdin.Close()
	// Exited and not yet reaped, a process's maps file reads empty:
	// remembering it then must keep what was read while it lived.
	waitZombie(t, pid)
	if err := s.Remember(pid); !errors.Is(err, ErrNoMappings) {
		t.Errorf("Remember(zombie) = %v, want ErrNoMappings", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	// Seen alive, the process still resolves from the cache.
	if got := s.Frame(pid, leaf); got.SymOff() != "main.leaf+0" {
		t.Errorf("after exit, cached Frame(leaf) = %+v", got)
	}
	// Never seen alive, it resolves to hex, as in bpftrace.
	fresh := NewSymbolizer().Frame(pid, leaf+3)
	if fresh != (Frame{Addr: leaf + 3}) || fresh.SymOff() != fmt.Sprintf("0x%x", leaf+3) {
		t.Errorf("after exit, fresh Frame(leaf+3) = %+v", fresh)
	}
}

// waitZombie waits until process pid has exited, unreaped.
func waitZombie(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		// The state follows the command name, which is in parentheses.
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && bytes.HasPrefix(stat[i:], []byte(") Z")) {
			return
		}
	}
	t.Fatalf("process %d never became a zombie", pid)
}

// startDynamic runs a dynamically linked program that sleeps and waits
// until the dynamic loader has mapped libc into it.
func startDynamic(t *testing.T, libc string) (pid int, maps []Mapping) {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep program")
	}
	cmd := exec.Command(sleep, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	real, err := filepath.EvalSymlinks(libc)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		maps, err := ReadMaps(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range maps {
			if p, err := filepath.EvalSymlinks(m.Path); err == nil && p == real && m.Perms[2] == 'x' {
				return cmd.Process.Pid, maps
			}
		}
	}
	t.Skipf("%s never mapped %s (statically linked?)", sleep, libc)
	return 0, nil
}

func TestSymbolizeLibc(t *testing.T) {
	libc := libcPath(t)
	pid, maps := startDynamic(t, libc)
	f, err := Open(libc)
	if err != nil {
		t.Fatal(err)
	}
	sym, err := f.Lookup("getppid")
	if err != nil {
		t.Fatal(err)
	}
	// Place getppid in the process by hand: the mapping that holds its
	// file offset, moved by the mapping's start.
	var addr uint64
	var path string
	var held Mapping
	for _, m := range maps {
		if m.File() && strings.HasSuffix(m.Path, filepath.Base(libc)) && sym.Offset >= m.Offset && sym.Offset < m.Offset+(m.End-m.Start) {
			addr, path, held = m.Start+sym.Offset-m.Offset+2, m.Path, m
		}
	}
	if addr == 0 {
		t.Fatalf("no mapping of %s holds offset %#x", libc, sym.Offset)
	}
	want := Frame{Addr: addr, Symbol: "getppid", Offset: 2, Path: path,
		MapStart: held.Start, MapEnd: held.End, MapOffset: held.Offset, BuildID: noteDesc(t, libc)}
	if got := NewSymbolizer().Frame(pid, addr); got != want {
		t.Errorf("Frame(getppid+2) = %+v, want %+v", got, want)
	}
	if got, err := Resolve("libc", pid); err != nil || got != path {
		t.Errorf("Resolve(libc, %d) = %q, %v; want the mapped %q", pid, got, err, path)
	}
}

func TestSymbolizeNoProcess(t *testing.T) {
	// pid 0 has no /proc entry; no process, only the address.
	if got := NewSymbolizer().Frame(0, 0x401000); got != (Frame{Addr: 0x401000}) {
		t.Errorf("Frame(pid 0) = %+v", got)
	}
}

// TestProgramFrame: without a process, an address resolves in a
// position-dependent program as linked (the Go test target is one), and
// in a shared library, whose addresses each process chooses, not at all.
func TestProgramFrame(t *testing.T) {
	bin := testenv.Build(t, "./elfsym/testdata/target")
	f, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := f.Lookup("main.leaf")
	if err != nil {
		t.Fatal(err)
	}
	var seg elf.ProgHeader
	for _, p := range f.loads {
		if leaf.Addr >= p.Vaddr && leaf.Addr < p.Vaddr+p.Memsz {
			seg = p
		}
	}
	s := NewSymbolizer()
	want := Frame{Addr: leaf.Addr + 3, Symbol: "main.leaf", Offset: 3, Path: bin,
		MapStart: seg.Vaddr, MapEnd: seg.Vaddr + seg.Memsz, MapOffset: seg.Off, BuildID: f.BuildID}
	if got := s.ProgramFrame(bin, leaf.Addr+3); got != want {
		t.Errorf("ProgramFrame(main.leaf+3) = %+v, want %+v", got, want)
	}
	if got := s.ProgramFrame(bin, 0x10); got != (Frame{Addr: 0x10}) {
		t.Errorf("ProgramFrame(0x10), outside the program = %+v", got)
	}
	libc := libcPath(t)
	lf, err := Open(libc)
	if err != nil {
		t.Fatal(err)
	}
	getppid, err := lf.Lookup("getppid")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.ProgramFrame(libc, getppid.Addr); got != (Frame{Addr: getppid.Addr}) {
		t.Errorf("ProgramFrame(%s, getppid) = %+v, want the address alone", libc, got)
	}
}

func BenchmarkOpenLibc(b *testing.B) {
	libc, err := Resolve("libc", 0)
	if err != nil {
		b.Skip(err)
	}
	for b.Loop() {
		if _, err := Open(libc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFrameCached(b *testing.B) {
	_, _, pid, leaf := startTarget(b)
	s := NewSymbolizer()
	s.Frame(pid, leaf)
	for b.Loop() {
		if s.Frame(pid, leaf+1).Symbol != "main.leaf" {
			b.Fatal("wrong symbol")
		}
	}
}

// noteDesc reads the build ID of the ELF file at path the simple way:
// the last 20 bytes of its .note.gnu.build-id, a single SHA-1 note.
func noteDesc(t *testing.T, path string) string {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	sec := ef.Section(".note.gnu.build-id")
	if sec == nil {
		t.Fatalf("%s has no build ID note", path)
	}
	data, err := sec.Data()
	if err != nil || len(data) != 36 {
		t.Fatalf("%s: build ID note of %d bytes: %v", path, len(data), err)
	}
	return hex.EncodeToString(data[16:])
}
