package vm

import (
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Errors a guest run can end with; Run wraps them in a *GuestError.
var (
	ErrNoQEMU      = errors.New("qemu-system-x86_64 not found: install it with apt-get install qemu-system-x86")
	ErrTimeout     = errors.New("guest timed out")
	ErrPanic       = errors.New("guest kernel panicked")
	ErrNoStatus    = errors.New("guest stopped without reporting an exit status")
	ErrKilled      = errors.New("guest command killed by a signal")
	ErrKernelFault = errors.New("guest kernel reported a fault")
)

// A GuestError is a guest run that failed as a machine rather than as a
// command: Err is one of the errors above, Log the kernel console lines that
// tell why (from just before the first fault, or else the last ones).
type GuestError struct {
	Err    error
	Detail string
	Log    []string
}

func (e *GuestError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if len(e.Log) == 0 {
		b.WriteString("; the kernel printed nothing")
		return b.String()
	}
	b.WriteString("; kernel console:")
	for _, l := range e.Log {
		b.WriteString("\n  | " + l)
	}
	return b.String()
}

func (e *GuestError) Unwrap() error { return e.Err }

// DefaultTimeout bounds a guest run when Config.Timeout is zero; software
// emulation is slow, so it is generous.
const DefaultTimeout = 10 * time.Minute

// The machine every guest gets.
const (
	guestMemory = "1G"
	guestCPUs   = "2"
	logLines    = 40 // kernel lines shown when nothing went wrong in the kernel
	faultLines  = 60 // kernel lines shown from a fault on
)

// Config describes one guest run.
type Config struct {
	Kernel Kernel
	// Args is the command and its arguments. An Args[0] naming a host file
	// by a path (it contains a slash) is packed at the same absolute path;
	// a bare name is looked up on the guest's PATH.
	Args []string
	// Dir is the working directory; the guest recreates the path with a
	// copy of its testdata/ tree and of its regular files up to MaxDirFile.
	// Empty means /.
	Dir string
	// Env is the command's environment; the guest sets PATH and HOME itself.
	// See GuestEnv.
	Env []string
	// Files are host files put in GuestBinDir under their own names.
	Files []string
	// Init is a static binary that calls guestinit.Main when it runs as
	// PID 1; empty means the running executable.
	Init    string
	Accel   Accel
	Timeout time.Duration
	// Stdout receives the guest command's stdout and stderr; nil means
	// os.Stdout. Stderr receives QEMU's own messages; nil means os.Stderr.
	Stdout, Stderr io.Writer
}

// GuestEnv returns the part of env a guest command gets: variables named GO*
// (Go's own settings, GOFLAGS, GOTRACEBACK, GOCOVERDIR...), KINST* (the
// project's settings), TERM and CI. PATH, HOME and anything else of the host
// would be wrong or meaningless inside the guest.
func GuestEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GO") || strings.HasPrefix(name, "KINST") || name == "TERM" || name == "CI" {
			out = append(out, kv)
		}
	}
	return out
}

// Run boots cfg.Kernel, runs the command and returns its exit code. A
// command that ran and exited, whatever its code, gives a nil error. A guest
// that panicked, hung past the timeout, lost its command to a signal (such as
// the OOM killer's), or logged a kernel fault gives a *GuestError holding the
// kernel's console lines; a killed command's code is 128 plus the signal number,
// otherwise the code is -1. When ctx is cancelled QEMU is killed and Run
// returns ctx's error. Nothing keeps running and no temporary file is left
// after Run returns.
func Run(ctx context.Context, cfg Config) (int, error) {
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		return -1, ErrNoQEMU
	}
	if len(cfg.Args) == 0 {
		return -1, errors.New("no command to run")
	}
	accel, err := ChooseAccel(ctx, cfg)
	if err != nil {
		return -1, err
	}
	return boot(ctx, qemu, cfg, accel)
}

