package vm

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// An Accel is how QEMU runs the guest's code.
type Accel string

const (
	// TCG is software emulation: slow, and works everywhere.
	TCG Accel = "tcg"
	// KVM is hardware virtualisation; Run uses it only after a probe boot
	// under KVM succeeded, since on some machines KVM exists and crashes
	// guests.
	KVM Accel = "kvm"
	// Auto uses KVM if the probe boot succeeds and TCG otherwise.
	Auto Accel = "auto"
)

// ParseAccel checks an accelerator name; empty means TCG.
func ParseAccel(s string) (Accel, error) {
	switch a := Accel(s); a {
	case "":
		return TCG, nil
	case TCG, KVM, Auto:
		return a, nil
	}
	return "", fmt.Errorf("accelerator %q: want %s, %s or %s", s, TCG, KVM, Auto)
}

// probeTimeout bounds the KVM probe boot, which takes about a second where
// KVM works.
const probeTimeout = 30 * time.Second

var kvmProbe struct {
	once sync.Once
	err  error
}

// ProbeKVM boots cfg.Kernel under KVM with nothing to run and reports whether
// the guest reached its /init and powered off cleanly. The answer is computed
// once per process.
func ProbeKVM(ctx context.Context, cfg Config) error {
	kvmProbe.once.Do(func() {
		kvmProbe.err = probeKVM(ctx, cfg)
	})
	return kvmProbe.err
}

func probeKVM(ctx context.Context, cfg Config) error {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("kvm unusable: %w", err)
	}
	f.Close()
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		return ErrNoQEMU
	}
	probe := Config{Kernel: cfg.Kernel, Init: cfg.Init, Timeout: probeTimeout, Stdout: io.Discard, Stderr: io.Discard}
	code, err := boot(ctx, qemu, probe, KVM)
	if err == nil && code != 0 {
		err = fmt.Errorf("probe exited with code %d", code)
	}
	if err != nil {
		return fmt.Errorf("kvm probe boot failed: %w", err)
	}
	return nil
}

// ChooseAccel settles cfg.Accel to TCG or KVM, probing KVM where it is
// asked for; Run does the same, so calling it first only tells which.
func ChooseAccel(ctx context.Context, cfg Config) (Accel, error) {
	switch cfg.Accel {
	case "", TCG:
		return TCG, nil
	case KVM:
		if err := ProbeKVM(ctx, cfg); err != nil {
			return "", err
		}
		return KVM, nil
	case Auto:
		if ProbeKVM(ctx, cfg) == nil {
			return KVM, nil
		}
		return TCG, nil
	}
	return "", fmt.Errorf("accelerator %q: want %s, %s or %s", cfg.Accel, TCG, KVM, Auto)
}
