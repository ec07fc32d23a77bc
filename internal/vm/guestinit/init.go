package guestinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst/internal/vm"
)

// IsInit reports whether the process is PID 1, the kernel's first process.
func IsInit() bool { return os.Getpid() == 1 }

// A mount is one file system /init mounts.
type mount struct {
	fstype, target string
	required       bool
}

// mounts lists the file systems in mounting order; /dev comes first so that
// the serial ports exist.
var mounts = []mount{
	{"devtmpfs", "/dev", true},
	{"proc", "/proc", true},
	{"sysfs", "/sys", true},
	{"tracefs", "/sys/kernel/tracing", false},
	{"debugfs", "/sys/kernel/debug", false},
	{"bpf", "/sys/fs/bpf", false},
	{"securityfs", "/sys/kernel/security", false},
	{"cgroup2", "/sys/fs/cgroup", false},
	{"devpts", "/dev/pts", false},
	{"tmpfs", "/dev/shm", false},
}

// Main runs the guest and powers it off; it never returns.
func Main() {
	st := run()
	report(st)
	unix.Sync()
	unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	// Reaching here means power-off failed; PID 1 exiting panics the
	// kernel, and panic=-1 with -no-reboot ends QEMU.
	os.Exit(1)
}

// run prepares the guest and runs the command; failures of the guest itself
// are printed on the console and reported as exit code 125.
func run() vm.Status {
	for _, m := range mounts {
		if err := os.MkdirAll(m.target, 0o755); err != nil && m.required {
			return failf("mkdir %s: %v", m.target, err)
		}
		err := unix.Mount(m.fstype, m.target, m.fstype, 0, "")
		if err != nil && !errors.Is(err, unix.EBUSY) {
			if m.required {
				return failf("mount %s on %s: %v", m.fstype, m.target, err)
			}
			warnf("mount %s on %s: %v", m.fstype, m.target, err)
		}
	}
	console, err := openTTY(vm.GuestConsole)
	if err != nil {
		return failf("%v", err)
	}
	defer console.Close()
	// From here on, messages go where the host reads the command's output.
	os.Stdout, os.Stderr = console, console

	data, err := os.ReadFile(vm.GuestSpecPath)
	if err != nil {
		return failf("read spec: %v", err)
	}
	var spec vm.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return failf("read spec: %v", err)
	}
	if len(spec.Args) == 0 {
		return vm.Status{}
	}
	if err := linkBusybox(); err != nil {
		warnf("busybox applets: %v", err)
	}
	if err := loopbackUp(); err != nil {
		warnf("loopback: %v", err)
	}
	os.Setenv("PATH", vm.GuestPATH)
	os.Setenv("HOME", "/root")
	path, err := exec.LookPath(spec.Args[0])
	if err != nil {
		fmt.Fprintf(console, "vmrun: %v\n", err)
		return vm.Status{Exit: 127}
	}
	cmd := exec.Command(path, spec.Args[1:]...)
	cmd.Args[0] = spec.Args[0]
	cmd.Dir = spec.Dir
	cmd.Env = append([]string{"PATH=" + vm.GuestPATH, "HOME=/root"}, spec.Env...)
	cmd.Stdout, cmd.Stderr = console, console
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return vm.Status{}
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return vm.Status{Signal: int(ws.Signal())}
		}
		return vm.Status{Exit: exit.ExitCode()}
	default:
		fmt.Fprintf(console, "vmrun: %v\n", err)
		return vm.Status{Exit: 126}
	}
}

// loopbackUp brings up lo, which a kernel starts down: tests serve and
// scrape metrics on 127.0.0.1 as they would on any machine.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("get flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("set flags: %w", err)
	}
	return nil
}

// openTTY opens a serial port and clears OPOST, so "\n" is not sent as "\r\n".
func openTTY(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	t, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err == nil {
		t.Oflag &^= unix.OPOST
		err = unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, t)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("set up %s: %w", path, err)
	}
	return f, nil
}

// linkBusybox links each applet of a busybox passed as a file at its usual
// path, where no file is there already, so that /bin/sh and cat work.
func linkBusybox() error {
	bb := filepath.Join(vm.GuestBinDir, "busybox")
	if _, err := os.Stat(bb); err != nil {
		return nil
	}
	out, err := exec.Command(bb, "--list-full").Output()
	if err != nil {
		return fmt.Errorf("%s --list-full: %w", bb, err)
	}
	for _, applet := range strings.Fields(string(out)) {
		p := "/" + applet
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(bb, p); err != nil {
			return err
		}
	}
	return nil
}

// report writes the status line and waits until the port has sent it.
func report(st vm.Status) {
	f, err := openTTY(vm.GuestStatusPort)
	if err != nil {
		warnf("%v", err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(st.String()); err != nil {
		warnf("write status: %v", err)
	}
	// TCSBRK with a non-zero argument is tcdrain.
	unix.IoctlSetInt(int(f.Fd()), unix.TCSBRK, 1)
}

func failf(format string, args ...any) vm.Status {
	warnf(format, args...)
	return vm.Status{Exit: 125}
}

func warnf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "vmrun init: "+format+"\n", args...)
}