// boot runs one guest with the given accelerator; Args may be empty for a
// probe boot.
func boot(ctx context.Context, qemu string, cfg Config, accel Accel) (int, error) {
	if cfg.Init == "" {
		exe, err := os.Executable()
		if err != nil {
			return -1, fmt.Errorf("find /init: %w", err)
		}
		cfg.Init = exe
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	stdout, stderr := cfg.Stdout, cfg.Stderr
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}

	tmp, err := os.MkdirTemp("", "vmrun-")
	if err != nil {
		return -1, err
	}
	defer os.RemoveAll(tmp)
	initrd := filepath.Join(tmp, "initrd")
	if err := writeInitramfs(initrd, cfg); err != nil {
		return -1, fmt.Errorf("pack initramfs: %w", err)
	}
	console, status := filepath.Join(tmp, "kernel.log"), filepath.Join(tmp, "status")

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, qemu, qemuArgs(cfg.Kernel, accel, initrd, console, status)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// QEMU gets its own process group so that a terminal's Ctrl-C reaches
	// only the runner, which then kills it; Pdeathsig covers a runner that
	// is killed outright.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	waitErr := cmd.Run()

	if ctx.Err() != nil {
		return -1, fmt.Errorf("guest run stopped: %w", ctx.Err())
	}
	all := readLog(console)
	log := excerpt(all)
	data, _ := os.ReadFile(status)
	st, ok := parseStatus(string(data))
	switch {
	case !ok && runCtx.Err() != nil:
		return -1, &GuestError{Err: ErrTimeout, Detail: "no exit after " + timeout.String(), Log: log}
	case !ok && findLine(all, "Kernel panic") != "":
		return -1, &GuestError{Err: ErrPanic, Log: log}
	case !ok:
		detail := ""
		if waitErr != nil {
			detail = "qemu: " + waitErr.Error()
		}
		return -1, &GuestError{Err: ErrNoStatus, Detail: detail, Log: log}
	case st.Signal != 0:
		detail := fmt.Sprintf("signal %d (%v)", st.Signal, syscall.Signal(st.Signal))
		if l := findLine(all, "Out of memory"); l != "" {
			detail += ", " + l
		}
		return 128 + st.Signal, &GuestError{Err: ErrKilled, Detail: detail, Log: log}
	}
	for _, mark := range kernelFaults {
		if l := findLine(all, mark); l != "" {
			return st.Exit, &GuestError{Err: ErrKernelFault, Detail: l, Log: log}
		}
	}
	return st.Exit, nil
}

// kernelFaults are the console lines that mean the kernel itself went wrong
// during a run, even if the command succeeded.
var kernelFaults = []string{"BUG:", "Oops:", "WARNING: CPU:", "general protection fault", "invoked oom-killer", "Out of memory:", "Kernel panic"}

// excerpt picks the kernel lines worth showing: from just before the first
// fault, which a panic's stack trace would push out of a plain tail, or else
// the last lines.
func excerpt(lines []string) []string {
	for i, l := range lines {
		for _, mark := range kernelFaults {
			if strings.Contains(l, mark) {
				start := max(0, i-3)
				return lines[start:min(len(lines), start+faultLines)]
			}
		}
	}
	return lines[max(0, len(lines)-logLines):]
}

func qemuArgs(k Kernel, accel Accel, initrd, console, status string) []string {
	accelArg := string(accel)
	if accel == TCG {
		// Multi-threaded TCG lets a vCPU run stale code while the kernel
		// patches its text with int3 (static keys, ftrace), which oopsed
		// 6.12 guests in 2 of 16 runs of tests that attach tracepoints;
		// one thread for both vCPUs did not in 30, at about the same speed.
		accelArg += ",thread=single"
	}
	return []string{
		"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
		"-accel", accelArg, "-cpu", "max", "-m", guestMemory, "-smp", guestCPUs,
		"-kernel", k.Image, "-initrd", initrd,
		// no_timer_check: on a loaded host an emulated CPU can miss the
		// timer ticks the kernel counts at boot to prove the IO-APIC
		// works, and the 6.1 kernel then panics ("IO-APIC + timer
		// doesn't work!"); a virtual machine needs no such proof.
		"-append", "console=ttyS1 panic=-1 no_timer_check " + GuestMarker,
		// ttyS0: stdio is QEMU's stdout; its stdin is /dev/null, so QEMU
		// never puts a terminal into raw mode.
		"-chardev", "stdio,id=out,signal=off", "-serial", "chardev:out",
		"-serial", "file:" + console, // ttyS1
		"-serial", "file:" + status, // ttyS2
	}
}

