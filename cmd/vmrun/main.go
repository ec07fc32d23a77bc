package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"kinst.dev/kinst/internal/vm"
	"kinst.dev/kinst/internal/vm/guestinit"
)

// Exit codes of vmrun's own failures; any other code is the guest command's.
const (
	exitUsage       = 2
	exitTimeout     = 124
	exitFailure     = 125
	exitInterrupted = 130
)

// timeoutMargin is added to a go test binary's -test.timeout, so that the
// test binary's own timeout, with its goroutine dump, fires first.
const timeoutMargin = 2 * time.Minute

func main() {
	if guestinit.IsInit() {
		guestinit.Main()
	}
	ctx, stop := signal.NotifyContext(context.Background(),
		syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: vmrun [flags] [--] COMMAND [ARG...]
       vmrun kernels [SERIES...]

vmrun boots a Debian cloud kernel under QEMU with COMMAND as the only
program, streams its output and exits with its exit code.

COMMAND given by a path (it contains a slash) is packed from the host; a bare
name is looked up on the guest PATH, where each --file comes first. The
working directory is recreated in the guest with its testdata/ folder and
its files of up to 1 MiB. The guest gets the host variables named GO*,
KINST*, TERM and CI; it sets PATH and HOME itself. Standard input is empty.
Passing busybox as a --file makes its applets (sh, cat...) usable by name.

vmrun kernels fetches the newest kernel of each series (or of those named)
from the apt index into the cache and prints series, release and image path.

Exit codes: the command's own; 128+N if a signal (such as the OOM killer's)
killed it; 124 on timeout; 125 if the guest failed (kernel panic, kernel
fault, no exit status) or vmrun could not start it; 130 if interrupted.

Flags:
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "kernels" {
		return kernels(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("vmrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	kernel := fs.String("kernel", "6.12", "kernel `series` ("+strings.Join(vm.Series, " or ")+") or path of a bzImage")
	var files []string
	fs.Func("file", "host `PATH` to put on the guest PATH under its own name (repeatable)", func(p string) error {
		files = append(files, p)
		return nil
	})
	timeout := fs.Duration("timeout", 0, "kill the guest after this `duration` (default 10m, or a go test binary's -test.timeout plus 2m)")
	accelName := fs.String("accel", string(vm.TCG), "accelerator: tcg, kvm (after a probe boot proves it works) or auto")
	cacheDir := fs.String("cache", "", "kernel cache `folder` (default $KINST_KERNEL_CACHE or .cache/kernels at the module root)")
	quiet := fs.Bool("quiet", false, "do not print the kernel line on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "vmrun: no command given")
		fs.Usage()
		return exitUsage
	}
	accel, err := vm.ParseAccel(*accelName)
	if err != nil {
		fmt.Fprintf(stderr, "vmrun: %v\n", err)
		return exitUsage
	}
	if *cacheDir == "" {
		*cacheDir = vm.CacheDir()
	}
	k, err := vm.Resolve(ctx, *cacheDir, *kernel)
	if err != nil {
		fmt.Fprintf(stderr, "vmrun: %v\n", err)
		return exitFailure
	}
	if k, err = vm.FetchModules(ctx, *cacheDir, k); err != nil {
		// The guest runs without them; tests that need one skip.
		fmt.Fprintf(stderr, "vmrun: warning: %v\n", err)
	}
	dir, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "vmrun: %v\n", err)
		return exitFailure
	}
	if *timeout == 0 {
		*timeout = testTimeout(fs.Args())
	}
	cfg := vm.Config{
		Kernel:  k,
		Args:    fs.Args(),
		Dir:     dir,
		Env:     vm.GuestEnv(os.Environ()),
		Files:   files,
		Accel:   accel,
		Timeout: *timeout,
		Stdout:  stdout,
		Stderr:  stderr,
	}
	if cfg.Accel, err = vm.ChooseAccel(ctx, cfg); err != nil {
		fmt.Fprintf(stderr, "vmrun: %v\n", err)
		return exitFailure
	}
	if !*quiet {
		fmt.Fprintf(stderr, "vmrun: %s (%s)\n", k, cfg.Accel)
	}
	code, err := vm.Run(ctx, cfg)
	if err == nil {
		return code
	}
	fmt.Fprintf(stderr, "vmrun: %s: %v\n", k, err)
	switch {
	case ctx.Err() != nil:
		return exitInterrupted
	case errors.Is(err, vm.ErrTimeout):
		return exitTimeout
	case code > 0:
		return code
	}
	return exitFailure
}

// testTimeout returns the guest timeout for a go test binary's arguments: its
// -test.timeout plus a margin, or zero (the default) when it has none.
func testTimeout(args []string) time.Duration {
	for _, a := range args {
		v, ok := strings.CutPrefix(a, "-test.timeout=")
		if !ok {
			continue
		}
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			return d + timeoutMargin
		}
	}
	return 0
}

func kernels(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	series := args
	if len(series) == 0 {
		series = vm.Series
	}
	dir := vm.CacheDir()
	code := 0
	for _, s := range series {
		if !slices.Contains(vm.Series, s) {
			fmt.Fprintf(stderr, "vmrun: unknown kernel series %q: want %s\n", s, strings.Join(vm.Series, " or "))
			code = exitUsage
			continue
		}
		k, err := vm.Fetch(ctx, dir, s)
		if err != nil {
			fmt.Fprintf(stderr, "vmrun: %v\n", err)
			code = exitFailure
			continue
		}
		fmt.Fprintf(stdout, "%s %s %s\n", s, k.Release, k.Image)
	}
	return code
}
