package cconst

import (
	"sort"
	"testing"
)

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int64
		ok   bool
	}{
		{"AF_INET", 2, true},
		{"AF_INET6", 10, true},
		{"AF_UNIX", 1, true},
		{"SOCK_STREAM", 1, true}, // an enumerator in glibc
		{"SOCK_NONBLOCK", 0o4000, true},
		{"IPPROTO_TCP", 6, true},
		{"IPPROTO_UDP", 17, true},
		{"O_RDONLY", 0, true},
		{"O_CREAT", 0o100, true},
		{"O_CLOEXEC", 0o2000000, true},
		{"SIGKILL", 9, true},
		{"SIGTERM", 15, true},
		{"EPERM", 1, true},
		{"ENOENT", 2, true},
		{"EAGAIN", 11, true},
		{"RLIMIT_NOFILE", 7, true},
		{"CLONE_VM", 0x100, true},
		{"PROT_EXEC", 4, true},
		{"MAP_SHARED", 1, true},
		{"TASK_RUNNING", 0, true},
		{"TASK_INTERRUPTIBLE", 1, true},
		{"TASK_KILLABLE", 0x102, true},
		{"TASK_IDLE", 0x402, true},
		{"SIG_DFL", 0, false},  // a pointer cast, not an integer
		{"SIGRTMIN", 0, false}, // a function call in glibc
		{"AF_INETX", 0, false},
	} {
		got, ok := Lookup(tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Lookup(%s) = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// The binary search needs the generated names sorted and one value for
// each.
func TestTableSorted(t *testing.T) {
	if !sort.StringsAreSorted(tableNames[:]) || len(tableNames) != len(tableValues) {
		t.Fatal("table.go is not sorted or names and values differ in number: run go generate")
	}
}
