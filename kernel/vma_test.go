package kernel

import (
	"testing"

	"github.com/cilium/ebpf/btf"
)

// TestMemberOffset: a member is found beside others and inside the
// anonymous structs and unions C lets a struct hold, as Linux 6.18's
// vm_area_struct keeps vm_start.
func TestMemberOffset(t *testing.T) {
	ulong := &btf.Int{Name: "unsigned long", Size: 8}
	inner := &btf.Struct{Size: 16, Members: []btf.Member{
		{Name: "vm_start", Type: ulong, Offset: 0},
		{Name: "vm_end", Type: ulong, Offset: 64},
	}}
	union := &btf.Union{Size: 16, Members: []btf.Member{
		{Type: inner},
		{Name: "vm_freeptr", Type: ulong},
	}}
	members := []btf.Member{
		{Name: "vm_mm", Type: ulong, Offset: 0},
		{Type: union, Offset: 64},
		{Name: "vm_file", Type: ulong, Offset: 192},
	}
	for _, tt := range []struct {
		name string
		off  uint32
		ok   bool
	}{
		{"vm_mm", 0, true},
		{"vm_start", 8, true},
		{"vm_end", 16, true},
		{"vm_freeptr", 8, true},
		{"vm_file", 24, true},
		{"vm_pgoff", 0, false},
	} {
		if off, ok := memberOffset(members, tt.name); off != tt.off || ok != tt.ok {
			t.Errorf("memberOffset(%s) = %d, %v; want %d, %v", tt.name, off, ok, tt.off, tt.ok)
		}
	}
}