// writeInitramfs packs everything the guest needs into a cpio file at path.
func writeInitramfs(path string, cfg Config) error {
	if err := checkStatic(cfg.Init); err != nil {
		return fmt.Errorf("/init: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	c := newCPIOWriter(f)
	c.File("/init", cfg.Init)
	c.CharDev("/dev/console", 5, 1)
	for _, d := range []string{"/proc", "/sys", "/run", "/bin", "/sbin", "/usr/bin", "/usr/sbin", GuestBinDir} {
		c.Dir(d, 0o755)
	}
	c.Dir("/tmp", 0o777|os.ModeSticky)
	c.Dir("/root", 0o700)
	c.Bytes("/etc/hostname", 0o644, []byte("vmrun\n"))
	c.Bytes("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\n"))
	c.Bytes("/etc/group", 0o644, []byte("root:x:0:\n"))
	if cfg.Kernel.Config != "" {
		// Tests read the configuration for evidence of what the kernel has.
		c.File("/boot/config-"+cfg.Kernel.Release, cfg.Kernel.Config)
	}
	if cfg.Kernel.Modules != "" {
		// Tests of module functions load them from the usual place.
		c.Tree("/lib/modules/"+cfg.Kernel.Release, cfg.Kernel.Modules)
	}

	seen := map[string]string{}
	for _, file := range cfg.Files {
		name := filepath.Base(file)
		if prev, dup := seen[name]; dup {
			return fmt.Errorf("files %s and %s would both be %s/%s", prev, file, GuestBinDir, name)
		}
		seen[name] = file
		if err := checkStatic(file); err != nil {
			return err
		}
		c.File(GuestBinDir+"/"+name, file)
	}

	spec := Spec{Args: append([]string(nil), cfg.Args...), Dir: "/", Env: cfg.Env}
	if len(spec.Args) > 0 && strings.Contains(spec.Args[0], "/") {
		abs, err := filepath.Abs(spec.Args[0])
		if err != nil {
			return err
		}
		if err := checkStatic(abs); err != nil {
			return err
		}
		c.File(abs, abs)
		spec.Args[0] = abs
	}
	if cfg.Dir != "" {
		dir, err := filepath.Abs(cfg.Dir)
		if err != nil {
			return err
		}
		if err := packDir(c, dir); err != nil {
			return err
		}
		spec.Dir = dir
	}
	js, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	c.Bytes(GuestSpecPath, 0o644, js)
	if err := c.Close(); err != nil {
		return err
	}
	return f.Close()
}

// MaxDirFile is the size up to which the regular files directly in the
// working directory are copied into the guest.
const MaxDirFile = 1 << 20

// packDir recreates the working directory: its testdata/ tree, since go test
// runs tests there, and its regular files up to MaxDirFile, since tests also
// read their own package's files; larger files stay out of the guest's memory.
func packDir(c *cpioWriter, dir string) error {
	c.Dir(dir, 0o755)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir() && e.Name() == "testdata":
			c.Tree(path, path)
		case e.Type().IsRegular():
			info, err := e.Info()
			if err != nil {
				return err
			}
			if info.Size() <= MaxDirFile {
				c.File(path, path)
			}
		}
	}
	return nil
}

// checkStatic refuses an ELF file that needs a dynamic loader, since the
// guest has no shared libraries; other files (scripts, data) pass.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		if _, statErr := os.Stat(path); statErr != nil {
			return statErr
		}
		return nil
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			interp, _ := io.ReadAll(io.LimitReader(p.Open(), 256))
			return fmt.Errorf("%s is dynamically linked (interpreter %s) and the guest has no shared libraries: build it with CGO_ENABLED=0",
				path, strings.TrimRight(string(interp), "\x00"))
		}
	}
	return nil
}

// readLog returns the lines of the kernel console log, without carriage
// returns.
func readLog(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	text := strings.TrimRight(strings.ReplaceAll(string(data), "\r", ""), "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

func findLine(lines []string, substr string) string {
	for _, l := range lines {
		if strings.Contains(l, substr) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
