package kernel

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	text := `#
# Automatically generated file; DO NOT EDIT.
#
CONFIG_BPF=y
CONFIG_BPF_SYSCALL=y
# CONFIG_KPROBES is not set
CONFIG_UPROBES=y
CONFIG_BTRFS_FS=m
CONFIG_LSM="landlock,lockdown,yama,bpf"
CONFIG_NR_CPUS=8192
# some comment = with an equals sign
`
	c, err := ParseConfig("test", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		opt               string
		value             string
		known             bool
		enabled, disabled bool
	}{
		{"CONFIG_BPF", "y", true, true, false},
		{"CONFIG_KPROBES", "n", true, false, true},
		{"CONFIG_BTRFS_FS", "m", true, true, false},
		{"CONFIG_LSM", `"landlock,lockdown,yama,bpf"`, true, false, false},
		{"CONFIG_NR_CPUS", "8192", true, false, false},
		{"CONFIG_FPROBE", "", false, false, true},
	}
	for _, tt := range tests {
		v, ok := c.Value(tt.opt)
		if v != tt.value || ok != tt.known || c.Enabled(tt.opt) != tt.enabled || c.Disabled(tt.opt) != tt.disabled {
			t.Errorf("%s: Value = %q, %v; Enabled %v; Disabled %v; want %q, %v; %v; %v",
				tt.opt, v, ok, c.Enabled(tt.opt), c.Disabled(tt.opt), tt.value, tt.known, tt.enabled, tt.disabled)
		}
	}
	if c.Source != "test" {
		t.Errorf("Source = %q", c.Source)
	}
}

func TestLoadConfig(t *testing.T) {
	c, err := LoadConfig()
	if errors.Is(err, ErrNoConfig) {
		t.Skipf("this kernel's configuration is not readable: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, statErr := os.Stat("/proc/config.gz"); statErr == nil && c.Source != "/proc/config.gz" {
		t.Errorf("Source = %q although /proc/config.gz exists", c.Source)
	}
	// Every kernel kinst can trace has the bpf() system call.
	if v, _ := c.Value("CONFIG_BPF_SYSCALL"); v != "y" {
		t.Errorf("CONFIG_BPF_SYSCALL = %q, want y", v)
	}
}
