package vm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStatusRoundTrip(t *testing.T) {
	for _, st := range []Status{{Exit: 0}, {Exit: 7}, {Exit: 255}, {Signal: 9}} {
		got, ok := parseStatus("noise\r\n" + st.String())
		if !ok || got != st {
			t.Errorf("parseStatus(%q) = %+v, %v", st.String(), got, ok)
		}
	}
	if got := (Status{Signal: 9}).String(); got != "vmrun-status signal 9\n" {
		t.Errorf("status line = %q", got)
	}
	for _, bad := range []string{"", "vmrun-status exit\n", "vmrun-status exit x\n", "vmrun-status stopped 3\n", "exit 0\n"} {
		if st, ok := parseStatus(bad); ok {
			t.Errorf("parseStatus(%q) = %+v, want no status", bad, st)
		}
	}
}

func TestGuestEnv(t *testing.T) {
	host := []string{"PATH=/usr/bin", "HOME=/root", "GOFLAGS=-count=1", "GOTRACEBACK=all",
		"KINST_BINARY=/x/kinst", "TERM=xterm", "CI=true", "SSH_AUTH_SOCK=/tmp/a", "GOPATH=/root/go", "LANG=C"}
	got := GuestEnv(host)
	want := []string{"GOFLAGS=-count=1", "GOTRACEBACK=all", "KINST_BINARY=/x/kinst", "TERM=xterm", "CI=true", "GOPATH=/root/go"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("GuestEnv = %v, want %v", got, want)
	}
}

func TestCheckStatic(t *testing.T) {
	text := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkStatic(text); err != nil {
		t.Errorf("script: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkStatic(exe); err != nil {
		t.Errorf("test binary (built without cgo): %v", err)
	}
	if err := checkStatic("/nonexistent"); err == nil || !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
	// TestRunRefusesDynamicBinary checks a dynamic binary on the host; in a
	// guest /bin/true is busybox.
}

func TestParseAccel(t *testing.T) {
	for in, want := range map[string]Accel{"": TCG, "tcg": TCG, "kvm": KVM, "auto": Auto} {
		if got, err := ParseAccel(in); err != nil || got != want {
			t.Errorf("ParseAccel(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseAccel("hvf"); err == nil || err.Error() != `accelerator "hvf": want tcg, kvm or auto` {
		t.Errorf("ParseAccel(hvf) error = %v", err)
	}
}

func TestGuestErrorMessage(t *testing.T) {
	e := &GuestError{Err: ErrPanic, Detail: "sysrq", Log: []string{"a", "Kernel panic - not syncing: sysrq triggered crash"}}
	want := "guest kernel panicked: sysrq; kernel console:\n  | a\n  | Kernel panic - not syncing: sysrq triggered crash"
	if e.Error() != want {
		t.Errorf("message:\n%s\nwant:\n%s", e.Error(), want)
	}
	if got := (&GuestError{Err: ErrTimeout}).Error(); got != "guest timed out; the kernel printed nothing" {
		t.Errorf("empty log message = %q", got)
	}
}

func TestQEMUArgs(t *testing.T) {
	k := Kernel{Release: "6.1.0-56-cloud-amd64", Image: "/c/vmlinuz"}
	got := strings.Join(qemuArgs(k, TCG, "/t/initrd", "/t/kernel.log", "/t/status"), " ")
	want := "-nodefaults -no-user-config -display none -no-reboot -accel tcg,thread=single -cpu max -m 1G -smp 2 " +
		"-kernel /c/vmlinuz -initrd /t/initrd -append console=ttyS1 panic=-1 no_timer_check kinst.vm=1 " +
		"-chardev stdio,id=out,signal=off -serial chardev:out -serial file:/t/kernel.log -serial file:/t/status"
	if got != want {
		t.Errorf("qemu arguments:\n%s\nwant:\n%s", got, want)
	}
	if got := qemuArgs(k, KVM, "i", "c", "s"); got[6] != "kvm" {
		t.Errorf("KVM accelerator argument %q", got[6])
	}
}
