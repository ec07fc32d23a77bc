package instruments

import (
	"flag"
	"io"
	"slices"
	"testing"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args []string
		pos  []string
		v    bool
	}{
		{[]string{"a", "-v", "b"}, []string{"a", "b"}, true},
		{[]string{"-v", "a"}, []string{"a"}, true},
		{[]string{"a", "--", "-v", "-3"}, []string{"a", "-v", "-3"}, false},
		{[]string{"--", "f", "5", "-3"}, []string{"f", "5", "-3"}, false},
		{nil, nil, false},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		v := fs.Bool("v", false, "")
		pos, err := parseFlags(fs, tt.args)
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if !slices.Equal(pos, tt.pos) || *v != tt.v {
			t.Errorf("%q: got %q v=%v, want %q v=%v", tt.args, pos, *v, tt.pos, tt.v)
		}
	}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		spec, entry, exit string
	}{
		{"vfs_read", "kprobe:vfs_read", "kretprobe:vfs_read"},
		{"kprobe:vfs_*", "kprobe:vfs_*", "kretprobe:vfs_*"},
		{"kprobe:vfs_read+5", "kprobe:vfs_read+5", ""},
		{"fentry:vfs_read", "fentry:vfs_read", "fexit:vfs_read"},
		{"uprobe:/bin/sh:main", "uprobe:/bin/sh:main", "uretprobe:/bin/sh:main"},
		{"syscall:openat", "tracepoint:syscalls:sys_enter_openat", "tracepoint:syscalls:sys_exit_openat"},
		{"tracepoint:syscalls:sys_enter_read", "tracepoint:syscalls:sys_enter_read", "tracepoint:syscalls:sys_exit_read"},
		{"tracepoint:sched:sched_switch", "tracepoint:sched:sched_switch", ""},
	}
	for _, tt := range tests {
		got, err := parseTarget(tt.spec)
		if err != nil || got.Entry != tt.entry || got.Exit != tt.exit {
			t.Errorf("%s: got %+v, %v", tt.spec, got, err)
		}
	}
	if _, err := parseTarget("bogus:x"); err == nil {
		t.Error("bogus:x accepted")
	}
}
